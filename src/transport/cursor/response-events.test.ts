import assert from "node:assert/strict";
import { test } from "node:test";
import type { ResponseEvent } from "../../llm/types.ts";
import { assistantMessage, text, thinking, toEvents, toolCall } from "../../loop/testing.ts";
import type { AgentServerMessage } from "./gen/agent/v1/agent_stream_pb.js";
import { fromResponseEvent } from "./response-events.ts";
import { T0, turnState } from "./testing.ts";
import type { TurnState } from "./turn-state.ts";

const CALL = "conv:t1:c0";

/** Feeds events one per millisecond; returns the final state and the updates sent. */
function feed(events: ResponseEvent[], state: TurnState = turnState({ modelCallID: "" })) {
  const messages: AgentServerMessage[] = [];
  let current = state;
  events.forEach((event, index) => {
    const out = fromResponseEvent(current, event, { at: T0 + index * 10, callID: CALL });
    current = out.state;
    messages.push(...out.messages);
  });
  return { state: current, updates: messages.map(toUpdate) };
}

function toUpdate(message: AgentServerMessage) {
  assert.ok(message.message.case === "interactionUpdate");
  return message.message.value.message;
}

test("text deltas stream as text_delta; done sends token_delta", () => {
  const { updates, state } = feed(toEvents(assistantMessage([text("Hello world")]), 6));
  assert.deepEqual(
    updates.map((update) => [
      update.case,
      update.case === "textDelta" ? update.value.text : undefined,
    ]),
    [
      ["textDelta", "Hello "],
      ["textDelta", "world"],
      ["tokenDelta", undefined],
    ],
  );
  const last = updates.at(-1);
  assert.ok(last?.case === "tokenDelta");
  assert.equal(last.value.tokens, 5);
  assert.equal(state.modelCallID, CALL);
  assert.deepEqual(state.usage, {
    input: 10,
    output: 5,
    cacheRead: 0,
    cacheWrite: 0,
    reasoning: 0,
  });
  assert.equal(state.contextTokens, 15);
});

test("thinking streams as thinking_delta and completes with its duration", () => {
  const events = toEvents(assistantMessage([thinking("abcdefgh"), text("ok")]), 4);
  const { updates, state } = feed(events);
  assert.deepEqual(
    updates.map((update) => update.case),
    ["thinkingDelta", "thinkingDelta", "thinkingCompleted", "textDelta", "tokenDelta"],
  );
  const completed = updates[2];
  assert.ok(completed?.case === "thinkingCompleted");
  // thinking_start is event 1, thinking_end event 4: 30 ms apart.
  assert.equal(completed.value.thinkingDurationMs, 30);
  assert.deepEqual(
    state.steps.map((step) => [
      step.message.case,
      step.message.value && "text" in step.message.value ? step.message.value.text : "",
    ]),
    [
      ["thinkingMessage", "abcdefgh"],
      ["assistantMessage", "ok"],
    ],
  );
  const step = state.steps[0]?.message;
  assert.ok(step?.case === "thinkingMessage");
  assert.equal(step.value.durationMs, 30);
});

test("tool-call arguments stream as partial_tool_call with the tool's UI variant and ids", () => {
  const events = toEvents(
    assistantMessage([toolCall("toolu_9", "read_file", { path: "a.ts" })]),
    5,
  );
  const { updates } = feed(events);
  const partial = updates.filter((update) => update.case === "partialToolCall");
  assert.ok(partial.length >= 2);
  const [first, ...rest] = partial;
  assert.ok(first?.case === "partialToolCall");
  assert.equal(first.value.callId, "toolu_9");
  assert.equal(first.value.modelCallId, CALL);
  assert.equal(first.value.argsTextDelta, "");
  assert.equal(first.value.toolCall?.tool.case, "readToolCall");
  const text = rest
    .map((update) => (update.case === "partialToolCall" ? update.value.argsTextDelta : ""))
    .join("");
  assert.equal(text, JSON.stringify({ path: "a.ts" }));
  assert.ok(
    !updates.some((update) => update.case === "toolCallStarted"),
    "started is sent when the tool runs",
  );
});

test("every partial_tool_call of a call carries the call's UI form, an MCP tool's too", () => {
  const state = turnState({ modelCallID: "" });
  const mcp = state.mcpTools[0];
  assert.ok(mcp !== undefined);
  for (const [id, name, variant] of [
    ["toolu_1", "read_file", "readToolCall"],
    ["toolu_2", mcp.name, "mcpToolCall"],
  ] as const) {
    const events = toEvents(assistantMessage([toolCall(id, name, { path: "a.ts" })]), 3);
    const partial = feed(events, state).updates.filter(
      (update) => update.case === "partialToolCall",
    );
    assert.ok(partial.length >= 3);
    for (const update of partial) {
      assert.ok(update.case === "partialToolCall");
      assert.equal(update.value.toolCall?.toolCallId, id);
      assert.equal(update.value.toolCall?.tool.case, variant);
      assert.deepStrictEqual(update.value.toolCall, partial[0]?.value.toolCall);
      // One object for all of them, frozen: its bytes are cached by identity (server-message.ts).
      assert.equal(update.value.toolCall, partial[0]?.value.toolCall);
      assert.ok(Object.isFrozen(update.value.toolCall));
      assert.ok(Object.isFrozen(update.value.toolCall?.tool.value));
    }
  }
});

test("a tool call whose id is not known yet sends nothing until it is", () => {
  const [start, , delta] = toEvents(
    assistantMessage([toolCall("", "read_file", { path: "a" })]),
    3,
  );
  assert.ok(start && delta);
  const { updates } = feed([
    start,
    {
      type: "toolcall_start",
      contentIndex: 0,
      partial: assistantMessage([toolCall("", "read_file")]),
    },
    delta,
  ]);
  assert.deepEqual(updates, []);
});

test("an unknown tool still gets a partial_tool_call, without a UI variant", () => {
  const events = toEvents(assistantMessage([toolCall("t1", "mystery", {})]), 50);
  const { updates } = feed(events);
  const first = updates.find((update) => update.case === "partialToolCall");
  assert.ok(first?.case === "partialToolCall");
  assert.equal(first.value.toolCall?.tool.case, undefined);
});

test("errors add the tokens they consumed and send nothing", () => {
  const failed = { ...assistantMessage([text("partial")], "error"), errorMessage: "boom" };
  const { updates, state } = feed(toEvents(failed));
  assert.deepEqual(
    updates.map((update) => update.case),
    ["textDelta", "textDelta"],
  );
  assert.equal(state.usage.output, 5);
  assert.deepEqual(state.steps, [], "a failed call adds no steps");
});

test("the state passed in is never mutated", () => {
  const state = turnState();
  const before = structuredClone(state);
  feed(
    toEvents(
      assistantMessage([thinking("hm"), text("hi"), toolCall("t", "read_file", { path: "x" })]),
    ),
    state,
  );
  assert.deepEqual(state, before);
});
