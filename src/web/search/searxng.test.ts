import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type FakeWebServer, sendJson, startFakeWebServer } from "../testing/fake-web-server.ts";
import { createSearxngSearch } from "./searxng.ts";

describe("SearXNG adapter", () => {
  let server: FakeWebServer;
  let jsonEnabled = true;
  before(async () => {
    server = await startFakeWebServer((request, response) => {
      const url = new URL(request.url, "http://x");
      if (url.pathname !== "/searx/search") return sendJson(response, 404, {});
      if (!jsonEnabled) {
        response.writeHead(403, { "content-type": "text/html" });
        return response.end("<html><body>403 Forbidden</body></html>");
      }
      // SearXNG's JSON output format.
      sendJson(response, 200, {
        query: url.searchParams.get("q"),
        number_of_results: 0,
        results: [
          {
            url: "https://nodejs.org/api/stream.html",
            title: "Stream | Node.js",
            content: "A stream is an abstract interface.",
            engine: "duckduckgo",
            parsed_url: ["https", "nodejs.org", "/api/stream.html", "", "", ""],
            template: "default.html",
            engines: ["duckduckgo", "brave"],
            positions: [1, 2],
            publishedDate: null,
            score: 3,
            category: "general",
          },
          {
            url: "https://example.org/a",
            title: "A",
            content: "",
            engine: "brave",
            publishedDate: "2025-03-01T00:00:00",
            score: 1,
          },
          { url: "https://example.org/b", title: "B", content: "b", engine: "brave", score: 0.5 },
        ],
        answers: [],
        corrections: [],
        infoboxes: [],
        suggestions: ["node streams tutorial"],
        unresponsive_engines: [],
      });
    });
  });
  after(() => server.close());
  const search = () => createSearxngSearch({ url: `${server.url}/searx`, timeoutMs: 5_000 });

  test("GETs <instance>/search?q=…&format=json and keeps the first `count` results", async () => {
    jsonEnabled = true;
    const outcome = await search().search("node streams", { count: 2 });
    const request = server.requests.at(-1);
    assert.equal(request?.method, "GET");
    const url = new URL(request?.url ?? "", server.url);
    assert.equal(url.searchParams.get("q"), "node streams");
    assert.equal(url.searchParams.get("format"), "json");
    assert.deepEqual(outcome, {
      type: "results",
      provider: "searxng",
      hits: [
        {
          title: "Stream | Node.js",
          url: "https://nodejs.org/api/stream.html",
          snippet: "A stream is an abstract interface.",
        },
        { title: "A", url: "https://example.org/a", snippet: "", date: "2025-03-01T00:00:00" },
      ],
    });
  });

  test("403 says how to enable the JSON format", async () => {
    jsonEnabled = false;
    const outcome = await search().search("q", { count: 2 });
    assert.equal(outcome.type, "error");
    assert.match(
      outcome.type === "error" ? outcome.message : "",
      /^SearXNG refused format=json \(HTTP 403 Forbidden\): the instance must list json in search\.formats/,
    );
  });

  test("credentials in the instance URL never reach a message", async () => {
    const search = createSearxngSearch({
      url: `http://admin:hunter%32@127.0.0.1:${server.port}/searx`,
      timeoutMs: 5_000,
    });
    const outcome = await search.search("q", { count: 3 });
    assert.equal(outcome.type, "error");
    const message = outcome.type === "error" ? outcome.message : "";
    assert.match(message, /SearXNG could not be reached/);
    assert.doesNotMatch(message, /admin|hunter/);
  });
});
