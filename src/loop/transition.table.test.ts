/**
 * One test per row of the (status, input) table in README.md, named by the row id.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { SUMMARY_PREFIX } from "./compaction.ts";
import { toCallID, toOperationID } from "./ids.ts";
import { toResumeCommand } from "./request.ts";
import { toStepRecords } from "./step-records.ts";
import {
  assistantMessage,
  assistantWithUsage,
  BATCH_SETTINGS,
  COMPACTING,
  CONVERSATION_ID,
  cancel,
  compact,
  followUp,
  given,
  llm,
  overflow,
  result,
  SETTINGS,
  start,
  streamed,
  T0,
  text,
  toEvents,
  toolCall,
  userMessage,
} from "./testing.ts";
import type { FailureKind, Input, ResponseEvent, StartInput, Tool, TurnSettings } from "./types.ts";

const call0 = toCallID(CONVERSATION_ID, "t1", 0);
const call1 = toCallID(CONVERSATION_ID, "t1", 1);
const readA = toolCall("tc-a", "read", { path: "a.ts" });
const readB = toolCall("tc-b", "read", { path: "b.ts" });
const readC = toolCall("tc-c", "read", { path: "c.ts" });
const answer = assistantMessage([text("Done.")]);
const threeCalls = assistantMessage([text("Reading."), readA, readB, readC]);

// A response mixing read-only calls (read) with one with effects (shell), under BATCH_SETTINGS.
const readD = toolCall("tc-d", "read", { path: "d.ts" });
const shellS = toolCall("tc-s", "shell", { command: "make" });
const mixed = assistantMessage([readA, readB, shellS, readC, readD]);
const waitingForMixed = [start("mixed", { settings: BATCH_SETTINGS }), ...streamed(call0, mixed)];
const op = (call: typeof readA) => ({
  type: "call_client" as const,
  operationID: toOperationID(call0, call.id),
  toolCall: call,
});

/** Events of `message` up to (not including) the terminal one. */
function openStream(callID: string, message = answer): Input[] {
  return streamed(callID, message).slice(0, -1);
}

/** A first turn that ended normally. */
const finishedTurn = [start("hello"), ...streamed(call0, answer)];
/** A first turn waiting for the results of three tool calls. */
const waitingForTools = [start("read three files"), ...streamed(call0, threeCalls)];

const t2c0 = toCallID(CONVERSATION_ID, "t2", 0);
const t3c0 = toCallID(CONVERSATION_ID, "t3", 0);
const summaryAnswer = assistantMessage([text("The user said hi.")]);
/** Two finished turns with automatic compaction in a small window (4 messages). */
const twoTurns = [
  start("one", { settings: COMPACTING }),
  ...streamed(call0, answer),
  followUp("two"),
  ...streamed(t2c0, answer),
];
/** A first turn whose answer reports a request of 500 tokens: the next call is over 400. */
const heavyAnswer = assistantWithUsage([text("Done.")], 500);
const heavyTurn = [start("hi", { settings: COMPACTING }), ...streamed(call0, heavyAnswer)];

const rows: Record<string, () => void> = {
  L1() {
    for (const before of [[], finishedTurn]) {
      given(before)
        .when(start("next", { inputID: "req-1:0" }))
        .thenExpect({
          command: "call_llm",
          status: "waiting_llm",
          appended: [userMessage("next")],
        });
    }
    // failed and canceled are idle too
    given(start("x"), llm(call0, { type: "error", reason: "error", error: answer }))
      .when(start("again"))
      .thenExpect({ command: "call_llm" });
    given(start("x"), cancel()).when(start("again")).thenExpect({ command: "call_llm" });
    // the client's model options ride on the call; none when the settings carry none
    const modelOptions = { thinking: true, effort: "high", maxMode: true } as const;
    const withOptions = given()
      .when(start("think", { settings: { ...SETTINGS, modelOptions } }))
      .thenExpect({ command: "call_llm" }).transition.command;
    assert.ok(withOptions.type === "call_llm");
    assert.deepEqual(withOptions.modelOptions, modelOptions);
    const plain = given().when(start("plain")).transition.command;
    assert.ok(plain.type === "call_llm" && !("modelOptions" in plain));
  },
  L2() {
    given(finishedTurn)
      .when(followUp("and then?"))
      .thenExpect({
        command: "call_llm",
        status: "waiting_llm",
        appended: [userMessage("and then?")],
      });
  },
  L3() {
    given().when(followUp("hi")).thenRejected("no_settings");
  },
  L4() {
    given(start("one")).when(start("two")).thenRejected("turn_in_progress");
    given(start("one")).when(followUp("two")).thenRejected("turn_in_progress");
    given(waitingForTools).when(start("two")).thenRejected("turn_in_progress");
    given(waitingForTools).when(followUp("two")).thenRejected("turn_in_progress");
  },
  L5() {
    const [first] = toEvents(answer);
    assert.ok(first);
    const outcome = given(start("hi"))
      .when(llm(call0, first))
      .thenExpect({
        command: "continue_llm",
        emit: ["start"],
        status: "waiting_llm",
        appended: [],
      });
    assert.equal(outcome.transition.state.pending?.callID, call0);
  },
  L6() {
    const [first] = toEvents(answer);
    assert.ok(first);
    const outcome = given(start("hi"), llm(call0, first)).when(llm(call0, first));
    outcome.thenRejected("out_of_order");
    assert.equal(outcome.transition.command.type, "continue_llm");
  },
  L7() {
    const events = openStream(call0).slice(1);
    const outcome = given(start("hi"), openStream(call0)[0] as Input).whenAll(events);
    outcome.thenExpect({ command: "continue_llm", emit: ["text_end"], appended: [] });
    assert.deepEqual(outcome.transition.state.pending?.blocks, [
      { type: "text", text: "Done.", open: false },
    ]);
  },
  L8() {
    const [first, textStart, delta] = toEvents(answer);
    assert.ok(first && textStart && delta);
    const cases: [Input[], Input][] = [
      [[], llm(call0, delta)], // before start
      [[llm(call0, first)], llm(call0, delta)], // block not open
      [[llm(call0, first), llm(call0, textStart)], llm(call0, textStart)], // opened twice
      [openStream(call0), llm(call0, delta)], // block already closed
    ];
    for (const [before, input] of cases) {
      const outcome = given(start("hi"), before).when(input).thenRejected("out_of_order");
      assert.equal(outcome.transition.command.type, "continue_llm");
    }
  },
  L9() {
    given(start("hi"), openStream(call0))
      .when(streamed(call0, answer).at(-1) as Input)
      .thenExpect({
        command: { type: "final", message: answer },
        emit: ["done"],
        status: "final",
        appended: [answer],
      });
    const cut = assistantMessage([text("Partial ans")], "length");
    const outcome = given(start("hi"), openStream(call0, cut))
      .when(streamed(call0, cut).at(-1) as Input)
      .thenExpect({ command: "final", status: "final", appended: [cut] });
    assert.equal(outcome.transition.state.pending, null);
  },
  L10() {
    // a leading run of read-only calls goes out together; the shell waits for it
    given(start("mixed", { settings: BATCH_SETTINGS }), openStream(call0, mixed))
      .when(llm(call0, { type: "done", reason: "toolUse", message: mixed }))
      .thenExpect({
        command: { type: "call_clients", calls: [op(readA), op(readB)] },
        status: "waiting_client",
      });
    // a call with effects first goes alone, read-only or not what follows
    const shellFirst = assistantMessage([shellS, readA, readB]);
    given(start("s", { settings: BATCH_SETTINGS }), openStream(call0, shellFirst))
      .when(llm(call0, { type: "done", reason: "toolUse", message: shellFirst }))
      .thenExpect({ command: op(shellS) });
    // a single read-only call is a plain call_client
    const oneRead = assistantMessage([readA]);
    given(start("r", { settings: BATCH_SETTINGS }), openStream(call0, oneRead))
      .when(llm(call0, { type: "done", reason: "toolUse", message: oneRead }))
      .thenExpect({ command: op(readA) });
    given(start("read"), openStream(call0, threeCalls))
      .when(streamed(call0, threeCalls).at(-1) as Input)
      .thenExpect({
        command: {
          type: "call_client",
          operationID: toOperationID(call0, "tc-a"),
          toolCall: readA,
        },
        emit: ["done"],
        status: "waiting_client",
        appended: [threeCalls],
      });
    const stopWithCall = assistantMessage([readA], "stop");
    given(start("read"))
      .when({
        type: "llm_event",
        callID: call0,
        event: { type: "done", reason: "stop", message: stopWithCall },
      })
      .thenExpect({ command: "call_client", status: "waiting_client", appended: [stopWithCall] });
  },
  L11() {
    const noCalls = assistantMessage([text("nothing to run")], "toolUse");
    given(start("hi"))
      .when(llm(call0, { type: "done", reason: "toolUse", message: noCalls }))
      .thenExpect({ command: "final", status: "final", appended: [noCalls] });
  },
  L12() {
    const cut = assistantMessage([text("Let me read."), readA], "length");
    const outcome = given(start("hi")).when(
      llm(call0, { type: "done", reason: "length", message: cut }),
    );
    outcome.thenExpect({ command: "final", status: "final" });
    const appended = outcome.transition.state.committed.messages.slice(1);
    assert.equal(appended.length, 2);
    assert.equal(appended[0], cut);
    const notRun = appended[1];
    assert.ok(notRun?.role === "toolResult" && notRun.isError && notRun.toolCallId === "tc-a");
  },
  L13() {
    const bad: Input[] = [
      llm(call0, { type: "done", reason: "deferred", message: answer }),
      llm(call0, {
        type: "done",
        reason: "toolUse",
        message: assistantMessage([toolCall("", "read")]),
      }),
      llm(call0, { type: "done", reason: "toolUse", message: assistantMessage([readA, readA]) }),
    ];
    for (const input of bad) {
      const outcome = given(start("hi"), openStream(call0))
        .when(input)
        .thenExpect({ command: "failed", status: "failed", appended: [] });
      assert.equal(outcome.transition.state.committed.failure?.reason, "invalid_response");
      assert.equal(outcome.transition.state.pending, null);
    }
  },
  L14() {
    const error = { ...assistantMessage([text("Par")], "error"), errorMessage: "upstream 500" };
    const outcome = given(start("hi"), openStream(call0))
      .when(llm(call0, { type: "error", reason: "error", error }))
      .thenExpect({
        command: { type: "failed", message: error },
        emit: ["error"],
        status: "failed",
        appended: [],
      });
    assert.equal(outcome.transition.state.pending, null);
    assert.deepEqual(outcome.transition.state.committed.failure, {
      callID: call0,
      reason: "error",
      message: "upstream 500",
    });
  },
  L15() {
    const aborted = {
      ...assistantMessage([text("Par")], "aborted"),
      errorMessage: "Request was aborted",
    };
    given(start("hi"), openStream(call0))
      .when(llm(call0, { type: "error", reason: "aborted", error: aborted }))
      .thenExpect({
        command: { type: "canceled", reason: "Request was aborted" },
        emit: ["error"],
        status: "canceled",
        appended: [],
      });
  },
  L16() {
    const [first] = toEvents(answer);
    assert.ok(first);
    given(start("hi")).when(llm("someone-else", first)).thenRejected("other_call");
    // a late event of an earlier call of the same turn
    const late = given(waitingForTools, result(readA, "a"), result(readB, "b"), result(readC, "c"))
      .when(streamed(call0, threeCalls).at(-1) as Input)
      .thenRejected("other_call");
    assert.equal(late.transition.command.type, "wait_input");
  },
  L17() {
    const done = streamed(call0, answer).at(-1) as Input;
    const outcome = given(finishedTurn).when(done).thenRejected("call_finished");
    assert.equal(outcome.transition.command.type, "wait_input");
    given(waitingForTools)
      .when(streamed(call0, threeCalls).at(-1) as Input)
      .thenRejected("call_finished");
  },
  L18() {
    const [first] = toEvents(answer);
    assert.ok(first);
    given().when(llm(call0, first)).thenRejected("other_call");
    given(finishedTurn).when(llm(call1, first)).thenRejected("other_call");
  },
  L19() {
    given(start("hi")).when(result(readA, "a")).thenRejected("not_waiting_for_tool");
  },
  L20() {
    const outcome = given(start("hi"), openStream(call0))
      .when(cancel("stop"))
      .thenExpect({
        command: { type: "canceled", reason: "stop" },
        status: "canceled",
        appended: [],
      });
    assert.equal(outcome.transition.state.pending, null);
  },
  L21() {
    const outcome = given(waitingForTools)
      .when(result(readA, "contents of a"))
      .thenExpect({
        command: {
          type: "call_client",
          operationID: toOperationID(call0, "tc-b"),
          toolCall: readB,
        },
        status: "waiting_client",
        appended: [toolResultOf(readA, "contents of a")],
      });
    assert.equal(outcome.transition.state.committed.waiting?.answered, 1);
    // with an early result for C, answering B appends B then C and asks for nothing more
    given(waitingForTools, result(readA, "a"), result(readC, "c"))
      .when(result(readB, "b"))
      .thenExpect({
        command: "call_llm",
        appended: [toolResultOf(readB, "b"), toolResultOf(readC, "c")],
      });
    // the read batch answered (B first, then A): the shell goes alone
    given(waitingForMixed, result(readB, "b"))
      .when(result(readA, "a"))
      .thenExpect({
        command: op(shellS),
        appended: [toolResultOf(readA, "a"), toolResultOf(readB, "b")],
      });
    // the shell answered: the reads after it go out together
    given(waitingForMixed, result(readA, "a"), result(readB, "b"))
      .when(result(shellS, "made"))
      .thenExpect({
        command: { type: "call_clients", calls: [op(readC), op(readD)] },
        appended: [toolResultOf(shellS, "made")],
      });
  },
  L22() {
    const outcome = given(waitingForTools, result(readA, "a"), result(readB, "b"))
      .when(result(readC, "c"))
      .thenExpect({
        command: "call_llm",
        status: "waiting_llm",
        appended: [toolResultOf(readC, "c")],
      });
    const command = outcome.transition.command;
    assert.ok(command.type === "call_llm");
    assert.equal(command.callID, call1);
    assert.equal(command.messageCount, 5);
    assert.equal(command.request.systemPrompt, SETTINGS.systemPrompt);
  },
  L23() {
    // a later call of the batch in flight answered first: kept, not history
    const batch = given(waitingForMixed)
      .when(result(readB, "b"))
      .thenExpect({ command: "wait_input", status: "waiting_client", appended: [] });
    assert.deepEqual(batch.transition.state.committed.waiting?.early[1], toolResultOf(readB, "b"));
    const outcome = given(waitingForTools)
      .when(result(readC, "c"))
      .thenExpect({ command: "wait_input", status: "waiting_client", appended: [] });
    assert.deepEqual(
      outcome.transition.state.committed.waiting?.early[2],
      toolResultOf(readC, "c"),
    );
  },
  L24() {
    given(waitingForTools)
      .when(result(toolCall("tc-zzz", "read"), "?"))
      .thenRejected("unknown_tool_call");
  },
  L25() {
    given(waitingForTools, result(readA, "a"))
      .when(result(readA, "again"))
      .thenRejected("duplicate_tool_result");
    given(waitingForTools, result(readC, "c"))
      .when(result(readC, "again"))
      .thenRejected("duplicate_tool_result");
  },
  L26() {
    const outcome = given(waitingForTools, result(readA, "a"), result(readC, "c"))
      .when(cancel())
      .thenExpect({ command: "canceled", status: "canceled" });
    const appended = outcome.transition.state.committed.messages.slice(3);
    assert.equal(appended.length, 2);
    const [b, c] = appended;
    assert.ok(b?.role === "toolResult" && b.toolCallId === "tc-b" && b.isError);
    assert.deepEqual(c, toolResultOf(readC, "c"));
    // a batch in flight: B arrived early and is kept; A and every later call are "not run"
    const batch = given(waitingForMixed, result(readB, "b"))
      .when(cancel())
      .thenExpect({ command: "canceled", status: "canceled" });
    const results = batch.transition.state.committed.messages.slice(2);
    assert.deepEqual(
      results.map((m) => (m.role === "toolResult" ? [m.toolCallId, m.isError] : m.role)),
      [
        ["tc-a", true],
        ["tc-b", false],
        ["tc-s", true],
        ["tc-c", true],
        ["tc-d", true],
      ],
    );
  },
  L27() {
    given().when(result(readA, "a")).thenRejected("not_waiting_for_tool");
    given(finishedTurn).when(result(readA, "a")).thenRejected("not_waiting_for_tool");
  },
  L28() {
    given().when(cancel()).thenRejected("not_running");
    given(finishedTurn).when(cancel()).thenRejected("not_running");
  },
  L29() {
    const outcome = given(waitingForMixed)
      .when(result(readA, "a"))
      .thenExpect({
        command: "wait_input",
        status: "waiting_client",
        appended: [toolResultOf(readA, "a")],
      });
    const state = outcome.transition.state.committed;
    assert.equal(state.waiting?.answered, 1);
    // a restart now asks again only for the call of the batch without a result
    assert.deepEqual(toResumeCommand(state), op(readB));
    // and before any result, for the whole batch
    const fresh = given(waitingForMixed).state.committed;
    assert.deepEqual(toResumeCommand(fresh), {
      type: "call_clients",
      calls: [op(readA), op(readB)],
    });
    // the shell in flight: a result for a read after it is early, not a new batch
    given(waitingForMixed, result(readA, "a"), result(readB, "b"))
      .when(result(readC, "c"))
      .thenExpect({ command: "wait_input", appended: [] });
  },
  L30() {
    const outcome = given(twoTurns)
      .when(compact())
      .thenExpect({ command: "call_llm", status: "waiting_llm", appended: [] });
    const command = outcome.transition.command;
    assert.equal(command.type === "call_llm" && command.model, "summary-model");
    assert.equal(command.type === "call_llm" && command.callID, toCallID(CONVERSATION_ID, "t3", 0));
    assert.deepEqual(outcome.transition.state.committed.call?.summary, {
      upTo: 2,
      trigger: "request",
    });
    assert.equal(command.type === "call_llm" && command.request.tools.length, 0);
  },
  L31() {
    given().when(compact()).thenRejected("no_settings");
  },
  L32() {
    given(start("hi", { settings: COMPACTING }), streamed(call0, answer))
      .when(compact())
      .thenRejected("nothing_to_compact");
    given(twoTurns, compact(), streamed(t3c0, summaryAnswer))
      .when(compact("compact:2"))
      .thenRejected("nothing_to_compact");
  },
  L33() {
    given(start("one")).when(compact()).thenRejected("turn_in_progress");
    given(waitingForTools).when(compact()).thenRejected("turn_in_progress");
  },
  L34() {
    const outcome = given(heavyTurn)
      .when(followUp("next"))
      .thenExpect({ command: "call_llm", status: "waiting_llm", appended: [userMessage("next")] });
    const command = outcome.transition.command;
    assert.equal(command.type === "call_llm" && command.model, "summary-model");
    assert.deepEqual(outcome.transition.state.committed.call?.summary, {
      upTo: 1,
      trigger: "threshold",
    });
    // under the threshold, or with automatic compaction off: the model call itself
    for (const before of [
      [start("hi", { settings: COMPACTING }), ...streamed(call0, answer)],
      [start("hi"), ...streamed(call0, heavyAnswer)],
    ]) {
      const plain = given(before).when(followUp("next")).thenExpect({ command: "call_llm" });
      const call = plain.transition.command;
      assert.equal(call.type === "call_llm" && call.model, "test-model");
      assert.equal(call.type === "call_llm" && call.request.messages.length, 3);
    }
  },
  L35() {
    const events = streamed(t2c0, summaryAnswer).slice(0, -1);
    const outcome = given(heavyTurn, followUp("next")).whenAll(events);
    outcome.thenExpect({ command: "continue_llm", emit: [], appended: [] });
    assert.equal(outcome.transition.state.pending?.callID, t2c0);
  },
  L36() {
    const outcome = given(heavyTurn, followUp("next"))
      .whenAll(streamed(t2c0, summaryAnswer))
      .thenExpect({ command: "call_llm", status: "waiting_llm", emit: [], appended: [] });
    const after = outcome.transition.state.committed;
    assert.deepEqual(after.compactions, [
      {
        callID: t2c0,
        upTo: 1,
        trigger: "threshold",
        summary: "The user said hi.",
        at: T0,
        historyLength: 3,
      },
    ]);
    assert.equal(after.call?.afterCompaction, true);
    const command = outcome.transition.command;
    assert.ok(command.type === "call_llm");
    assert.equal(command.model, "test-model");
    assert.equal(command.callID, toCallID(CONVERSATION_ID, "t2", 1));
    assert.deepEqual(command.request.messages, [
      {
        role: "user",
        content: [text(`${SUMMARY_PREFIX}The user said hi.`)],
        timestamp: T0,
      },
      heavyAnswer,
      userMessage("next"),
    ]);
    // the summarize action's turn ends with the compaction
    given(twoTurns, compact())
      .whenAll(streamed(t3c0, summaryAnswer))
      .thenExpect({ command: { type: "final", message: summaryAnswer }, status: "final" });
  },
  L37() {
    const empty = assistantMessage([]);
    const failedDone = given(heavyTurn, followUp("next"))
      .whenAll(streamed(t2c0, empty))
      .thenExpect({ command: "failed", status: "failed", appended: [] });
    assert.equal(failedDone.transition.state.committed.compactions, undefined);
    const error = { ...assistantMessage([], "error"), errorMessage: "upstream 500" };
    const failedError = given(heavyTurn, followUp("next"))
      .when(llm(t2c0, { type: "error", reason: "error", error }))
      .thenExpect({ command: "failed", status: "failed", emit: ["error"], appended: [] });
    assert.match(
      failedError.transition.state.committed.failure?.message ?? "",
      /could not be summarised: upstream 500\. Nothing was lost/,
    );
  },
  L38() {
    const aborted = { ...assistantMessage([], "aborted"), errorMessage: "Request was aborted" };
    given(heavyTurn, followUp("next"))
      .when(llm(t2c0, { type: "error", reason: "aborted", error: aborted }))
      .thenExpect({ command: "canceled", status: "canceled", appended: [] });
  },
  L39() {
    const outcome = given(twoTurns, followUp("three"))
      .when(overflow(t3c0))
      .thenExpect({ command: "call_llm", status: "waiting_llm", emit: [], appended: [] });
    assert.deepEqual(outcome.transition.state.committed.call?.summary, {
      upTo: 3,
      trigger: "overflow",
    });
    assert.deepEqual(toStepRecords(outcome.before.committed, outcome.transition), [
      { type: "llm_call_status", callID: t3c0, status: "failed" },
    ]);
    // the summary's done repeats the request, compacted
    const repeated = given(twoTurns, followUp("three"), overflow(t3c0))
      .whenAll(streamed(toCallID(CONVERSATION_ID, "t3", 1), summaryAnswer))
      .thenExpect({ command: "call_llm" });
    const command = repeated.transition.command;
    assert.equal(command.type === "call_llm" && command.model, "test-model");
    assert.equal(command.type === "call_llm" && command.request.messages.length, 3);
  },
  L40() {
    const t3c1 = toCallID(CONVERSATION_ID, "t3", 1);
    const t3c2 = toCallID(CONVERSATION_ID, "t3", 2);
    given(twoTurns, followUp("three"), overflow(t3c0), streamed(t3c1, summaryAnswer))
      .when(overflow(t3c2))
      .thenExpect({ command: "failed", status: "failed", emit: ["error"] });
    // automatic compaction off
    given(start("one"), streamed(call0, answer), followUp("two"))
      .when(overflow(toCallID(CONVERSATION_ID, "t2", 0)))
      .thenExpect({ command: "failed", status: "failed" });
    // nothing to compact
    given(start("one", { settings: COMPACTING }))
      .when(overflow(call0))
      .thenExpect({ command: "failed", status: "failed" });
  },
  L41() {
    const big = toolCall("tc-big", "read", { path: "big.log" });
    const reading = assistantWithUsage([text("Reading."), big], 100);
    const before = [
      start("read the log", { settings: COMPACTING }),
      ...streamed(call0, reading),
      result(big, "z".repeat(1_100)),
      ...streamed(call1, assistantWithUsage([text("It is long.")], 480)),
    ];
    const outcome = given(before)
      .when(followUp("and now?"))
      .thenExpect({
        command: "call_llm",
        status: "waiting_llm",
        appended: [userMessage("and now?")],
      });
    const after = outcome.transition.state.committed;
    assert.equal(after.call?.summary, undefined, "no summary call");
    assert.deepEqual(after.elisions, [{ upTo: 3, historyLength: 5, afterCompactions: 0 }]);
    const command = outcome.transition.command;
    assert.ok(command.type === "call_llm");
    assert.equal(command.model, "test-model");
    const sent = command.request.messages[2];
    assert.ok(sent?.role === "toolResult");
    assert.match(
      JSON.stringify(sent.content),
      /output of read \(1100 characters\) is no longer shown/,
    );
    assert.equal(after.messages[2], before.length > 0 ? after.messages[2] : undefined);
    assert.equal(
      JSON.stringify(after.messages[2]).includes("z".repeat(1_100)),
      true,
      "history keeps it",
    );
  },
  L42() {
    for (const kind of FAILOVER) {
      const outcome = given(routedStart, llm(call0, toEvents(answer)[0] as ResponseEvent))
        .when(failed(call0, kind))
        .thenExpect({ command: "call_llm", emit: [], status: "waiting_llm", appended: [] });
      const command = outcome.transition.command;
      assert.ok(command.type === "call_llm");
      assert.equal(command.callID, call1);
      assert.equal(command.model, "backup-1");
      assert.deepEqual(command.failover, {
        from: "test-model",
        failedCallID: call0,
        kind,
        message: "upstream said no",
      });
      assert.deepEqual(command.request, routedRequest());
      assert.deepEqual(outcome.transition.state.committed.call, {
        callID: call1,
        step: 1,
        model: "backup-1",
        tried: ["test-model"],
      });
      // The failed call is closed in the same commit.
      assert.deepEqual(toStepRecords(outcome.before.committed, outcome.transition), [
        { type: "llm_call_status", callID: call0, status: "failed" },
      ]);
    }
    // The second fallback after the first one failed too.
    const third = given(routedStart, failed(call0, "rate_limited"))
      .when(failed(call1, "connection"))
      .thenExpect({ command: "call_llm", status: "waiting_llm" });
    assert.ok(third.transition.command.type === "call_llm");
    assert.equal(third.transition.command.model, "backup-2");
    // The last candidate has no fallback left: the runner keeps its full retry policy.
    assert.equal(third.transition.command.fallbackLeft, undefined);
    const first = given().when(routedStart).transition.command;
    assert.ok(first.type === "call_llm" && first.fallbackLeft === true);
    const plain = given().when(start("hi")).transition.command;
    assert.ok(plain.type === "call_llm" && plain.fallbackLeft === undefined);
    assert.deepEqual(third.transition.state.committed.call?.tried, ["test-model", "backup-1"]);
  },
  L43() {
    // Not a failover kind, or no kind at all.
    for (const input of [failed(call0, "other"), llm(call0, errorEvent())]) {
      given(routedStart).when(input).thenExpect({ command: "failed", status: "failed" });
    }
    // Every candidate tried.
    given(routedStart, failed(call0, "overloaded"), failed(call1, "overloaded"))
      .when(failed(toCallID(CONVERSATION_ID, "t1", 2), "overloaded"))
      .thenExpect({ command: "failed", status: "failed", appended: [] });
    // After the first token: final, and the model that streamed is kept.
    const late = given(routedStart, failed(call0, "rate_limited"), openStream(call1))
      .when(failed(call1, "server_error"))
      .thenExpect({ command: "failed", status: "failed", emit: ["error"] });
    assert.deepEqual(late.transition.state.committed.route, {
      requested: "test-model",
      model: "backup-1",
    });
    // No fallbacks configured: as L14.
    given(start("hi"), openStream(call0).slice(0, 1))
      .when(failed(call0, "rate_limited"))
      .thenExpect({ command: "failed", status: "failed" });
  },
  L44() {
    const outcome = given(routedStart, failed(call0, "rate_limited"))
      .whenAll(streamed(call1, answer))
      .thenExpect({ command: "final", status: "final", appended: [answer] });
    assert.deepEqual(outcome.transition.state.committed.route, {
      requested: "test-model",
      model: "backup-1",
    });
    // Back on the model asked for: no route.
    const back = given(routedStart, failed(call0, "rate_limited"), streamed(call1, answer))
      .given(
        start("more", { settings: ROUTED }),
        failed(toCallID(CONVERSATION_ID, "t2", 0), "connection"),
      )
      .whenAll(streamed(toCallID(CONVERSATION_ID, "t2", 1), answer))
      .thenExpect({ command: "final" });
    assert.equal(back.transition.state.committed.route, undefined);
  },
  L45() {
    const stuck = given(routedStart, failed(call0, "rate_limited"), streamed(call1, answer));
    const next = stuck
      .when(start("again", { settings: ROUTED }))
      .thenExpect({ command: "call_llm" });
    assert.ok(next.transition.command.type === "call_llm");
    assert.equal(next.transition.command.model, "backup-1");
    assert.equal(next.transition.command.failover, undefined);
    // The user picks another model: the route no longer applies.
    const other = stuck
      .when(start("again", { settings: { ...SETTINGS, model: "other-model" } }))
      .thenExpect({ command: "call_llm" });
    assert.ok(other.transition.command.type === "call_llm");
    assert.equal(other.transition.command.model, "other-model");
  },
  L46() {
    const outcome = given(routedStart, failed(call0, "rate_limited"), openStream(call1))
      .when(cancel())
      .thenExpect({ command: "canceled", status: "canceled", appended: [] });
    assert.deepEqual(outcome.transition.state.committed.route, {
      requested: "test-model",
      model: "backup-1",
    });
    // Canceled before the first token: nothing to keep.
    const early = given(routedStart, failed(call0, "rate_limited"))
      .when(cancel())
      .thenExpect({ command: "canceled" });
    assert.equal(early.transition.state.committed.route, undefined);
  },
  L47() {
    // read, task, task, shell, task: the two tasks go together, never with the read before them.
    const taskA = toolCall("tc-ta", "task", { prompt: "a" });
    const taskB = toolCall("tc-tb", "task", { prompt: "b" });
    const taskC = toolCall("tc-tc", "task", { prompt: "c" });
    const message = assistantMessage([readA, taskA, taskB, shellS, taskC]);
    const started = given(start("split", { settings: TASK_SETTINGS }))
      .when(streamed(call0, message).at(-1) as Input)
      .thenExpect({ command: op(readA) });
    const waiting = given(start("split", { settings: TASK_SETTINGS }), ...streamed(call0, message));
    assert.deepEqual(started.transition.state.committed.waiting?.calls, [
      readA,
      taskA,
      taskB,
      shellS,
      taskC,
    ]);
    waiting
      .when(result(readA, "a"))
      .thenExpect({ command: { type: "call_clients", calls: [op(taskA), op(taskB)] } });
    // The tasks' results, in any order, then the shell alone, then the last task alone.
    waiting
      .given(result(readA, "a"), result(taskB, "b done"))
      .when(result(taskA, "a done"))
      .thenExpect({
        command: op(shellS),
        appended: [toolResultOf(taskA, "a done"), toolResultOf(taskB, "b done")],
      });
    // A resume (after a restart) asks again for the whole batch of tasks, as it was planned;
    // with one of them answered, for the other one.
    const inTasks = waiting.given(result(readA, "a")).state.committed;
    assert.deepEqual(toResumeCommand(inTasks), {
      type: "call_clients",
      calls: [op(taskA), op(taskB)],
    });
    const oneLeft = waiting.given(result(readA, "a"), result(taskA, "a done")).state.committed;
    assert.deepEqual(toResumeCommand(oneLeft), op(taskB));
  },
  L48() {
    // An explore subagent's settings: read only, calls to anything else refused by the loop.
    const explore: TurnSettings = {
      ...BATCH_SETTINGS,
      tools: [BATCH_SETTINGS.tools[0] as Tool],
      onlyOfferedTools: true,
    };
    const message = assistantMessage([readA, shellS, readB]);
    const refused = {
      ...toolResultOf(shellS, REFUSED("shell")),
      isError: true,
      timestamp: message.timestamp,
    };
    const outcome = given(start("look", { settings: explore }), openStream(call0, message))
      .when(streamed(call0, message).at(-1) as Input)
      .thenExpect({ command: op(readA), status: "waiting_client" });
    // The refusal waits in order; the reads run, and the shell never reaches the client.
    assert.deepEqual(outcome.transition.state.committed.waiting?.early, [null, refused, null]);
    given(start("look", { settings: explore }), ...streamed(call0, message))
      .when(result(readA, "a"))
      .thenExpect({
        command: op(readB),
        appended: [toolResultOf(readA, "a"), refused],
      });
    // Every call refused: straight to the next model call.
    const onlyShell = assistantMessage([shellS]);
    given(start("look", { settings: explore }), openStream(call0, onlyShell))
      .when(streamed(call0, onlyShell).at(-1) as Input)
      .thenExpect({
        command: "call_llm",
        appended: [onlyShell, { ...refused, timestamp: onlyShell.timestamp }],
      });
    // Without the flag the same call goes to the client, which decides what the name means.
    given(start("look", { settings: { ...explore, onlyOfferedTools: undefined } }))
      .given(openStream(call0, onlyShell))
      .when(streamed(call0, onlyShell).at(-1) as Input)
      .thenExpect({ command: op(shellS) });
  },
  L49() {
    const parent = {
      conversationID: "parent-1",
      operationID: "parent-1:t1:c0:tc-9",
      toolCallID: "tc-9",
      subagentType: "explore",
    };
    const first = given()
      .when({ ...(start("look around") as StartInput), parent })
      .thenExpect({ command: "call_llm", status: "waiting_llm" });
    assert.deepEqual(first.transition.state.committed.parent, parent);
    // Set once: a later start with another link leaves it.
    const later = given(
      { ...(start("look around") as StartInput), parent },
      streamed(call0, answer),
    )
      .when({
        ...(start("more") as StartInput),
        parent: { ...parent, toolCallID: "tc-other" },
      })
      .thenExpect({ command: "call_llm" });
    assert.deepEqual(later.transition.state.committed.parent, parent);
    // A conversation without a link has none.
    assert.equal(given(start("hi")).state.committed.parent, undefined);
  },
  L50() {
    // Each turn's start is recorded: its number, the history's length before it, the client's ids.
    const first = {
      ...(start("one", { settings: COMPACTING }) as StartInput),
      origin: "r1",
      messageID: "m1",
    };
    const state = given(first, streamed(call0, answer), followUp("two"), streamed(t2c0, answer))
      .when({ type: "compact", inputID: "r3:0", at: T0, origin: "r3" })
      .thenExpect({ command: "call_llm", status: "waiting_llm", appended: [] }).transition
      .state.committed;
    assert.deepEqual(state.turnStarts, [
      { turn: 1, at: 0, origin: "r1", messageID: "m1" },
      // The turn that ended last keeps its end (L51).
      { turn: 2, at: 2, end: { type: "final" } },
      { turn: 3, at: 4, origin: "r3" },
    ]);
  },
  L51() {
    // The step that ends a turn keeps how on its record; the end an earlier record kept is dropped.
    const first = { ...(start("one") as StartInput), origin: "r1" };
    const endOf = (state: { committed: { turnStarts?: readonly { end?: unknown }[] } }) =>
      state.committed.turnStarts?.map((record) => record.end);
    const ended = given(first)
      .whenAll(streamed(call0, answer))
      .thenExpect({ command: "final", status: "final" }).transition.state;
    assert.deepEqual(endOf(ended), [{ type: "final" }]);
    // Failed: the error text and provider the turn's stream was told (wire errors are made from them).
    const error = { ...assistantMessage([], "error"), errorMessage: "upstream 500" };
    const failedTurn = given(first, streamed(call0, answer), followUp("two"), openStream(t2c0))
      .when(llm(t2c0, { type: "error", reason: "error", error }))
      .thenExpect({ command: "failed", status: "failed" }).transition.state;
    assert.deepEqual(endOf(failedTurn), [
      undefined,
      { type: "failed", message: "upstream 500", provider: "test" },
    ]);
    // Canceled: the cancel's reason; while a turn runs its record has no end.
    const running = given(first, streamed(call0, answer), followUp("two")).state;
    assert.deepEqual(endOf(running), [{ type: "final" }, undefined]);
    const canceled = given(first, streamed(call0, answer), followUp("two"))
      .when(cancel("stop"))
      .thenExpect({ command: "canceled", status: "canceled" }).transition.state;
    assert.deepEqual(endOf(canceled), [undefined, { type: "canceled", reason: "stop" }]);
    // A rejected input ends nothing.
    given(first, streamed(call0, answer)).when(cancel()).thenRejected("not_running");
  },
};

const TASK_SETTINGS: TurnSettings = {
  ...BATCH_SETTINGS,
  concurrentTools: ["task"],
};

const REFUSED = (name: string) =>
  `Not run: the tool "${name}" is not available to this subagent. Use only the tools you were given.`;

const FAILOVER = [
  "rate_limited",
  "overloaded",
  "server_error",
  "connection",
  "cooling_down",
] as const;
const ROUTED = { ...SETTINGS, fallbacks: ["backup-1", "backup-2"] };
const routedStart = start("hi", { settings: ROUTED });

function routedRequest() {
  const state = given(routedStart).state.committed;
  return {
    systemPrompt: ROUTED.systemPrompt,
    messages: [...state.messages],
    tools: [...ROUTED.tools],
  };
}

function errorEvent(): ResponseEvent {
  const error = { ...assistantMessage([], "error"), errorMessage: "upstream said no" };
  return { type: "error", reason: "error", error };
}

function failed(callID: string, kind: FailureKind): Input {
  return { type: "llm_event", callID, event: errorEvent(), failure: kind };
}

function toolResultOf(call: typeof readA, output: string) {
  return {
    role: "toolResult" as const,
    toolCallId: call.id,
    toolName: call.name,
    content: [{ type: "text" as const, text: output }],
    isError: false,
    timestamp: T0,
  };
}

describe("transition: the (status, input) table", () => {
  for (const [row, check] of Object.entries(rows)) test(row, check);

  test("every row of README.md has a test, and every test a row", () => {
    const readme = readFileSync(new URL("./README.md", import.meta.url), "utf8");
    const documented = [...readme.matchAll(/^\| (L\d+) +\|/gm)].map((match) => match[1]);
    assert.deepEqual(documented, Object.keys(rows));
  });
});
