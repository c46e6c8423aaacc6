import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fromClientMessage } from "../client-message.ts";
import type { AgentServerMessage } from "../gen/agent/v1/agent_stream_pb.js";
import { fromRunRequest } from "../run-request.ts";
import {
  callClient,
  ideRunRequest,
  queryReply,
  REQUEST_ID,
  resultText,
  T0,
  turnState,
} from "../testing.ts";
import {
  continueToolCall,
  finishServerWork,
  startToolCall,
  type ToolStep,
} from "../tool-session.ts";
import { toToolDefinitions } from "./catalogue.ts";
import type { ServerWorkResult, WebOffer } from "./server-work.ts";

const ASK: WebOffer = { search: true, fetch: true, askApproval: true };
const NO_ASK: WebOffer = { ...ASK, askApproval: false };

function kinds(messages: readonly AgentServerMessage[]): string[] {
  return messages.map((message) =>
    message.message.case === "interactionUpdate"
      ? (message.message.value.message.case ?? "")
      : (message.message.case ?? ""),
  );
}

function start(name: string, args: Record<string, string | number>, web: WebOffer): ToolStep {
  const step = startToolCall(turnState({ web }), callClient(name, args), {
    at: T0 + 1,
    inputID: "in-0",
  });
  assert.equal(step.ignored, null);
  return step;
}

function answer(step: ToolStep, result: Parameters<typeof queryReply>[1]): ToolStep {
  const next = continueToolCall(step.state, fromClientMessage(queryReply(step.state, result)), {
    at: T0 + 2,
    inputID: "in-1",
  });
  assert.equal(next.ignored, null);
  return next;
}

function finish(step: ToolStep, result: ServerWorkResult): ToolStep {
  assert.ok(step.work !== null, "the step hands out server work");
  const next = finishServerWork(step.state, step.work.id, result, { at: T0 + 3, inputID: "in-2" });
  assert.equal(next.ignored, null);
  return next;
}

function completedTool(step: ToolStep) {
  const completed = step.messages.find(
    (message) =>
      message.message.case === "interactionUpdate" &&
      message.message.value.message.case === "toolCallCompleted",
  );
  assert.ok(completed?.message.case === "interactionUpdate");
  assert.ok(completed.message.value.message.case === "toolCallCompleted");
  return completed.message.value.message.value.toolCall?.tool;
}

describe("web tools in the catalogue", () => {
  test("offered only when the turn's web offer says so, after the other built-ins", () => {
    const names = (web: WebOffer) => toToolDefinitions("ask", [], web).map((tool) => tool.name);
    assert.deepEqual(names({ ...ASK, search: false, fetch: false }).includes("web_search"), false);
    assert.deepEqual(names(ASK).slice(-2), ["web_search", "web_fetch"]);
    assert.deepEqual(names({ ...ASK, search: false }).slice(-1), ["web_fetch"]);
    assert.deepEqual(
      toToolDefinitions("agent", []).filter((tool) => tool.name.startsWith("web_")),
      [],
    );
  });

  test("the client's request context can turn each web tool off", () => {
    const offered = (
      webSearchEnabled: boolean | undefined,
      webFetchEnabled: boolean | undefined,
    ) => {
      const request = ideRunRequest((run) => {
        const action = run.action?.action;
        assert.ok(
          action?.case === "userMessageAction" && action.value.requestContext !== undefined,
        );
        action.value.requestContext.webSearchEnabled = webSearchEnabled;
        action.value.requestContext.webFetchEnabled = webFetchEnabled;
      });
      const start = fromRunRequest(request, "user_message", {
        at: T0,
        inputID: `${REQUEST_ID}:0`,
        requestID: REQUEST_ID,
        contextWindow: 200_000,
        web: ASK,
      });
      assert.ok(start.ok);
      return start.value.input.settings.tools
        .map((tool) => tool.name)
        .filter((name) => name.startsWith("web_"));
    };
    assert.deepEqual(offered(undefined, undefined), ["web_search", "web_fetch"]);
    assert.deepEqual(offered(false, true), ["web_fetch"]);
    assert.deepEqual(offered(true, false), ["web_search"]);
  });

  test("a web tool the turn does not offer is an error result, not a search", () => {
    const step = startToolCall(turnState(), callClient("web_search", { query: "x" }), {
      at: T0 + 1,
      inputID: "in-0",
    });
    assert.equal(step.work, null);
    assert.equal(
      resultText(step.input?.message ?? assert.fail()),
      'There is no tool named "web_search" in this mode.',
    );
  });
});

describe("web_search", () => {
  test("asks for approval first; once approved, the server searches; results reach model and UI", () => {
    const started = start("web_search", { query: "node streams", count: 3 }, ASK);
    assert.deepEqual(kinds(started.messages), [
      "toolCallStarted",
      "conversationCheckpointUpdate",
      "interactionQuery",
    ]);
    const query = started.messages[2]?.message;
    assert.ok(
      query?.case === "interactionQuery" && query.value.query.case === "webSearchRequestQuery",
    );
    assert.equal(query.value.query.value.args?.searchTerm, "node streams");
    assert.equal(query.value.query.value.args?.toolCallId, "toolu_01");
    assert.equal(started.work, null);

    const approved = answer(started, {
      case: "webSearchRequestResponse",
      value: { result: { case: "approved", value: {} } },
    });
    assert.deepEqual(approved.messages, []);
    assert.deepEqual(approved.work?.work, { type: "web_search", query: "node streams", count: 3 });

    const done = finish(approved, {
      type: "web_search",
      outcome: {
        type: "results",
        provider: "brave",
        hits: [
          {
            title: "Stream | Node.js",
            url: "https://nodejs.org/api/stream.html",
            snippet: "A stream is…",
            date: "2025-01-10",
          },
          { title: "Guide", url: "https://example.org/g", snippet: "" },
        ],
      },
    });
    assert.deepEqual(kinds(done.messages), ["toolCallCompleted", "conversationCheckpointUpdate"]);
    const message = done.input?.message ?? assert.fail("a tool result");
    assert.equal(message.isError, false);
    assert.equal(
      resultText(message),
      'Web search results for "node streams" (brave, 2 results):\n\n1. Stream | Node.js\n   https://nodejs.org/api/stream.html\n   Date: 2025-01-10\n   A stream is…\n\n2. Guide\n   https://example.org/g',
    );
    const ui = completedTool(done);
    assert.ok(ui?.case === "webSearchToolCall");
    assert.equal(ui.value.args?.searchTerm, "node streams");
    assert.ok(ui.value.result?.result.case === "success");
    assert.deepEqual(
      ui.value.result.result.value.references.map((ref) => [ref.title, ref.url, ref.chunk]),
      [
        ["Stream | Node.js", "https://nodejs.org/api/stream.html", "A stream is…"],
        ["Guide", "https://example.org/g", ""],
      ],
    );
  });

  test("a refusal becomes the tool result; nothing is searched", () => {
    const started = start("web_search", { query: "q" }, ASK);
    const refused = answer(started, {
      case: "webSearchRequestResponse",
      value: { result: { case: "rejected", value: { reason: "not now" } } },
    });
    assert.equal(refused.work, null);
    assert.equal(
      resultText(refused.input?.message ?? assert.fail()),
      "The user declined this web search: not now",
    );
    assert.equal(refused.input?.message.isError, true);
    const ui = completedTool(refused);
    assert.ok(ui?.case === "webSearchToolCall" && ui.value.result?.result.case === "rejected");
  });

  test("without approval the search runs at once; a provider failure is a one-line error result", () => {
    const started = start("web_search", { query: "q" }, NO_ASK);
    assert.deepEqual(kinds(started.messages), ["toolCallStarted", "conversationCheckpointUpdate"]);
    assert.deepEqual(started.work?.work, { type: "web_search", query: "q", count: 8 });
    const failed = finish(started, {
      type: "web_search",
      outcome: { type: "error", message: "Brave Search quota or rate limit reached (HTTP 429)" },
    });
    assert.equal(
      resultText(failed.input?.message ?? assert.fail()),
      "The web search failed: Brave Search quota or rate limit reached (HTTP 429)",
    );
    assert.equal(failed.input?.message.isError, true);
    const ui = completedTool(failed);
    assert.ok(ui?.case === "webSearchToolCall" && ui.value.result?.result.case === "error");
  });

  test("a stale work result is ignored", () => {
    const started = start("web_search", { query: "q" }, NO_ASK);
    const stale = finishServerWork(
      started.state,
      (started.work?.id ?? 0) + 7,
      { type: "web_search", outcome: { type: "results", provider: "brave", hits: [] } },
      { at: T0 + 3, inputID: "x" },
    );
    assert.match(stale.ignored ?? "", /not a running one/);
  });

  test("an empty query is an argument error", () => {
    const step = startToolCall(turnState({ web: ASK }), callClient("web_search", { query: " " }), {
      at: T0 + 1,
      inputID: "in-0",
    });
    assert.equal(
      resultText(step.input?.message ?? assert.fail()),
      'Invalid arguments for web_search: "query" must not be empty',
    );
  });
});

describe("web_fetch", () => {
  test("approval query carries the URL; the fetched Markdown reaches model and UI", () => {
    const started = start("web_fetch", { url: "https://example.org/a" }, ASK);
    const query = started.messages[2]?.message;
    assert.ok(
      query?.case === "interactionQuery" && query.value.query.case === "webFetchRequestQuery",
    );
    assert.equal(query.value.query.value.args?.url, "https://example.org/a");
    assert.equal(query.value.query.value.skipApproval, false);
    const approved = answer(started, {
      case: "webFetchRequestResponse",
      value: { result: { case: "approved", value: {} } },
    });
    assert.deepEqual(approved.work?.work, { type: "web_fetch", url: "https://example.org/a" });
    const done = finish(approved, {
      type: "web_fetch",
      outcome: {
        type: "page",
        url: "https://example.org/a",
        finalUrl: "https://example.org/b",
        contentType: "text/html",
        title: "B",
        text: "# B\n\nBody.",
        cut: "the text was cut at character 10 of 20; the rest of the page is not shown",
      },
    });
    assert.equal(
      resultText(done.input?.message ?? assert.fail()),
      'Content of https://example.org/a (redirected to https://example.org/b), text/html, title "B":\n\n# B\n\nBody.\n\n[Cut: the text was cut at character 10 of 20; the rest of the page is not shown.]',
    );
    const ui = completedTool(done);
    assert.ok(ui?.case === "webFetchToolCall" && ui.value.result?.result.case === "success");
    assert.equal(ui.value.result.result.value.markdown, "# B\n\nBody.");
    assert.equal(ui.value.result.result.value.url, "https://example.org/b");
  });

  test("refusal, fetch errors and non-http URLs become tool results", () => {
    const refused = answer(start("web_fetch", { url: "https://example.org/a" }, ASK), {
      case: "webFetchRequestResponse",
      value: { result: { case: "rejected", value: { reason: "" } } },
    });
    assert.equal(
      resultText(refused.input?.message ?? assert.fail()),
      "The user declined fetching https://example.org/a.",
    );
    const failed = finish(start("web_fetch", { url: "http://10.0.0.1/" }, NO_ASK), {
      type: "web_fetch",
      outcome: {
        type: "error",
        url: "http://10.0.0.1/",
        message: "refused: 10.0.0.1 resolves to 10.0.0.1, a private address",
      },
    });
    assert.equal(
      resultText(failed.input?.message ?? assert.fail()),
      "Fetching http://10.0.0.1/ failed: refused: 10.0.0.1 resolves to 10.0.0.1, a private address",
    );
    assert.equal(failed.input?.message.isError, true);
    const file = startToolCall(
      turnState({ web: ASK }),
      callClient("web_fetch", { url: "file:///etc/passwd" }),
      {
        at: T0 + 1,
        inputID: "in-0",
      },
    );
    assert.equal(
      resultText(file.input?.message ?? assert.fail()),
      'Invalid arguments for web_fetch: "url" must be an http or https URL',
    );
  });
});
