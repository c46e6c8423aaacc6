/**
 * Property of model routing (model-route.ts), over generated conversations in which every model
 * call succeeds, uses a tool, fails before or after its first token (each failure kind), or is
 * canceled before or after it: once a call of the conversation has produced a token, every call
 * goes to the model that last produced tokens, except the failover of a call (of the same turn)
 * that failed before its first token.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { createConversation } from "./state.ts";
import {
  assistantMessage,
  CONVERSATION_ID,
  cancel,
  checkedTransition,
  result,
  SETTINGS,
  start,
  text,
  toEvents,
  toolCall,
} from "./testing.ts";
import type { FailureKind, Input, ResponseEvent, RuntimeState, Transition } from "./types.ts";

const KINDS: readonly FailureKind[] = [
  "rate_limited",
  "overloaded",
  "server_error",
  "connection",
  "cooling_down",
  "other",
];

type Outcome =
  | { readonly type: "answer" }
  | { readonly type: "tool" }
  | { readonly type: "fail_before"; readonly kind: FailureKind }
  | { readonly type: "fail_after"; readonly kind: FailureKind }
  | { readonly type: "cancel_before" }
  | { readonly type: "cancel_after" };

const arbKind = fc.constantFrom(...KINDS);
const arbOutcome: fc.Arbitrary<Outcome> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ type: "answer" } as const) },
  { weight: 1, arbitrary: fc.constant({ type: "tool" } as const) },
  { weight: 4, arbitrary: arbKind.map((kind) => ({ type: "fail_before", kind }) as const) },
  { weight: 1, arbitrary: arbKind.map((kind) => ({ type: "fail_after", kind }) as const) },
  { weight: 1, arbitrary: fc.constant({ type: "cancel_before" } as const) },
  { weight: 1, arbitrary: fc.constant({ type: "cancel_after" } as const) },
);

const SETTINGS_WITH_FALLBACKS = { ...SETTINGS, fallbacks: ["backup-1", "backup-2"] };
const reply = assistantMessage([text("Sure.")]);
const toolReply = assistantMessage([text("Reading."), toolCall("tc-1", "read", { path: "a" })]);

interface CallRecord {
  readonly model: string;
  /** The first call of a turn (not a failover or a call after a tool result). */
  readonly turnStart: boolean;
  tokens: boolean;
  failedBeforeToken: boolean;
}

/** Plays `outcomes` as the answers to the conversation's model calls, starting turns as needed. */
function play(outcomes: readonly Outcome[]): CallRecord[] {
  let state: RuntimeState = createConversation(CONVERSATION_ID);
  const calls: CallRecord[] = [];
  let turn = 0;
  let next = 0;
  const apply = (input: Input): Transition => {
    const step = checkedTransition(state, input);
    assert.equal(step.rejected, null, `${input.type} rejected: ${step.rejected?.detail}`);
    state = step.state;
    return step;
  };
  while (next < outcomes.length) {
    turn += 1;
    let step = apply(start(`turn ${turn}`, { settings: SETTINGS_WITH_FALLBACKS }));
    let turnStart = true;
    while (step.command.type === "call_llm" && next < outcomes.length) {
      const command = step.command;
      const outcome = outcomes[next] as Outcome;
      next += 1;
      const record: CallRecord = {
        model: command.model,
        turnStart,
        tokens: false,
        failedBeforeToken: false,
      };
      calls.push(record);
      turnStart = false;
      const events = toEvents(outcome.type === "tool" ? toolReply : reply);
      const feed = (event: ResponseEvent) =>
        apply({ type: "llm_event", callID: command.callID, event });
      const error = (kind: FailureKind): Input => ({
        type: "llm_event",
        callID: command.callID,
        event: { type: "error", reason: "error", error: { ...reply, stopReason: "error" } },
        failure: kind,
      });
      switch (outcome.type) {
        case "answer":
        case "tool":
          for (const event of events) step = feed(event);
          record.tokens = true;
          if (step.command.type === "call_client") {
            step = apply(result(step.command.toolCall, "contents"));
          }
          break;
        case "fail_before":
          feed(events[0] as ResponseEvent);
          step = apply(error(outcome.kind));
          record.failedBeforeToken = true;
          break;
        case "fail_after":
          for (const event of events.slice(0, 3)) feed(event);
          record.tokens = true;
          step = apply(error(outcome.kind));
          break;
        case "cancel_before":
          step = apply(cancel());
          break;
        case "cancel_after":
          for (const event of events.slice(0, 3)) feed(event);
          record.tokens = true;
          step = apply(cancel());
          break;
      }
    }
    // A turn still waiting when the outcomes run out is simply left.
  }
  return calls;
}

test("after a first token, the model changes only when a call fails before its first token", () => {
  fc.assert(
    fc.property(fc.array(arbOutcome, { minLength: 1, maxLength: 30 }), (outcomes) => {
      const calls = play(outcomes);
      let lastTokenModel: string | null = null;
      for (const [i, call] of calls.entries()) {
        const previous = calls[i - 1];
        // The conversation's model is the last one that produced tokens; a call goes elsewhere
        // only as the failover of a call of the same turn that failed before its first token.
        if (lastTokenModel !== null && call.model !== lastTokenModel) {
          assert.ok(
            !call.turnStart && previous?.failedBeforeToken === true,
            `call ${i} went to ${call.model}, not ${lastTokenModel}, without a failure before the first token`,
          );
        }
        if (call.tokens) lastTokenModel = call.model;
      }
    }),
    { numRuns: 300 },
  );
});

test("a conversation whose calls never fail stays on the model asked for", () => {
  fc.assert(
    fc.property(
      fc.array(fc.constantFrom<Outcome>({ type: "answer" }, { type: "tool" }), { maxLength: 12 }),
      (outcomes) => {
        for (const call of play(outcomes)) assert.equal(call.model, SETTINGS.model);
      },
    ),
    { numRuns: 50 },
  );
});
