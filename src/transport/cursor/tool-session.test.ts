import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import fc from "fast-check";
import { fromClientMessage } from "./client-message.ts";
import {
  AgentClientMessageSchema,
  type AgentServerMessage,
} from "./gen/agent/v1/agent_stream_pb.js";
import { callClient, execReply, resultText, T0, turnState } from "./testing.ts";
import {
  abortToolCalls,
  continueToolCall,
  expireToolCall,
  startToolCall,
  toExecID,
  UNKNOWN_OUTCOME,
} from "./tool-session.ts";
import type { TurnState } from "./turn-state.ts";

const CONTEXT = { at: T0 + 5, inputID: "req:3" };

function kinds(messages: readonly AgentServerMessage[]): string[] {
  return messages.map((message) =>
    message.message.case === "interactionUpdate"
      ? (message.message.value.message.case ?? "")
      : (message.message.case ?? ""),
  );
}

function execIDOf(state: TurnState): number {
  const awaiting = state.open.at(-1)?.awaiting;
  return awaiting?.type === "exec" ? awaiting.id : -1;
}

const readSuccess = (state: ReturnType<typeof turnState>) =>
  execReply(state, {
    case: "readResult",
    value: { result: { case: "success", value: { output: { case: "content", value: "x\n" } } } },
  });

test("a client tool: started → checkpoint (pending) → exec; completed → checkpoint", () => {
  const state = turnState();
  const started = startToolCall(state, callClient("read_file", { path: "a.ts" }), CONTEXT);
  assert.deepEqual(kinds(started.messages), [
    "toolCallStarted",
    "conversationCheckpointUpdate",
    "execServerMessage",
  ]);
  assert.equal(started.input, null);
  const checkpoint = started.messages[1]?.message;
  assert.ok(checkpoint?.case === "conversationCheckpointUpdate");
  assert.equal(checkpoint.value.pendingToolCalls.length, 1);
  assert.deepEqual(JSON.parse(checkpoint.value.pendingToolCalls[0] ?? ""), {
    id: "toolu_01",
    role: "assistant",
    content: [
      { type: "tool-call", toolCallId: "toolu_01", toolName: "read_file", args: { path: "a.ts" } },
    ],
  });
  const done = continueToolCall(
    started.state,
    fromClientMessage(readSuccess(started.state)),
    CONTEXT,
  );
  assert.deepEqual(kinds(done.messages), ["toolCallCompleted", "conversationCheckpointUpdate"]);
  const after = done.messages[1]?.message;
  assert.ok(after?.case === "conversationCheckpointUpdate");
  assert.deepEqual(after.value.pendingToolCalls, []);
  assert.deepEqual(done.state.open, []);
  assert.deepEqual(done.input, {
    type: "tool_result",
    inputID: "req:3",
    at: T0 + 5,
    message: {
      role: "toolResult",
      toolCallId: "toolu_01",
      toolName: "read_file",
      content: [{ type: "text", text: "1|x" }],
      isError: false,
      timestamp: T0 + 5,
    },
  });
});

test("ids: call_id and model_call_id on UI updates; exec id and exec_id on the exec", () => {
  const state = turnState({ nextID: 7 });
  const started = startToolCall(
    state,
    callClient("read_file", { path: "a.ts" }, "call_abc"),
    CONTEXT,
  );
  const update = started.messages[0]?.message;
  assert.ok(
    update?.case === "interactionUpdate" && update.value.message.case === "toolCallStarted",
  );
  assert.equal(update.value.message.value.callId, "call_abc");
  assert.equal(update.value.message.value.modelCallId, state.modelCallID);
  assert.equal(update.value.message.value.toolCall?.toolCallId, "call_abc");
  assert.equal(update.value.message.value.toolCall?.startedAtMs, BigInt(T0 + 5));
  const exec = started.messages[2]?.message;
  assert.ok(exec?.case === "execServerMessage");
  assert.equal(exec.value.id, 7);
  assert.equal(exec.value.execId, toExecID(callClient("read_file", {}, "call_abc").operationID, 7));
  assert.equal(started.state.nextID, 8);
});

test("exec ids are deterministic and differ per operation and step", () => {
  assert.equal(toExecID("op", 1), toExecID("op", 1));
  assert.notEqual(toExecID("op", 1), toExecID("op", 2));
  assert.notEqual(toExecID("op", 1), toExecID("op2", 1));
  assert.match(toExecID("op", 1), /^exec-[0-9a-f]{24}$/);
});

test("a reply matches by exec_id, or by id when the client sent no exec_id", () => {
  const started = startToolCall(turnState(), callClient("read_file", { path: "a.ts" }), CONTEXT);
  const reply = readSuccess(started.state);
  const byID = create(AgentClientMessageSchema, reply);
  assert.ok(byID.message.case === "execClientMessage");
  byID.message.value.execId = "";
  assert.notEqual(continueToolCall(started.state, fromClientMessage(byID), CONTEXT).input, null);
  const wrongExecID = create(AgentClientMessageSchema, reply);
  assert.ok(wrongExecID.message.case === "execClientMessage");
  wrongExecID.message.value.execId = "exec-other";
  const ignored = continueToolCall(started.state, fromClientMessage(wrongExecID), CONTEXT);
  assert.equal(ignored.state, started.state, "state unchanged");
  assert.match(ignored.ignored ?? "", /not a running one/);
});

test("stream_close and heartbeats are not terminal; a throw is", () => {
  const started = startToolCall(turnState(), callClient("read_file", { path: "a.ts" }), CONTEXT);
  const id = execIDOf(started.state);
  for (const message of [
    { case: "streamClose" as const, value: { id } },
    { case: "heartbeat" as const, value: { id } },
  ]) {
    const event = fromClientMessage(
      create(AgentClientMessageSchema, {
        message: { case: "execClientControlMessage", value: { message } },
      }),
    );
    const step = continueToolCall(started.state, event, CONTEXT);
    assert.equal(step.state, started.state);
    assert.notEqual(step.ignored, null);
  }
  const thrown = continueToolCall(
    started.state,
    { type: "exec_throw", id, error: "EPIPE" },
    CONTEXT,
  );
  assert.equal(thrown.input?.message.isError, true);
  assert.match(resultText(thrown.input?.message ?? assert.fail()), /could not read .*EPIPE/);
  assert.deepEqual(kinds(thrown.messages), ["toolCallCompleted", "conversationCheckpointUpdate"]);
});

test("replies when no call runs, or for a query while an exec runs, are ignored", () => {
  const idle = continueToolCall(turnState(), { type: "exec_throw", id: 1, error: "x" }, CONTEXT);
  assert.match(idle.ignored ?? "", /no tool call is running/);
  const started = startToolCall(turnState(), callClient("read_file", { path: "a.ts" }), CONTEXT);
  const query = continueToolCall(
    started.state,
    { type: "interaction_response", id: 1, result: { case: undefined } },
    CONTEXT,
  );
  assert.equal(query.state, started.state);
  const again = startToolCall(started.state, callClient("read_file", { path: "a.ts" }), CONTEXT);
  assert.match(again.ignored ?? "", /already running/);
});

test("a batch: several calls open at once, each reply matched to its own call by exec id", () => {
  const calls = ["a.ts", "b.ts", "c.ts"].map((path, i) =>
    callClient("read_file", { path }, `toolu_0${i + 1}`),
  );
  let state = turnState();
  const sent: { id: number; execID: string; operationID: string }[] = [];
  for (const command of calls) {
    const step = startToolCall(state, command, CONTEXT);
    assert.equal(step.ignored, null);
    assert.equal(step.operationID, command.operationID);
    state = step.state;
    const exec = step.messages.at(-1)?.message;
    assert.ok(exec?.case === "execServerMessage");
    sent.push({ id: exec.value.id, execID: exec.value.execId, operationID: command.operationID });
  }
  // distinct numeric ids and exec ids, every call pending in the checkpoint
  assert.equal(new Set(sent.map((exec) => exec.id)).size, 3);
  assert.equal(new Set(sent.map((exec) => exec.execID)).size, 3);
  assert.equal(state.open.length, 3);
  // replies in the order c, a, b complete c, a, b
  for (const index of [2, 0, 1]) {
    const exec = sent[index] ?? assert.fail();
    const reply = create(AgentClientMessageSchema, {
      message: {
        case: "execClientMessage",
        value: {
          id: exec.id,
          execId: exec.execID,
          message: {
            case: "readResult",
            value: {
              result: { case: "success", value: { output: { case: "content", value: "x\n" } } },
            },
          },
        },
      },
    });
    const step = continueToolCall(state, fromClientMessage(reply), CONTEXT);
    assert.equal(step.operationID, exec.operationID);
    assert.equal(step.input?.message.toolCallId, `toolu_0${index + 1}`);
    const checkpoint = step.messages.at(-1)?.message;
    assert.ok(checkpoint?.case === "conversationCheckpointUpdate");
    assert.equal(checkpoint.value.pendingToolCalls.length, step.state.open.length);
    state = step.state;
  }
  assert.deepEqual(state.open, []);
  assert.equal(state.steps.length, 3);
});

test("unknown tools and invalid JSON arguments are isError results without UI or client traffic", () => {
  const unknown = startToolCall(turnState(), callClient("launch_rockets", {}), CONTEXT);
  assert.deepEqual(unknown.messages, []);
  assert.match(
    resultText(unknown.input?.message ?? assert.fail()),
    /no tool named "launch_rockets"/,
  );
  const command = callClient("read_file", {});
  const broken = startToolCall(
    turnState(),
    { ...command, toolCall: { ...command.toolCall, argumentsError: "Unexpected token } at 12" } },
    CONTEXT,
  );
  assert.equal(broken.input?.message.isError, true);
  assert.match(
    resultText(broken.input?.message ?? assert.fail()),
    /not a valid JSON object: Unexpected token/,
  );
});

test("abort: exec abort for the running exec, the call closed in the UI and recorded", () => {
  const started = startToolCall(turnState(), callClient("read_file", { path: "a.ts" }), CONTEXT);
  const id = execIDOf(started.state);
  const aborted = abortToolCalls(started.state, T0 + 9, "canceled");
  assert.deepEqual(kinds(aborted.messages), ["execServerControlMessage", "toolCallCompleted"]);
  const abort = aborted.messages[0]?.message;
  assert.ok(abort?.case === "execServerControlMessage" && abort.value.message.case === "abort");
  assert.equal(abort.value.message.value.id, id);
  assert.deepEqual(aborted.state.open, []);
  assert.equal(aborted.state.steps.at(-1)?.message.case, "toolCall");
  assert.deepEqual(abortToolCalls(turnState(), T0, "x").messages, []);
  // a batch: every running exec is aborted and every call closed
  const second = startToolCall(
    started.state,
    callClient("read_file", { path: "b.ts" }, "toolu_02"),
    CONTEXT,
  );
  const both = abortToolCalls(second.state, T0 + 9, "canceled");
  assert.deepEqual(kinds(both.messages), [
    "execServerControlMessage",
    "toolCallCompleted",
    "execServerControlMessage",
    "toolCallCompleted",
  ]);
  assert.deepEqual(both.state.open, []);
});

test("the state passed in is never mutated", () => {
  const state = turnState();
  const before = structuredClone(state);
  const started = startToolCall(
    state,
    callClient("edit_file", { path: "a", old_string: "x", new_string: "y" }),
    CONTEXT,
  );
  continueToolCall(started.state, fromClientMessage(readSuccess(started.state)), CONTEXT);
  assert.deepEqual(state, before);
});

/** The exec an earlier process sent for `operationID` as exec number `id`, answered late. */
function lateReply(
  operationID: string,
  id: number,
  result: Parameters<typeof execReply>[1],
): ReturnType<typeof fromClientMessage> {
  return fromClientMessage(
    create(AgentClientMessageSchema, {
      message: {
        case: "execClientMessage",
        value: { id, execId: toExecID(operationID, id), message: result },
      },
    }),
  );
}

const SHELL_EXIT = {
  case: "shellStream" as const,
  value: { event: { case: "exit" as const, value: { code: 0, cwd: "/w" } } },
};

test("recovered, with effects: nothing is sent again; a late reply to the earlier exec completes it", () => {
  const command = callClient("shell", { command: "make" });
  const state = { ...turnState(), nextID: 2 ** 30 };
  const recovered = startToolCall(state, command, CONTEXT, { recovered: true });
  assert.deepEqual(kinds(recovered.messages), ["toolCallStarted", "conversationCheckpointUpdate"]);
  assert.equal(recovered.state.open.at(-1)?.awaiting.type, "earlier");
  // Exec 2 of the previous process (its ids started at 1), whatever numbers this one uses.
  const late = continueToolCall(recovered.state, lateReply(command.operationID, 2, SHELL_EXIT), {
    ...CONTEXT,
    inputID: "late",
  });
  assert.equal(late.ignored, null);
  assert.equal(late.input?.message.isError, false);
  // A reply that is not for this operation, or of another kind, is still ignored.
  const foreign = continueToolCall(recovered.state, lateReply("other-op", 2, SHELL_EXIT), CONTEXT);
  assert.match(foreign.ignored ?? "", /not a running one/);
  const wrongKind = continueToolCall(
    recovered.state,
    lateReply(command.operationID, 2, { case: "writeResult", value: {} }),
    CONTEXT,
  );
  assert.match(wrongKind.ignored ?? "", /not a running one/);
});

test("recovered, with effects, no late reply: the model is told the outcome is unknown", () => {
  const write = callClient("write_file", { path: "a.txt", content: "x" });
  const recovered = startToolCall(turnState(), write, CONTEXT, { recovered: true });
  const expired = expireToolCall(recovered.state, write.operationID, CONTEXT);
  assert.equal(expired.input?.message.isError, true);
  assert.equal(resultText(expired.input?.message ?? assert.fail()), UNKNOWN_OUTCOME);
  assert.deepEqual(expired.state.open, []);
  assert.deepEqual(kinds(expired.messages), ["toolCallCompleted", "conversationCheckpointUpdate"]);
  // Only a recovered call that still waits can expire.
  const live = startToolCall(turnState(), write, CONTEXT);
  assert.notEqual(expireToolCall(live.state, write.operationID, CONTEXT).ignored, null);
});

test("recovered, read-only: sent again at once, and a late reply to the earlier exec is accepted too", () => {
  const command = callClient("read_file", { path: "a.ts" });
  const recovered = startToolCall(turnState(), command, CONTEXT, { recovered: true });
  assert.deepEqual(kinds(recovered.messages), [
    "toolCallStarted",
    "conversationCheckpointUpdate",
    "execServerMessage",
  ]);
  const late = continueToolCall(
    recovered.state,
    lateReply(command.operationID, 7, {
      case: "readResult",
      value: { result: { case: "success", value: { output: { case: "content", value: "x\n" } } } },
    }),
    CONTEXT,
  );
  assert.equal(late.input?.message.isError, false);
  // The reply to the exec sent again also works (whichever comes first).
  const fresh = continueToolCall(
    recovered.state,
    fromClientMessage(readSuccess(recovered.state)),
    CONTEXT,
  );
  assert.equal(fresh.input?.message.isError, false);
});

test("a call that was not recovered accepts no reply to another exec of its operation", () => {
  const command = callClient("read_file", { path: "a.ts" });
  const started = startToolCall(turnState(), command, CONTEXT);
  const other = continueToolCall(
    started.state,
    lateReply(command.operationID, 7, {
      case: "readResult",
      value: { result: { case: "success", value: { output: { case: "content", value: "" } } } },
    }),
    CONTEXT,
  );
  assert.match(other.ignored ?? "", /not a running one/);
});

test("a batch, any reply order with heartbeats, stream_closes and duplicates: each call completes once, with its own result", () => {
  const size = 4;
  const calls = Array.from({ length: size }, (_, i) =>
    callClient("read_file", { path: `f${i}.ts` }, `toolu_b${i}`),
  );
  let opened = turnState();
  const execs: { id: number; execID: string }[] = [];
  for (const command of calls) {
    const step = startToolCall(opened, command, CONTEXT);
    opened = step.state;
    const exec = step.messages.at(-1)?.message;
    assert.ok(exec?.case === "execServerMessage");
    execs.push({ id: exec.value.id, execID: exec.value.execId });
  }
  const reply = (index: number) => {
    const exec = execs[index] ?? assert.fail();
    return fromClientMessage(
      create(AgentClientMessageSchema, {
        message: {
          case: "execClientMessage",
          value: {
            id: exec.id,
            execId: exec.execID,
            message: {
              case: "readResult",
              value: {
                result: {
                  case: "success",
                  value: { output: { case: "content", value: `content ${index}\n` } },
                },
              },
            },
          },
        },
      }),
    );
  };
  const noise = (index: number) =>
    fromClientMessage(
      create(AgentClientMessageSchema, {
        message: {
          case: "execClientControlMessage",
          value: { message: { case: "streamClose", value: { id: execs[index]?.id ?? 0 } } },
        },
      }),
    );
  const arbEvent = fc.oneof(
    { weight: 3, arbitrary: fc.nat({ max: size - 1 }).map((i) => ({ kind: "reply", i }) as const) },
    { weight: 1, arbitrary: fc.nat({ max: size - 1 }).map((i) => ({ kind: "noise", i }) as const) },
  );
  fc.assert(
    fc.property(
      fc.array(arbEvent, { maxLength: 20 }),
      fc.array(fc.nat(), { minLength: size, maxLength: size }),
      (events, keys) => {
        // Every call's reply at least once, in a random order, with the generated events mixed in.
        const order = [...Array.from({ length: size }, (_, i) => i)].sort(
          (a, b) => (keys[a] ?? 0) - (keys[b] ?? 0) || a - b,
        );
        const all = [...events, ...order.map((i) => ({ kind: "reply", i }) as const)];
        let state = opened;
        const completed: string[] = [];
        for (const event of all) {
          const step = continueToolCall(
            state,
            event.kind === "reply" ? reply(event.i) : noise(event.i),
            CONTEXT,
          );
          state = step.state;
          if (step.input !== null) {
            const call = calls[event.i] ?? assert.fail();
            assert.equal(step.operationID, call.operationID);
            assert.equal(step.input.message.toolCallId, call.toolCall.id);
            assert.match(resultText(step.input.message), new RegExp(`content ${event.i}`));
            completed.push(call.toolCall.id);
          }
        }
        assert.deepEqual([...completed].sort(), calls.map((call) => call.toolCall.id).sort());
        assert.deepEqual(state.open, []);
      },
    ),
    { numRuns: 200 },
  );
});
