import assert from "node:assert/strict";
import { test } from "node:test";
import { createConversation } from "./state.ts";
import { type StepRecord, toStepRecords } from "./step-records.ts";
import { SETTINGS, toolCall } from "./testing.ts";
import type { Command, ConversationState, Status, Transition } from "./types.ts";

const READ = toolCall("call-1", "read", { path: "a.ts" });

function state(status: Status, more: Partial<ConversationState> = {}): ConversationState {
  return {
    ...createConversation("conv-1").committed,
    status,
    turnID: "turn-1",
    settings: SETTINGS,
    ...more,
  };
}

function step(after: ConversationState, command: Command): Transition {
  return { state: { committed: after, pending: null }, emit: [], command, rejected: null };
}

const CALL = { callID: "call:1", step: 0 };
const WAITING = {
  calls: [READ, toolCall("call-2", "read"), toolCall("call-3", "read")],
  answered: 1,
  early: [null, null, null],
  operationIDs: ["op-1", "op-2", "op-3"],
};
const WAIT: Command = { type: "wait_input" };

const cases: [string, ConversationState, Transition, StepRecord[]][] = [
  [
    "a tool call to send: a planned operation, and the model call that asked for it committed",
    state("waiting_llm", { call: CALL }),
    step(state("waiting_client"), { type: "call_client", operationID: "op-1", toolCall: READ }),
    [
      {
        type: "client_operation",
        operation: {
          operationID: "op-1",
          conversationID: "conv-1",
          turnID: "turn-1",
          toolCallID: "call-1",
          request: READ,
          status: "planned",
        },
      },
      { type: "llm_call_status", callID: "call:1", status: "committed" },
    ],
  ],
  [
    "a batch of tool calls to send: one planned operation per call, in order",
    state("waiting_client"),
    step(state("waiting_client"), {
      type: "call_clients",
      calls: [
        { type: "call_client", operationID: "op-2", toolCall: toolCall("call-2", "read") },
        { type: "call_client", operationID: "op-3", toolCall: toolCall("call-3", "read") },
      ],
    }),
    ["op-2", "op-3"].map((operationID, i) => ({
      type: "client_operation" as const,
      operation: {
        operationID,
        conversationID: "conv-1",
        turnID: "turn-1",
        toolCallID: `call-${i + 2}`,
        request: toolCall(`call-${i + 2}`, "read"),
        status: "planned" as const,
      },
    })),
  ],
  [
    "the model call ends the turn: committed",
    state("waiting_llm", { call: CALL }),
    step(state("final"), WAIT),
    [{ type: "llm_call_status", callID: "call:1", status: "committed" }],
  ],
  [
    "the model call failed",
    state("waiting_llm", { call: CALL }),
    step(state("failed"), WAIT),
    [{ type: "llm_call_status", callID: "call:1", status: "failed" }],
  ],
  [
    "a cancel during the model call",
    state("waiting_llm", { call: CALL }),
    step(state("canceled"), WAIT),
    [{ type: "llm_call_status", callID: "call:1", status: "canceled" }],
  ],
  [
    "a model event that keeps the call open: nothing",
    state("waiting_llm", { call: CALL }),
    step(state("waiting_llm", { call: CALL }), { type: "continue_llm" }),
    [],
  ],
  [
    "a cancel while the client works: the unanswered operations are canceled",
    state("waiting_client", { waiting: WAITING }),
    step(state("canceled"), WAIT),
    [
      { type: "client_operation_status", operationID: "op-2", status: "canceled" },
      { type: "client_operation_status", operationID: "op-3", status: "canceled" },
    ],
  ],
  [
    "a tool result: nothing besides the state",
    state("waiting_client", { waiting: WAITING }),
    step(state("waiting_client", { waiting: { ...WAITING, answered: 2 } }), WAIT),
    [],
  ],
  ["a start from ready: nothing", state("ready"), step(state("ready"), WAIT), []],
];

for (const [name, before, transition, expected] of cases) {
  test(`step records: ${name}`, () => {
    assert.deepEqual(toStepRecords(before, transition), expected);
  });
}
