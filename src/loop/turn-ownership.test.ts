import assert from "node:assert/strict";
import { test } from "node:test";
import { createConversation } from "./state.ts";
import { start, T0 } from "./testing.ts";
import {
  mayCancel,
  mayResume,
  type ResumeAccess,
  SUPERSEDED_REASON,
  type TurnAccess,
  toSupersedingCancel,
} from "./turn-ownership.ts";
import type { ConversationState, StartInput, Status } from "./types.ts";

function state(status: Status): ConversationState {
  return { ...createConversation("conv-1").committed, status, turnID: "turn-1" };
}

const input = start("again") as StartInput;

const supersede: [Status, boolean][] = [
  ["ready", false],
  ["final", false],
  ["failed", false],
  ["canceled", false],
  ["waiting_llm", true],
  ["waiting_client", true],
];
for (const [status, cancels] of supersede) {
  test(`a new message while ${status}: ${cancels ? "cancels the running turn" : "nothing to cancel"}`, () => {
    assert.deepEqual(
      toSupersedingCancel(state(status), input),
      cancels
        ? {
            type: "cancel",
            inputID: `${input.inputID}:supersede`,
            at: T0,
            reason: SUPERSEDED_REASON,
          }
        : null,
    );
  });
}

const A = { name: "stream A" };
const B = { name: "stream B" };
const allowed: TurnAccess = { type: "allowed" };
const otherStream: TurnAccess = { type: "refused", reason: "other_stream" };
const otherTurn: TurnAccess = { type: "refused", reason: "other_turn" };

const cancels: [string, typeof A | null, typeof A, TurnAccess][] = [
  ["no stream carries the turn", null, A, allowed],
  ["the carrier cancels", A, A, allowed],
  ["another stream cancels", A, B, otherStream],
];
for (const [name, carrier, stream, expected] of cancels) {
  test(`cancel: ${name}`, () => assert.deepEqual(mayCancel(carrier, stream), expected));
}

const takeOver: ResumeAccess = { type: "take_over" };
const resumes: [string, typeof A | null, typeof A, string | undefined, boolean, ResumeAccess][] = [
  ["no carrier, any turn", null, A, undefined, false, allowed],
  ["no carrier, its own turn", null, A, "turn-1", false, allowed],
  ["no carrier, an earlier turn", null, A, "turn-0", false, otherTurn],
  ["the carrier again", A, A, "turn-1", false, allowed],
  ["the carrier again, nobody reading it", A, A, "turn-1", true, allowed],
  ["another stream carries the turn and is read", A, B, "turn-1", false, otherStream],
  ["another stream carries the turn, nobody reads it", A, B, "turn-1", true, takeOver],
  ["another stream nobody reads, any turn", A, B, undefined, true, takeOver],
  ["another stream, an earlier turn", A, B, "turn-0", false, otherTurn],
  ["another stream nobody reads, an earlier turn", A, B, "turn-0", true, otherTurn],
];
for (const [name, carrier, stream, turnID, carrierDetached, expected] of resumes) {
  test(`resume: ${name}`, () =>
    assert.deepEqual(
      mayResume(state("waiting_llm"), carrier, stream, { turnID, carrierDetached }),
      expected,
    ));
}
