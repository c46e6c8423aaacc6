/**
 * Whole turns: text, thinking and tool-call streams, several tool calls with results out of order,
 * stops, failures, cancels and duplicate inputs.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { ToolResultMessage } from "../llm/types.ts";
import { toCallID, toOperationID } from "./ids.ts";
import { toResumeCommand } from "./request.ts";
import { createConversation } from "./state.ts";
import {
  assistantMessage,
  CONVERSATION_ID,
  cancel,
  drive,
  given,
  llm,
  result,
  SETTINGS,
  start,
  streamed,
  text,
  thinking,
  toEvents,
  toolCall,
} from "./testing.ts";
import type { ToolResultInput } from "./types.ts";

const fresh = () => createConversation(CONVERSATION_ID);
const call = (turn: number, step: number) => toCallID(CONVERSATION_ID, `t${turn}`, step);

describe("text and thinking streams", () => {
  test("every delta is emitted in order and only done appends, exactly once", () => {
    const answer = assistantMessage([
      thinking("The user greets me; answer briefly.", "sig-Ab3=="),
      text("Hello! How can I help?"),
    ]);
    const driven = drive(fresh(), start("hi"), { responses: [answer], chunkSize: 3 });
    const emitted = driven.transitions.flatMap((t) => t.emit);
    assert.deepEqual(emitted, toEvents(answer, 3));
    const appendedAt = driven.transitions.findIndex((t) => t.state.committed.messages.length === 2);
    assert.equal(appendedAt, driven.transitions.length - 1, "the answer is appended by done only");
    assert.deepEqual(driven.state.committed.messages.at(-1), answer);
    assert.deepEqual(driven.outcome, { type: "final", message: answer });
  });

  test("the pending response aggregates text, thinking and raw tool arguments from deltas", () => {
    const read = toolCall("tc-1", "read", { path: 'src/a "quoted".ts' });
    const message = assistantMessage([thinking("plan"), text("Reading it."), read]);
    const events = streamed(call(1, 0), message, 2);
    const before = given(start("go")).given(events.slice(0, -1)).state;
    assert.deepEqual(before.pending?.blocks, [
      { type: "thinking", thinking: "plan", open: false },
      { type: "text", text: "Reading it.", open: false },
      {
        type: "toolCall",
        id: "tc-1",
        name: "read",
        argumentsText: JSON.stringify(read.arguments),
        open: false,
      },
    ]);
    assert.equal(before.committed.messages.length, 1);
  });

  test("thinking signatures and response ids are committed exactly as received", () => {
    const answer = {
      ...assistantMessage([thinking("x", "opaque/sig+==")]),
      responseId: "msg_01XYZ",
    };
    const driven = drive(fresh(), start("hi"), { responses: [answer] });
    const committed = driven.state.committed.messages.at(-1);
    assert.equal(committed, answer);
  });
});

describe("tool calls", () => {
  const readA = toolCall("call_a", "read", { path: "a.ts" });
  const readB = toolCall("call_b", "read", { path: "b.ts" });
  const grep = toolCall("call_c", "grep", { pattern: "TODO" });
  const calling = assistantMessage([text("Let me look."), readA, readB, grep]);
  const answer = assistantMessage([text("Found it.")]);

  for (const reverseResults of [false, true]) {
    test(`results are appended in the message's order (${reverseResults ? "arriving last first" : "in order"})`, () => {
      const driven = drive(fresh(), start("find TODOs"), {
        responses: [calling, answer],
        reverseResults,
        run: (c) => `ran ${c.id}`,
      });
      const results = driven.state.committed.messages.filter(
        (m): m is ToolResultMessage => m.role === "toolResult",
      );
      assert.deepEqual(
        results.map((r) => r.toolCallId),
        ["call_a", "call_b", "call_c"],
      );
      assert.deepEqual(
        driven.state.committed.messages.map((m) => m.role),
        ["user", "assistant", "toolResult", "toolResult", "toolResult", "assistant"],
      );
      assert.equal(driven.calls.length, 2);
      assert.equal(driven.outcome.type, "final");
    });
  }

  test("the next model call starts only when every result is in", () => {
    const driven = drive(fresh(), start("find TODOs"), { responses: [calling, answer] });
    const secondCall = driven.transitions.findIndex(
      (t, i) => i > 0 && t.command.type === "call_llm",
    );
    const before = driven.transitions[secondCall - 1];
    assert.equal(before?.command.type, "call_client");
    assert.equal(driven.transitions[secondCall]?.state.committed.messages.length, 5);
  });

  test("a failed tool is a result with isError, and the loop goes on", () => {
    const driven = drive(given(start("read")).state, result(readA, "x"), { responses: [] });
    assert.equal(driven.transitions[0]?.rejected?.reason, "not_waiting_for_tool");
    const failing = drive(fresh(), start("read a"), {
      responses: [assistantMessage([readA]), answer],
    });
    assert.equal(failing.outcome.type, "final");
    const withError = given(start("read a"), streamed(call(1, 0), assistantMessage([readA])))
      .when(result(readA, "ENOENT: no such file", true))
      .thenExpect({ command: "call_llm" });
    const appended = withError.transition.state.committed.messages.at(-1);
    assert.ok(appended?.role === "toolResult" && appended.isError);
  });

  test("a tool result that changes the settings: the next request uses them, history extends", () => {
    const ask = { ...SETTINGS, systemPrompt: "Ask mode: answer only." };
    const agent = { ...SETTINGS, systemPrompt: "Agent mode: change things.", tools: [] };
    const two = assistantMessage([readA, readB]);
    const waiting = given(
      start("read", { settings: ask }),
      streamed(call(1, 0), two),
      result(readA, "a"),
    );
    const before = waiting.state.committed.messages;
    const outcome = waiting
      .when({ ...(result(readB, "b") as ToolResultInput), settings: agent })
      .thenExpect({ command: "call_llm" });
    const command = outcome.transition.command;
    assert.ok(command.type === "call_llm");
    assert.equal(command.request.systemPrompt, "Agent mode: change things.");
    assert.deepEqual(command.request.tools, []);
    assert.deepEqual(command.request.messages.slice(0, before.length), before);
    assert.deepEqual(outcome.transition.state.committed.settings, agent);
  });

  test("a duplicated tool result adds nothing", () => {
    const waiting = given(start("read"), streamed(call(1, 0), calling), result(readA, "a"));
    waiting.when(result(readA, "a")).thenRejected("duplicate_tool_result");
  });
});

describe("stops, failures and cancels", () => {
  const partialText = assistantMessage([text("Hel")]);
  const open = streamed(call(1, 0), partialText).slice(0, -1);

  test("a length stop appends the truncated answer and ends the turn", () => {
    const cut = assistantMessage([text("The answer is long and")], "length");
    const driven = drive(fresh(), start("explain"), { responses: [cut] });
    assert.deepEqual(driven.outcome, { type: "final", message: cut });
  });

  test("an error appends nothing and the conversation can continue with a new turn", () => {
    const failedState = given(
      start("hi"),
      open,
      llm(call(1, 0), {
        type: "error",
        reason: "error",
        error: { ...partialText, stopReason: "error", errorMessage: "connection reset" },
      }),
    ).state;
    assert.equal(failedState.committed.status, "failed");
    assert.equal(failedState.committed.messages.length, 1);
    const next = drive(failedState, start("again"), {
      responses: [assistantMessage([text("Hi")])],
    });
    assert.equal(next.outcome.type, "final");
    assert.equal(next.calls[0]?.callID, call(2, 0));
    assert.deepEqual(
      next.state.committed.messages.map((m) => m.role),
      ["user", "user", "assistant"],
    );
  });

  test("cancel while the model streams drops the partial response; the late abort is ignored", () => {
    const canceled = given(start("hi"), open).when(cancel("user pressed stop"));
    canceled.thenExpect({
      command: { type: "canceled", reason: "user pressed stop" },
      appended: [],
    });
    const aborted = { ...partialText, stopReason: "aborted" as const, errorMessage: "aborted" };
    given(start("hi"), open, cancel())
      .when(llm(call(1, 0), { type: "error", reason: "aborted", error: aborted }))
      .thenRejected("call_finished");
  });

  test("cancel while a tool runs gives every unanswered call a canceled result", () => {
    const readA = toolCall("a", "read");
    const state = given(start("read"), streamed(call(1, 0), assistantMessage([readA]))).state;
    const canceled = drive(state, cancel(), { responses: [] });
    const last = canceled.state.committed.messages.at(-1);
    assert.ok(last?.role === "toolResult" && last.isError && last.toolCallId === "a");
    assert.equal(canceled.outcome.type, "canceled");
  });

  test("a second done for the same call appends nothing", () => {
    const answer = assistantMessage([text("ok")]);
    const events = streamed(call(1, 0), answer);
    given(start("hi"), events)
      .when(events.at(-1) as (typeof events)[number])
      .thenRejected("call_finished");
  });
});

describe("toResumeCommand()", () => {
  const readA = toolCall("a", "read", { path: "a" });
  const readB = toolCall("b", "read", { path: "b" });
  const calling = assistantMessage([readA, readB]);

  test("repeats the model call a state waits for, with the same id and request", () => {
    const waiting = given(start("hi"));
    const first = given().when(start("hi")).transition.command;
    assert.deepEqual(toResumeCommand(waiting.state.committed), first);
  });

  test("asks again for the tool call a state waits for", () => {
    const state = given(start("go"), streamed(call(1, 0), calling), result(readA, "a")).state;
    const resumed = toResumeCommand(state.committed);
    assert.ok(resumed?.type === "call_client");
    assert.equal(resumed.toolCall, readB);
    assert.equal(resumed.operationID, toOperationID(call(1, 0), "b"));
  });

  test("is null when nothing is awaited", () => {
    assert.equal(toResumeCommand(fresh().committed), null);
    const done = drive(fresh(), start("hi"), { responses: [assistantMessage([text("ok")])] });
    assert.equal(toResumeCommand(done.state.committed), null);
  });
});
