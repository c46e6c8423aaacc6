import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type FakeWebServer, sendJson, startFakeWebServer } from "../testing/fake-web-server.ts";
import { createBraveSearch } from "./brave.ts";

const KEY = "BSA-test-key-0123456789";

/** A web search answer in Brave's documented shape (WebSearchApiResponse), trimmed. */
const ANSWER = {
  type: "search",
  query: { original: "node streams", more_results_available: true },
  mixed: { type: "mixed", main: [{ type: "web", index: 0, all: false }] },
  web: {
    type: "search",
    family_friendly: true,
    results: [
      {
        type: "search_result",
        title: "Stream | Node.js v24 Documentation",
        url: "https://nodejs.org/api/stream.html",
        is_source_local: false,
        description:
          "A <strong>stream</strong> is an abstract interface for working with streaming data.",
        page_age: "2025-01-10T00:00:00",
        age: "January 10, 2025",
        language: "en",
        family_friendly: true,
        meta_url: {
          scheme: "https",
          netloc: "nodejs.org",
          hostname: "nodejs.org",
          path: "› api › stream.html",
        },
      },
      {
        type: "search_result",
        title: "Node.js Streams &amp; You",
        url: "https://example.org/streams",
        description: "An undated page.",
      },
    ],
  },
};

describe("Brave Search adapter", () => {
  let server: FakeWebServer;
  let mode: "ok" | "rate" | "token" = "ok";
  before(async () => {
    server = await startFakeWebServer((request, response) => {
      if (!request.url.startsWith("/res/v1/web/search")) return sendJson(response, 404, {});
      if (mode === "rate") {
        return sendJson(response, 429, {
          type: "ErrorResponse",
          error: {
            id: "c1",
            status: 429,
            code: "RATE_LIMITED",
            detail: "Request rate limit exceeded for plan.",
            meta: {
              plan: "Free",
              rate_limit: 1,
              rate_current: 2,
              quota_limit: 2000,
              quota_current: 12,
            },
          },
          time: 1764000000,
        });
      }
      if (mode === "token") {
        return sendJson(response, 422, {
          type: "ErrorResponse",
          error: {
            id: "c2",
            status: 422,
            code: "SUBSCRIPTION_TOKEN_INVALID",
            detail: "The provided subscription token is invalid.",
          },
          time: 1764000000,
        });
      }
      sendJson(response, 200, ANSWER);
    });
  });
  after(() => server.close());

  const search = () => createBraveSearch({ apiKey: KEY, baseUrl: server.url, timeoutMs: 5_000 });

  test("sends GET /res/v1/web/search with q, count and the key header; maps web.results", async () => {
    mode = "ok";
    const outcome = await search().search("node streams", { count: 5 });
    const request = server.requests.at(-1);
    assert.ok(request !== undefined);
    assert.equal(request.method, "GET");
    const url = new URL(request.url, server.url);
    assert.equal(url.pathname, "/res/v1/web/search");
    assert.equal(url.searchParams.get("q"), "node streams");
    assert.equal(url.searchParams.get("count"), "5");
    assert.equal(request.headers["x-subscription-token"], KEY);
    assert.equal(request.headers.accept, "application/json");
    assert.deepEqual(outcome, {
      type: "results",
      provider: "brave",
      hits: [
        {
          title: "Stream | Node.js v24 Documentation",
          url: "https://nodejs.org/api/stream.html",
          snippet: "A stream is an abstract interface for working with streaming data.",
          date: "2025-01-10T00:00:00",
        },
        {
          title: "Node.js Streams & You",
          url: "https://example.org/streams",
          snippet: "An undated page.",
        },
      ],
    });
  });

  test("count is capped at Brave's maximum of 20 and results at count", async () => {
    mode = "ok";
    const outcome = await search().search("q", { count: 50 });
    assert.equal(
      new URL(server.requests.at(-1)?.url ?? "", server.url).searchParams.get("count"),
      "20",
    );
    const one = await search().search("q", { count: 1 });
    assert.equal(one.type === "results" ? one.hits.length : -1, 1);
    assert.equal(outcome.type, "results");
  });

  test("429 RATE_LIMITED is a quota message with Brave's detail", async () => {
    mode = "rate";
    const outcome = await search().search("q", { count: 5 });
    assert.deepEqual(outcome, {
      type: "error",
      message:
        "Brave Search quota or rate limit reached (HTTP 429 Too Many Requests): Request rate limit exceeded for plan.",
    });
  });

  test("an invalid token is reported with Brave's detail and without the key", async () => {
    mode = "token";
    const outcome = await search().search("q", { count: 5 });
    assert.equal(outcome.type, "error");
    assert.match(
      outcome.type === "error" ? outcome.message : "",
      /HTTP 422.*subscription token is invalid/,
    );
    assert.ok(!JSON.stringify(outcome).includes(KEY));
  });
});
