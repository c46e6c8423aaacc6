import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type FakeWebServer, sendJson, startFakeWebServer } from "../testing/fake-web-server.ts";
import { createExaSearch } from "./exa.ts";

const KEY = "exa-test-key-0123456789abcdef";

describe("Exa adapter", () => {
  let server: FakeWebServer;
  let status = 200;
  before(async () => {
    server = await startFakeWebServer((request, response) => {
      if (request.url !== "/search" || request.method !== "POST")
        return sendJson(response, 404, {});
      if (status !== 200) {
        return sendJson(response, status, {
          requestId: "b5947044c4b78efa9552a7c89b306d95",
          error: status === 401 ? "Invalid API key" : "You have exceeded your credits limit",
          tag: status === 401 ? "INVALID_API_KEY" : "NO_MORE_CREDITS",
        });
      }
      // Exa's documented /search response with text contents.
      sendJson(response, 200, {
        requestId: "a78ebce717f4d712b6f8fe0d5d7753f8",
        resolvedSearchType: "neural",
        searchType: "auto",
        results: [
          {
            id: "https://nodejs.org/api/stream.html",
            title: "Stream | Node.js Documentation",
            url: "https://nodejs.org/api/stream.html",
            publishedDate: "2025-01-10T00:00:00.000Z",
            author: null,
            text: "A stream is an abstract interface for working with streaming data in Node.js.",
          },
          {
            id: "https://example.org/streams",
            title: "Streams guide",
            url: "https://example.org/streams",
            author: "A. Writer",
            text: "full text",
            highlights: ["Streams are fast.", "Back-pressure matters."],
          },
        ],
        costDollars: { total: 0.005 },
      });
    });
  });
  after(() => server.close());
  const search = () => createExaSearch({ apiKey: KEY, baseUrl: server.url, timeoutMs: 5_000 });

  test("POSTs /search with x-api-key and the documented body; maps results", async () => {
    status = 200;
    const outcome = await search().search("node streams", { count: 3 });
    const request = server.requests.at(-1);
    assert.equal(request?.headers["x-api-key"], KEY);
    assert.deepEqual(JSON.parse(request?.body ?? ""), {
      query: "node streams",
      numResults: 3,
      type: "auto",
      contents: { text: { maxCharacters: 500 } },
    });
    assert.deepEqual(outcome, {
      type: "results",
      provider: "exa",
      hits: [
        {
          title: "Stream | Node.js Documentation",
          url: "https://nodejs.org/api/stream.html",
          snippet: "A stream is an abstract interface for working with streaming data in Node.js.",
          date: "2025-01-10T00:00:00.000Z",
        },
        {
          title: "Streams guide",
          url: "https://example.org/streams",
          snippet: "Streams are fast. … Back-pressure matters.",
        },
      ],
    });
  });

  test("401 and 402 carry Exa's error text", async () => {
    status = 401;
    assert.deepEqual(await search().search("q", { count: 3 }), {
      type: "error",
      message: "Exa refused the API key (HTTP 401 Unauthorized): Invalid API key",
    });
    status = 402;
    assert.deepEqual(await search().search("q", { count: 3 }), {
      type: "error",
      message:
        "Exa quota or rate limit reached (HTTP 402 Payment Required): You have exceeded your credits limit",
    });
  });
});
