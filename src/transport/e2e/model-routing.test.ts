/**
 * Model routing through the real server (README "Model routing"), against fake providers that
 * fail the way real ones do: a model whose call fails before its first token (429, 5xx, 529, a
 * reset connection, a streamed `overloaded_error`) hands the same request to its fallback, and
 * the switch is logged with its reason; a failure after the first token, or a bad request, is
 * not retried elsewhere; a conversation that moved stays on the model that answered; repeated
 * 429s cool a model down, so later conversations skip it without a request.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import { type FakeReply, readFixture } from "../../llm/testing/fake-provider.ts";
import { FAILOVER_ATTEMPTS } from "../../runner/model-call.ts";
import { API_KEY, type Harness, startHarness } from "./test-harness.ts";

/** Attempts per call in the harness's retry policy. */
const ATTEMPTS = 3;
/** Attempts of a call with a fallback left (runner/model-call.ts). */
const QUICK = FAILOVER_ATTEMPTS;

function models(url: string) {
  const compatible = { api: "openai-compatible", baseUrl: url, apiKey: API_KEY };
  return [
    { ...compatible, name: "main", model: "main-up", fallbacks: ["spare", "claude"] },
    { ...compatible, name: "spare", model: "spare-up" },
    { name: "claude", api: "anthropic", model: "claude-sonnet-4-5", baseUrl: url, apiKey: API_KEY },
    {
      name: "claude-main",
      api: "anthropic",
      model: "claude-opus-4-1",
      baseUrl: url,
      apiKey: API_KEY,
      fallbacks: ["spare"],
    },
  ];
}

const answer = (text: string): FakeReply => ({ type: "sse", body: toChatCompletionSse({ text }) });
const times = <const T>(count: number, item: T): T[] => Array.from({ length: count }, () => item);

/** An Anthropic stream that fails with `overloaded_error` right after `message_start`. */
function overloadedBeforeFirstToken(): FakeReply {
  const [messageStart] = readFixture("anthropic", "error-event").split("\n\n");
  return {
    type: "sse",
    body:
      `${messageStart}\n\n` +
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
  };
}

/** The upstream model each request since `from` asked for. */
function upstreamModels(harness: Harness, from: number): string[] {
  return harness.provider.requests
    .slice(from)
    .map((request) => String(JSON.parse(request.body).model));
}

function switches(harness: Harness, conversation: string) {
  return harness.logs
    .filter(
      (line) =>
        line.message.startsWith("model switched") && line.fields.conversation === conversation,
    )
    .map((line) => ({ from: line.fields.from, to: line.fields.to, kind: line.fields.kind }));
}

describe("model routing end to end", () => {
  let harness: Harness;
  before(async () => {
    // No cool-down in these cases: each starts with healthy models.
    harness = await startHarness({ models, health: { cooldownAfter429s: 1000 } });
  });
  after(() => harness.close());

  const failures: [string, FakeReply[], string][] = [
    [
      "429",
      times(QUICK, { type: "status", status: 429, body: '{"error":"slow down"}' }),
      "rate_limited",
    ],
    ["500", times(QUICK, { type: "status", status: 500 }), "server_error"],
    ["529", times(QUICK, { type: "status", status: 529 }), "overloaded"],
    ["a reset connection", times(QUICK, { type: "reset" }), "connection"],
  ];
  for (const [index, [name, replies, kind]] of failures.entries()) {
    test(`${name} before the first token: after one retry the call moves to the fallback, and the switch is logged`, async () => {
      const conversationId = `1000000${index}-0000-4000-8000-000000000000`;
      const first = harness.provider.requests.length;
      harness.provider.reply(...replies, answer("from the spare"));
      const turn = await harness.client().startTurn({ conversationId, text: "hi", modelId: "main" })
        .done;
      assert.equal(turn.error, undefined);
      assert.equal(turn.view.text, "from the spare");
      assert.deepEqual(upstreamModels(harness, first), [...times(QUICK, "main-up"), "spare-up"]);
      assert.deepEqual(switches(harness, conversationId), [{ from: "main", to: "spare", kind }]);
      const ended = harness.logs.find(
        (line) => line.message === "turn ended" && line.fields.conversation === conversationId,
      );
      assert.deepEqual([ended?.fields.model, ended?.fields.calledModel], ["main", "spare"]);
      // The same request went to the fallback: the same messages.
      const [failed, succeeded] = [
        harness.provider.requests[first],
        harness.provider.requests.at(-1),
      ];
      assert.deepEqual(
        JSON.parse(succeeded?.body ?? "").messages,
        JSON.parse(failed?.body ?? "").messages,
      );
    });
  }

  test("the conversation stays on the model that answered (sticky), until that one fails before its first token", async () => {
    const conversationId = "20000000-0000-4000-8000-000000000000";
    const client = harness.client();
    const first = harness.provider.requests.length;
    harness.provider.reply(
      ...times(QUICK, { type: "status", status: 503 }),
      answer("spare, turn 1"),
    );
    harness.provider.reply(answer("spare, turn 2"));
    for (const text of ["one", "two"]) {
      const turn = await client.startTurn({ conversationId, text, modelId: "main" }).done;
      assert.equal(turn.error, undefined);
    }
    assert.deepEqual(upstreamModels(harness, first), [
      ...times(QUICK, "main-up"),
      "spare-up",
      "spare-up",
    ]);
    // The sticky model fails: the next candidate not yet tried is the model asked for.
    const before = harness.provider.requests.length;
    harness.provider.reply(...times(QUICK, { type: "status", status: 500 }), answer("main again"));
    const third = await client.startTurn({ conversationId, text: "three", modelId: "main" }).done;
    assert.equal(third.view.text, "main again");
    assert.deepEqual(upstreamModels(harness, before), [...times(QUICK, "spare-up"), "main-up"]);
    assert.deepEqual(switches(harness, conversationId), [
      { from: "main", to: "spare", kind: "overloaded" },
      { from: "spare", to: "main", kind: "server_error" },
    ]);
  });

  test("every candidate failing ends the turn with the last failure; a fallback of another API kind is tried too", async () => {
    const conversationId = "30000000-0000-4000-8000-000000000000";
    const first = harness.provider.requests.length;
    harness.provider.reply(...times(QUICK * 2 + ATTEMPTS, { type: "status", status: 500 }));
    const turn = await harness.client().startTurn({ conversationId, text: "hi", modelId: "main" })
      .done;
    assert.ok(turn.error !== undefined || turn.view.turnEnded !== undefined);
    assert.deepEqual(upstreamModels(harness, first), [
      ...times(QUICK, "main-up"),
      ...times(QUICK, "spare-up"),
      ...times(ATTEMPTS, "claude-sonnet-4-5"),
    ]);
    assert.equal(switches(harness, conversationId).length, 2);
  });

  test("an overloaded_error streamed before the first token moves the call; after it, the turn fails where it is", async () => {
    const conversationId = "40000000-0000-4000-8000-000000000000";
    const client = harness.client();
    const first = harness.provider.requests.length;
    harness.provider.reply(overloadedBeforeFirstToken(), answer("spare after overload"));
    const moved = await client.startTurn({ conversationId, text: "hi", modelId: "claude-main" })
      .done;
    assert.equal(moved.view.text, "spare after overload");
    assert.deepEqual(switches(harness, conversationId), [
      { from: "claude-main", to: "spare", kind: "overloaded" },
    ]);

    const other = "40000001-0000-4000-8000-000000000000";
    const before = harness.provider.requests.length;
    harness.provider.reply({ type: "sse", body: readFixture("anthropic", "error-event") });
    const cut = await client.startTurn({
      conversationId: other,
      text: "hi",
      modelId: "claude-main",
    }).done;
    assert.match(cut.view.text, /^Hello there! How/);
    assert.equal(harness.provider.requests.length, before + 1, "no second request");
    assert.deepEqual(switches(harness, other), []);
    assert.deepEqual(upstreamModels(harness, first), [
      "claude-opus-4-1",
      "spare-up",
      "claude-opus-4-1",
    ]);
  });

  test("a fallback of another API kind mid-turn gets the turn's tool calls in a form it accepts", async () => {
    // Kimi-style ids (`name:position`, restarting every message) from the OpenAI-compatible
    // model, then both compatible models fail before their first token and Claude (budget
    // thinking) takes the turn over: the fake refuses what Anthropic refuses (repeated or
    // invalid tool_use ids, a final assistant message without thinking), so the request must
    // carry unique valid ids and go without thinking (src/llm/README.md "Tool calls another
    // model made").
    const conversationId = "70000000-0000-4000-8000-000000000000";
    writeFileSync(join(harness.workspace, "kimi.txt"), "k\n");
    const read = { name: "read_file", arguments: { path: "kimi.txt" } };
    const first = harness.provider.requests.length;
    harness.provider.reply(
      {
        type: "sse",
        body: toChatCompletionSse({
          toolCalls: [
            { id: "read_file:0", ...read },
            { id: "list_dir:1", name: "list_dir", arguments: { path: "." } },
          ],
        }),
      },
      { type: "sse", body: toChatCompletionSse({ toolCalls: [{ id: "read_file:0", ...read }] }) },
      ...times(QUICK * 2, { type: "status", status: 500 }),
      { type: "sse", body: readFixture("anthropic", "text") },
    );
    const turn = await harness.client().startTurn({ conversationId, text: "read", modelId: "main" })
      .done;
    assert.equal(turn.error, undefined);
    assert.equal(turn.view.text, "Hello there! How can I help today?");
    assert.deepEqual(upstreamModels(harness, first), [
      "main-up",
      "main-up",
      ...times(QUICK, "main-up"),
      ...times(QUICK, "spare-up"),
      "claude-sonnet-4-5",
    ]);
    const body = JSON.parse(harness.provider.requests.at(-1)?.body ?? "") as {
      thinking?: { type?: string };
      messages: { content: string | { type: string; id?: string; tool_use_id?: string }[] }[];
    };
    const blocks = body.messages.flatMap((m) => (typeof m.content === "string" ? [] : m.content));
    const uses = blocks.filter((b) => b.type === "tool_use").map((b) => b.id);
    const results = blocks.filter((b) => b.type === "tool_result").map((b) => b.tool_use_id);
    assert.deepEqual(uses, ["read_file_0", "list_dir_1", uses[2]]);
    assert.notEqual(uses[2], "read_file_0");
    assert.deepEqual(results, uses);
    assert.equal(body.thinking?.type, "disabled");
  });

  test("a bad request (400) is not a reason to switch", async () => {
    const conversationId = "50000000-0000-4000-8000-000000000000";
    const first = harness.provider.requests.length;
    harness.provider.reply({
      type: "status",
      status: 400,
      body: '{"error":{"message":"bad request"}}',
    });
    await harness.client().startTurn({ conversationId, text: "hi", modelId: "main" }).done;
    assert.deepEqual(upstreamModels(harness, first), ["main-up"]);
    assert.deepEqual(switches(harness, conversationId), []);
  });
});

describe("cool-down after repeated 429s", () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({
      models,
      health: { cooldownAfter429s: QUICK, cooldownMs: 3_600_000 },
    });
  });
  after(() => harness.close());

  test("a model that got 429s in a row is skipped by later conversations without a request, and reported cooling down", async () => {
    const first = harness.provider.requests.length;
    harness.provider.reply(
      ...times(QUICK, { type: "status", status: 429 }),
      answer("spare 1"),
      answer("spare 2"),
    );
    const one = await harness.client().startTurn({
      conversationId: "60000000-0000-4000-8000-000000000000",
      text: "hi",
      modelId: "main",
    }).done;
    assert.equal(one.view.text, "spare 1");
    const main = harness.llm.health().find((model) => model.name === "main");
    assert.equal(main?.state, "cooling_down");
    assert.equal(main?.lastFailure?.kind, "rate_limited");

    const conversationId = "60000001-0000-4000-8000-000000000000";
    const two = await harness.client().startTurn({ conversationId, text: "hi", modelId: "main" })
      .done;
    assert.equal(two.view.text, "spare 2");
    assert.deepEqual(upstreamModels(harness, first), [
      ...times(QUICK, "main-up"),
      "spare-up",
      "spare-up",
    ]);
    assert.deepEqual(switches(harness, conversationId), [
      { from: "main", to: "spare", kind: "cooling_down" },
    ]);
  });
});
