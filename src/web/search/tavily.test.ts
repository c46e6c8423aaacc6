import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type FakeWebServer, sendJson, startFakeWebServer } from "../testing/fake-web-server.ts";
import { createTavilySearch } from "./tavily.ts";

const KEY = "tvly-dev-test-key-0123456789";

describe("Tavily adapter", () => {
  let server: FakeWebServer;
  let status = 200;
  before(async () => {
    server = await startFakeWebServer((request, response) => {
      if (request.url !== "/search" || request.method !== "POST")
        return sendJson(response, 404, {});
      if (status === 401) {
        return sendJson(response, 401, {
          detail: { error: "Unauthorized: missing or invalid API key." },
        });
      }
      if (status === 432) {
        return sendJson(response, 432, {
          detail: {
            error:
              "This request exceeds your plan's set usage limit. Please upgrade your plan or contact support@tavily.com",
          },
        });
      }
      // Tavily's documented search response.
      sendJson(response, 200, {
        query: "node streams",
        follow_up_questions: null,
        answer: null,
        images: [],
        results: [
          {
            title: "Stream | Node.js Documentation",
            url: "https://nodejs.org/api/stream.html",
            content: "A stream is an abstract interface\nfor working with streaming data.",
            score: 0.91,
            raw_content: null,
          },
          {
            title: "Streams news",
            url: "https://news.example.org/streams",
            content: "Streams got faster.",
            score: 0.5,
            raw_content: null,
            published_date: "Mon, 10 Nov 2025 08:00:00 GMT",
          },
        ],
        response_time: 1.07,
        request_id: "123e4567-e89b-12d3-a456-426614174111",
      });
    });
  });
  after(() => server.close());
  const search = () => createTavilySearch({ apiKey: KEY, baseUrl: server.url, timeoutMs: 5_000 });

  test("POSTs /search with a bearer key and the documented JSON body; maps results", async () => {
    status = 200;
    const outcome = await search().search("node streams", { count: 7 });
    const request = server.requests.at(-1);
    assert.equal(request?.headers.authorization, `Bearer ${KEY}`);
    assert.equal(request?.headers["content-type"], "application/json");
    assert.deepEqual(JSON.parse(request?.body ?? ""), {
      query: "node streams",
      max_results: 7,
      search_depth: "basic",
      include_answer: false,
      include_raw_content: false,
      include_images: false,
    });
    assert.deepEqual(outcome, {
      type: "results",
      provider: "tavily",
      hits: [
        {
          title: "Stream | Node.js Documentation",
          url: "https://nodejs.org/api/stream.html",
          snippet: "A stream is an abstract interface for working with streaming data.",
        },
        {
          title: "Streams news",
          url: "https://news.example.org/streams",
          snippet: "Streams got faster.",
          date: "Mon, 10 Nov 2025 08:00:00 GMT",
        },
      ],
    });
  });

  test("401 is a key refusal with Tavily's detail.error", async () => {
    status = 401;
    const outcome = await search().search("q", { count: 5 });
    assert.deepEqual(outcome, {
      type: "error",
      message:
        "Tavily refused the API key (HTTP 401 Unauthorized): Unauthorized: missing or invalid API key.",
    });
  });

  test("432 (plan limit) is a quota message", async () => {
    status = 432;
    const outcome = await search().search("q", { count: 5 });
    assert.equal(outcome.type, "error");
    assert.match(
      outcome.type === "error" ? outcome.message : "",
      /^Tavily quota or rate limit reached \(HTTP 432\): This request exceeds your plan's set usage limit/,
    );
  });
});
