import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type FakeWebServer, sendJson, startFakeWebServer } from "../testing/fake-web-server.ts";
import { createJinaSearch } from "./jina.ts";

const KEY = "jina_test_key_0123456789abcdef";

describe("Jina Search adapter", () => {
  let server: FakeWebServer;
  let status = 200;
  before(async () => {
    server = await startFakeWebServer((_request, response) => {
      if (status === 401) {
        return sendJson(response, 401, {
          data: null,
          code: 401,
          name: "AuthenticationRequiredError",
          status: 40103,
          message: "Invalid API key, please get a new one from https://jina.ai",
          readableMessage:
            "AuthenticationRequiredError: Invalid API key, please get a new one from https://jina.ai",
        });
      }
      if (status === 402) {
        return sendJson(response, 402, {
          data: null,
          code: 402,
          name: "InsufficientBalanceError",
          status: 40203,
          message: "Account balance not enough to run this query, please recharge.",
          readableMessage:
            "InsufficientBalanceError: Account balance not enough to run this query, please recharge.",
        });
      }
      // s.jina.ai's JSON answer with X-Respond-With: no-content.
      sendJson(response, 200, {
        code: 200,
        status: 20000,
        data: [
          {
            title: "Stream | Node.js",
            url: "https://nodejs.org/api/stream.html",
            description: "A stream is an abstract interface.",
            date: "Jan 10, 2025",
            usage: { tokens: 1000 },
          },
          {
            title: "Other",
            url: "https://example.org/o",
            description: "Other page.",
            usage: { tokens: 1000 },
          },
        ],
        meta: { usage: { tokens: 10000 } },
      });
    });
  });
  after(() => server.close());
  const search = () => createJinaSearch({ apiKey: KEY, baseUrl: server.url, timeoutMs: 5_000 });

  test("GETs /?q=… with a bearer key, JSON accept and no-content; maps data[]", async () => {
    status = 200;
    const outcome = await search().search("node streams", { count: 5 });
    const request = server.requests.at(-1);
    const url = new URL(request?.url ?? "", server.url);
    assert.equal(url.pathname, "/");
    assert.equal(url.searchParams.get("q"), "node streams");
    assert.equal(request?.headers.authorization, `Bearer ${KEY}`);
    assert.equal(request?.headers.accept, "application/json");
    assert.equal(request?.headers["x-respond-with"], "no-content");
    assert.deepEqual(outcome, {
      type: "results",
      provider: "jina",
      hits: [
        {
          title: "Stream | Node.js",
          url: "https://nodejs.org/api/stream.html",
          snippet: "A stream is an abstract interface.",
          date: "Jan 10, 2025",
        },
        { title: "Other", url: "https://example.org/o", snippet: "Other page." },
      ],
    });
  });

  test("401 and 402 carry Jina's readable message", async () => {
    status = 401;
    const refused = await search().search("q", { count: 5 });
    assert.match(
      refused.type === "error" ? refused.message : "",
      /^Jina Search refused the API key \(HTTP 401 Unauthorized\): AuthenticationRequiredError/,
    );
    status = 402;
    const broke = await search().search("q", { count: 5 });
    assert.match(
      broke.type === "error" ? broke.message : "",
      /^Jina Search quota or rate limit reached \(HTTP 402 Payment Required\): InsufficientBalanceError/,
    );
  });
});
