/**
 * web_search and web_fetch end to end: the real server with a fake model provider, a fake Brave
 * Search API and a fake web site on 127.0.0.1 (reached through a test resolver and allow-list),
 * driven by the protocol-faithful Cursor client, which answers the approval queries.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Code } from "@connectrpc/connect";
import {
  createWebFetch,
  createWebSearch,
  DEFAULT_FETCH_OPTIONS,
  type Resolve,
} from "../../web/index.ts";
import {
  type FakeWebServer,
  sendJson,
  startFakeWebServer,
} from "../../web/testing/fake-web-server.ts";
import type { InteractionQuery } from "../cursor/gen/agent/v1/interaction_query_pb.js";
import type { TurnResult } from "../testing/index.ts";
import type { WebTools } from "../web-work.ts";
import { createGate, type Harness, MODEL, startHarness } from "./test-harness.ts";

const BRAVE_KEY = "BSA-e2e-key-not-real-0123456789";

const resolveTestNames: Resolve = async (host) => {
  if (host.endsWith(".test")) return [{ address: "127.0.0.1", family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
};

const PAGE = `<!doctype html><html><head><title>Release notes</title></head><body>
<nav><a href="/">Home</a> <a href="/pricing">Pricing</a></nav>
<article><h1>Release notes 4.2</h1>
<p>Version 4.2 adds streaming uploads and drops support for the old config format. ${"It also fixes many small bugs in the scheduler. ".repeat(8)}</p>
</article><footer>© Example Corp</footer></body></html>`;

/** The tool result texts the model received in its last request, by tool-call id. */
function toolResults(harness: Harness): Map<string, string> {
  const last = harness.provider.requests.at(-1);
  const messages = JSON.parse(last?.body ?? "{}").messages as {
    role: string;
    tool_call_id?: string;
    content: unknown;
  }[];
  const results = new Map<string, string>();
  for (const message of messages) {
    if (message.role !== "tool" || message.tool_call_id === undefined) continue;
    const content = message.content;
    const text =
      typeof content === "string"
        ? content
        : (content as { text: string }[]).map((part) => part.text).join("");
    results.set(message.tool_call_id, text);
  }
  return results;
}

const slowArrived = createGate();
const slowClosed = createGate();

describe("web tools end to end", () => {
  let brave: FakeWebServer;
  let site: FakeWebServer;
  let harness: Harness;

  before(async () => {
    brave = await startFakeWebServer((request, response) => {
      const url = new URL(request.url, "http://brave.local");
      if (request.headers["x-subscription-token"] !== BRAVE_KEY) {
        return sendJson(response, 422, {
          type: "ErrorResponse",
          error: {
            status: 422,
            code: "SUBSCRIPTION_TOKEN_INVALID",
            detail: "The provided subscription token is invalid.",
          },
        });
      }
      return sendJson(response, 200, {
        type: "search",
        query: { original: url.searchParams.get("q") },
        web: {
          type: "search",
          results: [
            {
              title: "Release notes 4.2",
              url: `http://docs.test:${site.port}/notes`,
              description: "Version <strong>4.2</strong> adds streaming uploads.",
              page_age: "2025-11-01T00:00:00",
            },
          ],
        },
      });
    });
    site = await startFakeWebServer((request, response) => {
      if (request.url === "/slow") {
        // Never answers; the test waits for the server to give up on it.
        slowArrived.open();
        response.on("close", () => slowClosed.open());
        return undefined;
      }
      if (request.url === "/notes") {
        response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        return response.end(PAGE);
      }
      response.writeHead(404);
      return response.end();
    });
    const web: WebTools = {
      search: createWebSearch({
        type: "brave",
        apiKey: BRAVE_KEY,
        baseUrl: brave.url,
        timeoutMs: 5_000,
      }),
      fetch: createWebFetch({
        ...DEFAULT_FETCH_OPTIONS,
        allowHosts: ["docs.test"],
        resolve: resolveTestNames,
      }),
      askApproval: true,
    };
    harness = await startHarness({ web });
  });
  after(async () => {
    await harness.close();
    await brave.close();
    await site.close();
  });

  const script = () =>
    harness.reply(
      {
        toolCalls: [
          { id: "call_search", name: "web_search", arguments: { query: "release notes 4.2" } },
        ],
      },
      {
        toolCalls: [
          {
            id: "call_fetch",
            name: "web_fetch",
            arguments: { url: `http://docs.test:${site.port}/notes` },
          },
        ],
      },
      { text: "4.2 adds streaming uploads." },
    );

  describe("approved", () => {
    let result: TurnResult;
    const queries: InteractionQuery[] = [];
    before(async () => {
      script();
      result = await harness
        .client({ answerQuery: (query) => void queries.push(query) })
        .startTurn({
          conversationId: "6a1f0000-0000-4000-8000-000000000001",
          text: "What is new in 4.2?",
          modelId: MODEL,
        }).done;
    });

    test("the turn ends normally with the model's answer", () => {
      assert.equal(result.error, undefined);
      assert.equal(result.view.text, "4.2 adds streaming uploads.");
    });

    test("the client was asked before each search and fetch", () => {
      assert.deepEqual(
        queries.map((query) => query.query.case),
        ["webSearchRequestQuery", "webFetchRequestQuery"],
      );
      const search = queries[0]?.query;
      assert.ok(search?.case === "webSearchRequestQuery");
      assert.equal(search.value.args?.searchTerm, "release notes 4.2");
      assert.equal(search.value.args?.toolCallId, "call_search");
    });

    test("the UI shows web_search_tool_call and web_fetch_tool_call with their results", () => {
      assert.deepEqual(
        result.view.toolCallsCompleted.map((call) => call.variant),
        ["webSearchToolCall", "webFetchToolCall"],
      );
      const [searchCall, fetchCall] = result.view.toolCallsCompleted.map(
        (call) => call.toolCall?.tool,
      );
      assert.ok(
        searchCall?.case === "webSearchToolCall" &&
          searchCall.value.result?.result.case === "success",
      );
      assert.deepEqual(
        searchCall.value.result.result.value.references.map((ref) => ref.url),
        [`http://docs.test:${site.port}/notes`],
      );
      assert.ok(
        fetchCall?.case === "webFetchToolCall" && fetchCall.value.result?.result.case === "success",
      );
      assert.match(
        fetchCall.value.result.result.value.markdown,
        /^Version 4\.2 adds streaming uploads/,
      );
      assert.equal(result.view.execs.length, 0, "nothing was sent to the client to run");
    });

    test("the model got the results as ordinary tool results, in order", () => {
      const results = toolResults(harness);
      assert.equal(
        results.get("call_search"),
        `Web search results for "release notes 4.2" (brave, 1 result):\n\n1. Release notes 4.2\n   http://docs.test:${site.port}/notes\n   Date: 2025-11-01T00:00:00\n   Version 4.2 adds streaming uploads.`,
      );
      assert.match(
        results.get("call_fetch") ?? "",
        /^Content of http:\/\/docs\.test:\d+\/notes, text\/html, title "Release notes":\n\nVersion 4\.2 adds streaming uploads/,
      );
      assert.ok(!(results.get("call_fetch") ?? "").includes("Pricing"), "navigation left out");
      const bodies = harness.provider.requests
        .slice(-3)
        .map((request) =>
          (JSON.parse(request.body).messages as unknown[]).map((m) => JSON.stringify(m)),
        );
      assert.deepEqual(
        bodies.map((messages) => messages.length),
        [2, 4, 6],
      );
      // Cache-safe history: each request's messages are the previous ones, byte for byte, plus more.
      assert.deepEqual(bodies[1]?.slice(0, 2), bodies[0]);
      assert.deepEqual(bodies[2]?.slice(0, 4), bodies[1]);
      const tools = JSON.parse(harness.provider.requests.at(-1)?.body ?? "{}").tools as {
        function: { name: string };
      }[];
      assert.deepEqual(
        tools.map((tool) => tool.function.name).filter((name) => name.startsWith("web_")),
        ["web_search", "web_fetch"],
      );
    });

    test("the search key reached only the search API, never the model, logs or store", async () => {
      assert.equal(brave.requests.at(-1)?.headers["x-subscription-token"], BRAVE_KEY);
      for (const request of harness.provider.requests) assert.ok(!request.body.includes(BRAVE_KEY));
      for (const line of harness.logs) assert.ok(!JSON.stringify(line).includes(BRAVE_KEY));
      const stored = await harness.store.load("6a1f0000-0000-4000-8000-000000000001");
      assert.ok(!JSON.stringify(stored).includes(BRAVE_KEY));
    });
  });

  describe("refused", () => {
    let result: TurnResult;
    let pageHits = 0;
    before(async () => {
      script();
      pageHits = site.requests.length;
      result = await harness
        .client({
          answerQuery: (query) =>
            query.query.case === "webFetchRequestQuery"
              ? {
                  case: "webFetchRequestResponse",
                  value: { result: { case: "rejected", value: { reason: "internal docs only" } } },
                }
              : undefined,
        })
        .startTurn({
          conversationId: "6a1f0000-0000-4000-8000-000000000002",
          text: "What is new in 4.2?",
          modelId: MODEL,
        }).done;
    });

    test("the refusal is the fetch's tool result; the page is never requested; the turn goes on", () => {
      assert.equal(result.error, undefined);
      assert.equal(
        toolResults(harness).get("call_fetch"),
        `The user declined fetching http://docs.test:${site.port}/notes: internal docs only`,
      );
      assert.equal(site.requests.length, pageHits);
      const fetchCall = result.view.toolCallsCompleted.at(-1)?.toolCall?.tool;
      assert.ok(
        fetchCall?.case === "webFetchToolCall" &&
          fetchCall.value.result?.result.case === "rejected",
      );
      assert.equal(result.view.text, "4.2 adds streaming uploads.");
    });
  });

  describe("provider and fetch failures", () => {
    test("a search provider that is down and a refused address become tool results; the turn ends normally", async () => {
      const down = await startFakeWebServer(() => {});
      const url = down.url;
      await down.close();
      const failing = await startHarness({
        web: {
          search: createWebSearch({
            type: "tavily",
            apiKey: "tvly-x",
            baseUrl: url,
            timeoutMs: 5_000,
          }),
          fetch: createWebFetch({ ...DEFAULT_FETCH_OPTIONS, resolve: resolveTestNames }),
          askApproval: false,
        },
      });
      try {
        failing.reply(
          {
            toolCalls: [
              { id: "call_search", name: "web_search", arguments: { query: "anything" } },
            ],
          },
          {
            toolCalls: [
              {
                id: "call_fetch",
                name: "web_fetch",
                arguments: { url: `http://docs.test:${site.port}/notes` },
              },
            ],
          },
          { text: "I could not look it up." },
        );
        const done = await failing
          .client({
            answerQuery: () => assert.fail("no approval is asked when askApproval is off"),
          })
          .startTurn({
            conversationId: "6a1f0000-0000-4000-8000-000000000003",
            text: "Look it up.",
            modelId: MODEL,
          }).done;
        assert.equal(done.error, undefined);
        assert.equal(done.view.text, "I could not look it up.");
        const results = toolResults(failing);
        assert.equal(
          results.get("call_search"),
          "The web search failed: Tavily could not be reached (ECONNREFUSED)",
        );
        assert.equal(
          results.get("call_fetch"),
          `Fetching http://docs.test:${site.port}/notes failed: refused: docs.test resolves to 127.0.0.1, a loopback address`,
        );
      } finally {
        await failing.close();
      }
    });
  });

  describe("cancel while a fetch runs", () => {
    test("the turn ends canceled and the fetch's connection is closed", async () => {
      const quick = await startHarness({
        web: {
          search: null,
          fetch: createWebFetch({
            ...DEFAULT_FETCH_OPTIONS,
            allowHosts: ["docs.test"],
            resolve: resolveTestNames,
          }),
          askApproval: false,
        },
      });
      try {
        quick.reply({
          toolCalls: [
            {
              id: "call_slow",
              name: "web_fetch",
              arguments: { url: `http://docs.test:${site.port}/slow` },
            },
          ],
        });
        const turn = quick.client().startTurn({
          conversationId: "6a1f0000-0000-4000-8000-000000000004",
          text: "Read the slow page.",
          modelId: MODEL,
        });
        await slowArrived.promise;
        await turn.cancel("too slow");
        const done = await turn.done;
        assert.equal(done.error?.code, Code.Canceled);
        await slowClosed.promise;
        const tools = JSON.parse(quick.provider.requests[0]?.body ?? "{}").tools as {
          function: { name: string };
        }[];
        assert.ok(
          !tools.some((tool) => tool.function.name === "web_search"),
          "no provider: web_search not offered",
        );
      } finally {
        await quick.close();
      }
    });
  });
});
