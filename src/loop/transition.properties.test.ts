/**
 * Properties over generated input sequences: realistic conversations with perturbations
 * (duplicates, stale events, stray results, cancels, reordering) and fully random inputs.
 * `checkedTransition` asserts on every step that no exception escapes, the transition is
 * deterministic and pure, history only grows, and rejected inputs change nothing.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { AssistantMessage, Message, ResponseEvent, ToolCall } from "../llm/types.ts";
import { toCanonicalJSON } from "./canonical-json.ts";
import { hashHistory } from "./history-hash.ts";
import { toCallID } from "./ids.ts";
import { createConversation, isIdle } from "./state.ts";
import {
  assistantMessage,
  BATCH_SETTINGS,
  CONVERSATION_ID,
  cancel,
  checkedTransition,
  drive,
  llm,
  result,
  start,
  text,
  thinking,
  toEvents,
  toolCall,
} from "./testing.ts";
import type { CallLLMCommand, Input, RuntimeState, Transition } from "./types.ts";

const RUNS = 200;

// Generators ------------------------------------------------------------------------------------

const word = fc.string({ minLength: 0, maxLength: 12 });

const arbResponse: fc.Arbitrary<AssistantMessage> = fc
  .record({
    thought: fc.option(word, { nil: undefined }),
    say: fc.option(word, { nil: undefined }),
    tools: fc.uniqueArray(fc.constantFrom("a", "b", "c", "d"), { maxLength: 3 }),
    reason: fc.constantFrom("stop", "stop", "length", "toolUse", "error", "aborted"),
  })
  .map(({ thought, say, tools, reason }) => {
    const content: AssistantMessage["content"] = [];
    if (thought !== undefined) content.push(thinking(thought, "sig"));
    if (say !== undefined) content.push(text(say));
    for (const id of tools) content.push(toolCall(`tc_${id}`, "read", { path: `${id}.ts` }));
    const stopReason = tools.length > 0 && reason === "stop" ? "toolUse" : reason;
    const message = assistantMessage(content, stopReason as AssistantMessage["stopReason"]);
    return stopReason === "error" || stopReason === "aborted"
      ? { ...message, errorMessage: "upstream failed" }
      : message;
  });

interface Turn {
  responses: AssistantMessage[];
  reverseResults: boolean;
  chunkSize: number;
}

/** A turn's model responses; the last one always ends the turn, so the next turn can start. */
const arbTurn: fc.Arbitrary<Turn> = fc.record({
  responses: fc
    .array(arbResponse, { minLength: 0, maxLength: 4 })
    .map((responses) => [...responses, assistantMessage([text("end of turn")])]),
  reverseResults: fc.boolean(),
  chunkSize: fc.integer({ min: 1, max: 6 }),
});

type Perturbation =
  | { kind: "duplicate"; at: number }
  | { kind: "drop"; at: number }
  | { kind: "swap"; at: number }
  | { kind: "insert"; at: number; input: Input };

const arbStray: fc.Arbitrary<Input> = fc.oneof(
  fc.constant(cancel("stray cancel")),
  fc.constant(result(toolCall("tc_a", "read"), "stray")),
  fc.constant(result(toolCall("tc_zz", "read"), "unknown")),
  fc.constant(start("interrupting")),
  fc.constant(llm("bogus-call", { type: "done", reason: "stop", message: assistantMessage([]) })),
  fc.nat({ max: 3 }).map((step) =>
    llm(toCallID(CONVERSATION_ID, "t1", step), {
      type: "done",
      reason: "stop",
      message: assistantMessage([text("late")]),
    }),
  ),
);

const arbPerturbation: fc.Arbitrary<Perturbation> = fc.oneof(
  fc.record({ kind: fc.constant("duplicate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("drop" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("swap" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), input: arbStray }),
);

/** The inputs a runner would feed for these turns, from the scripted driver. */
function toInputs(turns: Turn[]): Input[] {
  let state = createConversation(CONVERSATION_ID);
  const inputs: Input[] = [];
  turns.forEach((turn, i) => {
    const driven = drive(state, start(`turn ${i}`), turn);
    inputs.push(...driven.inputs);
    state = driven.state;
  });
  return inputs;
}

function perturb(inputs: Input[], perturbations: Perturbation[]): Input[] {
  const out = [...inputs];
  for (const p of perturbations) {
    if (out.length === 0) break;
    const at = p.at % out.length;
    switch (p.kind) {
      case "duplicate":
        out.splice(at, 0, out[at] as Input);
        break;
      case "drop":
        out.splice(at, 1);
        break;
      case "swap":
        if (at + 1 < out.length) [out[at], out[at + 1]] = [out[at + 1] as Input, out[at] as Input];
        break;
      case "insert":
        out.splice(at, 0, p.input);
        break;
    }
  }
  return out;
}

// Checks ------------------------------------------------------------------------------------------

function runAll(inputs: Input[]): { state: RuntimeState; steps: [Input, Transition][] } {
  let state = createConversation(CONVERSATION_ID);
  const steps: [Input, Transition][] = [];
  for (const input of inputs) {
    const step = checkedTransition(state, input);
    steps.push([input, step]);
    state = step.state;
  }
  return { state, steps };
}

function assertOneAssistantMessagePerCall(steps: [Input, Transition][]): void {
  const assistantPerCall = new Map<string, number>();
  let before: readonly Message[] = [];
  for (const [input, step] of steps) {
    const appended = step.state.committed.messages.slice(before.length);
    const assistants = appended.filter((m) => m.role === "assistant").length;
    if (assistants > 0) {
      assert.equal(input.type, "llm_event", "only a model event appends an assistant message");
      assert.equal(assistants, 1);
      const callID = (input as Extract<Input, { type: "llm_event" }>).callID;
      assistantPerCall.set(callID, (assistantPerCall.get(callID) ?? 0) + 1);
      assert.equal(input.type === "llm_event" && input.event.type, "done");
    }
    before = step.state.committed.messages;
  }
  for (const [callID, count] of assistantPerCall) assert.equal(count, 1, `call ${callID}`);
}

function assertPrefixRelation(steps: [Input, Transition][]): void {
  const calls = steps
    .map(([, step]) => step.command)
    .filter((command): command is CallLLMCommand => command.type === "call_llm");
  for (let i = 1; i < calls.length; i += 1) {
    const a = (calls[i - 1] as CallLLMCommand).request.messages
      .map((m) => toCanonicalJSON(m))
      .join("\n");
    const b = (calls[i] as CallLLMCommand).request.messages
      .map((m) => toCanonicalJSON(m))
      .join("\n");
    assert.ok(b.length > a.length && b.startsWith(a), `request ${i} is not a prefix of ${i + 1}`);
  }
  for (const call of calls)
    assert.equal(call.messagesHash, hashHistory(call.request.messages).chainHash);
}

/** When idle, every tool call has exactly one result, right after its message, in order. */
function assertWellFormed(state: RuntimeState): void {
  if (!isIdle(state.committed.status)) return;
  const messages = state.committed.messages;
  for (let i = 0; i < messages.length; i += 1) {
    const message = messages[i] as Message;
    if (message.role !== "assistant") continue;
    const calls = message.content.filter((b): b is ToolCall => b.type === "toolCall");
    calls.forEach((call, k) => {
      const answer = messages[i + 1 + k];
      assert.ok(
        answer?.role === "toolResult" && answer.toolCallId === call.id,
        `result of ${call.id}`,
      );
    });
  }
  assert.equal(state.committed.hashes.chainHash, hashHistory(messages).chainHash);
}

// Properties --------------------------------------------------------------------------------------

describe("transition properties", () => {
  test("realistic conversations with perturbations keep every invariant", () => {
    fc.assert(
      fc.property(
        fc.array(arbTurn, { minLength: 1, maxLength: 3 }),
        fc.array(arbPerturbation, { maxLength: 6 }),
        (turns, perturbations) => {
          const { state, steps } = runAll(perturb(toInputs(turns), perturbations));
          assertOneAssistantMessagePerCall(steps);
          assertPrefixRelation(steps);
          assertWellFormed(state);
        },
      ),
      { numRuns: RUNS },
    );
  });

  test("unperturbed conversations end every turn and keep history well formed", () => {
    fc.assert(
      fc.property(fc.array(arbTurn, { minLength: 1, maxLength: 3 }), (turns) => {
        const { state, steps } = runAll(toInputs(turns));
        assert.ok(steps.every(([, step]) => step.rejected === null));
        assertWellFormed(state);
      }),
      { numRuns: RUNS },
    );
  });

  test("any arrival order of a batch's results gives the same history and the same requests", () => {
    // Responses whose tool calls mix read-only calls (read) with calls with effects (shell).
    const arbMixed = fc
      .array(fc.constantFrom("read", "shell"), { minLength: 1, maxLength: 6 })
      .map((names) =>
        assistantMessage(names.map((name, i) => toolCall(`tc_${i}`, name, { n: i }))),
      );
    const arbOrders = fc.array(fc.array(fc.nat(), { minLength: 6, maxLength: 6 }), {
      minLength: 8,
      maxLength: 8,
    });
    fc.assert(
      fc.property(
        fc.array(arbMixed, { minLength: 1, maxLength: 3 }),
        arbOrders,
        (responses, seeds) => {
          const script = {
            responses: [...responses, assistantMessage([text("end")])],
            run: (call: ToolCall) => `${call.name} ${call.id}`,
          };
          const initial = start("go", { settings: BATCH_SETTINGS });
          const inOrder = drive(createConversation(CONVERSATION_ID), initial, script);
          const shuffled = drive(createConversation(CONVERSATION_ID), initial, {
            ...script,
            // A permutation per batch, from the generated numbers (Fisher–Yates).
            batchOrder: (size, batch) => {
              const order = Array.from({ length: size }, (_, i) => i);
              const seed = seeds[batch % seeds.length] as number[];
              for (let i = size - 1; i > 0; i -= 1) {
                const j = (seed[i % seed.length] as number) % (i + 1);
                [order[i], order[j]] = [order[j] as number, order[i] as number];
              }
              return order;
            },
          });
          assert.equal(shuffled.outcome.type, "final");
          assert.equal(
            toCanonicalJSON(shuffled.state.committed.messages),
            toCanonicalJSON(inOrder.state.committed.messages),
          );
          assert.equal(toCanonicalJSON(shuffled.calls), toCanonicalJSON(inOrder.calls));
          const steps = shuffled.inputs.map((input, i) => [input, shuffled.transitions[i]]);
          assertPrefixRelation(steps as [Input, Transition][]);
          assertWellFormed(shuffled.state);
          // A call with effects is only ever sent when every call before it has its result,
          // and a batch holds only read-only calls.
          for (const step of shuffled.transitions) {
            const { command } = step;
            const waiting = step.state.committed.waiting;
            if (command.type === "call_clients") {
              assert.ok(command.calls.every((c) => c.toolCall.name === "read"));
            } else if (command.type === "call_client" && command.toolCall.name === "shell") {
              const index = waiting?.calls.findIndex((c) => c.id === command.toolCall.id);
              assert.equal(index, waiting?.answered);
            }
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  test("fully random inputs never throw and never break history", () => {
    const callIDs = [0, 1, 2].flatMap((step) =>
      [1, 2].map((turn) => toCallID(CONVERSATION_ID, `t${turn}`, step)),
    );
    const arbEvent: fc.Arbitrary<ResponseEvent> = fc
      .tuple(arbResponse, fc.nat({ max: 40 }))
      .map(([message, pick]) => {
        const events = toEvents(message, 3);
        return events[pick % events.length] as ResponseEvent;
      });
    const arbInput: fc.Arbitrary<Input> = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.tuple(fc.constantFrom(...callIDs), arbEvent).map(([id, e]) => llm(id, e)),
      },
      { weight: 1, arbitrary: arbStray },
      { weight: 1, arbitrary: fc.constant(start("hello")) },
      {
        weight: 2,
        arbitrary: fc
          .constantFrom("tc_a", "tc_b", "tc_c")
          .map((id) => result(toolCall(id, "read"), "out")),
      },
    );
    fc.assert(
      fc.property(fc.array(arbInput, { maxLength: 60 }), (inputs) => {
        const { state, steps } = runAll(inputs);
        assertOneAssistantMessagePerCall(steps);
        assertPrefixRelation(steps);
        assertWellFormed(state);
      }),
      { numRuns: RUNS },
    );
  });
});
