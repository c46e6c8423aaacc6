/**
 * Compaction over long generated conversations (docs/compaction.md): every request after a
 * compaction extends the previous one byte for byte until the next compaction; requests stay
 * within the window; the history is never edited; a state restored from JSON in the middle of a
 * summary call continues byte for byte; a context-length error compacts once and repeats the call.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { AssistantMessage, Message } from "../llm/types.ts";
import { toCanonicalJSON } from "./canonical-json.ts";
import { estimateMessages, estimateNextRequest, inputBudget } from "./compaction.ts";
import { hashHistory } from "./history-hash.ts";
import { toCallID } from "./ids.ts";
import { createConversation } from "./state.ts";
import {
  assistantMessage,
  assistantWithUsage,
  COMPACTING,
  CONVERSATION_ID,
  checkedTransition,
  compact,
  followUp,
  given,
  result,
  start,
  streamed,
  text,
  toolCall,
} from "./testing.ts";
import { transition } from "./transition.ts";
import type {
  CallLLMCommand,
  CompactionSettings,
  Input,
  RuntimeState,
  TurnSettings,
} from "./types.ts";

const WINDOWED: TurnSettings = {
  ...COMPACTING,
  compaction: {
    ...(COMPACTING.compaction as CompactionSettings),
    contextWindow: 4_000,
    outputReserve: 500,
    threshold: 0.7,
    tailMessages: 4,
  },
};
const SETTINGS_OF = WINDOWED.compaction as CompactionSettings;

function toBytes(messages: readonly Message[]): string {
  return messages.map((message) => `${toCanonicalJSON(message)}\n`).join("");
}

/** Chars per token the fake provider "really" uses (the estimate's calibration is 4). */
const TRUE_CHARS_PER_TOKEN = 4;

/** What the provider reports as the request's input tokens. */
function reportedInput(call: CallLLMCommand): number {
  const chars =
    call.request.systemPrompt.length +
    JSON.stringify(call.request.tools).length +
    toBytes(call.request.messages).length;
  return Math.ceil(chars / TRUE_CHARS_PER_TOKEN);
}

interface Plan {
  /** Tool calls per turn (0 = a plain answer), and the size of each tool output. */
  readonly turns: readonly { readonly tools: number; readonly output: number }[];
  /** Calls (by index among ordinary calls) the provider rejects with a context-length error. */
  readonly overflowAt: ReadonlySet<number>;
}

interface Simulated {
  readonly state: RuntimeState;
  /** Every call in order, ordinary and summary. */
  readonly calls: CallLLMCommand[];
  /** For each call, how many compaction and elision records the state held when it started. */
  readonly records: number[];
  readonly inputs: Input[];
}

/** Drives the loop through `plan` as the runner would, with a provider that reports usage. */
function simulate(plan: Plan, check = true): Simulated {
  const settings = WINDOWED;
  let state = createConversation(CONVERSATION_ID);
  const calls: CallLLMCommand[] = [];
  const records: number[] = [];
  const inputs: Input[] = [];
  let ordinary = 0;
  const feed = (input: Input): void => {
    const queue = [input];
    while (queue.length > 0) {
      const next = queue.shift() as Input;
      inputs.push(next);
      const step = check ? checkedTransition(state, next) : transition(state, next);
      assert.equal(step.rejected, null, step.rejected?.detail);
      state = step.state;
      const command = step.command;
      if (command.type === "call_llm") {
        calls.push(command);
        records.push(
          (state.committed.compactions?.length ?? 0) + (state.committed.elisions?.length ?? 0),
        );
        const summary = state.committed.call?.summary !== undefined;
        if (!summary && plan.overflowAt.has(ordinary)) {
          ordinary += 1;
          const error = {
            ...assistantMessage([], "error"),
            errorMessage: "prompt is too long: 5000 tokens > 4000 maximum",
          };
          queue.push({
            type: "llm_event",
            callID: command.callID,
            event: { type: "error", reason: "error", error },
            contextOverflow: true,
          });
          continue;
        }
        if (!summary) ordinary += 1;
        queue.push(...streamed(command.callID, respond(command, summary, state), 64));
      } else if (command.type === "call_client") {
        queue.push(result(command.toolCall, "x".repeat(outputSize)));
      }
    }
  };
  let outputSize = 0;
  let turnIndex = 0;
  for (const turn of plan.turns) {
    outputSize = turn.output;
    toolBudget = turn.tools;
    const message = `request ${turnIndex}: please continue with step ${turnIndex}`;
    feed(turnIndex === 0 ? start(message, { settings }) : followUp(message));
    turnIndex += 1;
  }
  return { state, calls, records, inputs };
}

let toolBudget = 0;

function respond(call: CallLLMCommand, summary: boolean, state: RuntimeState): AssistantMessage {
  const usage = (message: AssistantMessage): AssistantMessage => ({
    ...message,
    usage: { ...message.usage, input: reportedInput(call), output: 20 },
  });
  if (summary) {
    return usage(assistantMessage([text(`Summary ${call.callID}: goals, files, to-dos.`)]));
  }
  const step = state.committed.call?.step ?? 0;
  if (toolBudget > 0) {
    toolBudget -= 1;
    return usage(
      assistantMessage([text("Reading."), toolCall(`tc_${step}`, "read", { path: `f${step}.ts` })]),
    );
  }
  return usage(assistantMessage([text(`Done with ${call.callID}.`)]));
}

const arbPlan: fc.Arbitrary<Plan> = fc.record({
  turns: fc.array(
    fc.record({ tools: fc.integer({ min: 0, max: 3 }), output: fc.integer({ min: 0, max: 900 }) }),
    { minLength: 20, maxLength: 30 },
  ),
  overflowAt: fc
    .uniqueArray(fc.integer({ min: 0, max: 80 }), { maxLength: 4 })
    .map((list) => new Set(list)),
});

/** Checks the cache guarantee: consecutive ordinary calls without a compaction between extend. */
function assertPrefixBetweenCompactions(
  calls: readonly CallLLMCommand[],
  records: readonly number[],
): number {
  let previous: CallLLMCommand | null = null;
  let compactions = 0;
  for (const [i, call] of calls.entries()) {
    if (call.model === SETTINGS_OF.summaryModel) {
      previous = null;
      compactions += 1;
      continue;
    }
    // an elision (no summary call) is the other compaction point
    if (
      i > 0 &&
      records[i] !== records[i - 1] &&
      calls[i - 1]?.model !== SETTINGS_OF.summaryModel
    ) {
      previous = null;
    }
    if (previous !== null) {
      const a = toBytes(previous.request.messages);
      const b = toBytes(call.request.messages);
      if (b !== a) {
        assert.equal(b.slice(0, a.length), a, `${call.callID} does not extend ${previous.callID}`);
      }
      assert.equal(call.request.systemPrompt, previous.request.systemPrompt);
      assert.equal(toCanonicalJSON(call.request.tools), toCanonicalJSON(previous.request.tools));
    }
    assert.equal(call.messagesHash, hashHistory(call.request.messages).chainHash);
    assert.equal(call.messageCount, call.request.messages.length);
    previous = call;
  }
  return compactions;
}

describe("compaction", () => {
  test("long conversations: prefix-extending between compactions, within the window", () => {
    fc.assert(
      fc.property(arbPlan, (plan) => {
        const { state, calls, records } = simulate(plan);
        assertPrefixBetweenCompactions(calls, records);
        // every request the provider accepted stays within the input budget
        for (const call of calls) {
          assert.ok(
            reportedInput(call) <= inputBudget(SETTINGS_OF),
            `${call.callID}: ${reportedInput(call)} tokens`,
          );
        }
        const committed = state.committed;
        assert.notEqual(committed.status, "failed", committed.failure?.message);
        assert.deepEqual(hashHistory(committed.messages), committed.hashes);
      }),
      { numRuns: 5, seed: 14 },
    );
  });

  test("a 200-turn session compacts, and its history stays complete", () => {
    const turns = Array.from({ length: 200 }, (_, i) => ({
      tools: i % 3,
      output: 300 + (i % 7) * 50,
    }));
    const { state, calls, records } = simulate({ turns, overflowAt: new Set() }, false);
    const compactions = assertPrefixBetweenCompactions(calls, records);
    assert.ok(compactions >= 5, `${compactions} compactions`);
    assert.equal(state.committed.compactions?.length, compactions);
    const userTexts = state.committed.messages.filter((m) => m.role === "user").length;
    assert.equal(userTexts, 200, "every user message is still in history");
    // each record covers more than the one before, at a message that is not a tool result
    let upTo = 0;
    for (const record of state.committed.compactions ?? []) {
      assert.ok(record.upTo > upTo);
      assert.notEqual(state.committed.messages[record.upTo]?.role, "toolResult");
      upTo = record.upTo;
    }
  });

  test("a context-length error compacts once, then the call is repeated compacted", () => {
    const turns = Array.from({ length: 6 }, () => ({ tools: 1, output: 200 }));
    const { calls, state } = simulate({ turns, overflowAt: new Set([9]) });
    const summaryIndex = calls.findIndex((c) => c.model === SETTINGS_OF.summaryModel);
    assert.ok(summaryIndex > 0, "a summary call followed the error");
    const failed = calls[summaryIndex - 1] as CallLLMCommand;
    const repeated = calls[summaryIndex + 1] as CallLLMCommand;
    assert.ok(toBytes(repeated.request.messages).length < toBytes(failed.request.messages).length);
    assert.equal(state.committed.compactions?.[0]?.trigger, "overflow");
    assert.equal(state.committed.status, "final");
  });

  test("a state restored from JSON during a summary call continues byte for byte", () => {
    const turns = Array.from({ length: 40 }, (_, i) => ({
      tools: 1,
      output: i % 2 === 0 ? 600 : 1_200,
    }));
    const { inputs, state } = simulate({ turns, overflowAt: new Set() }, false);
    assert.ok((state.committed.elisions?.length ?? 0) > 0, "elisions too");
    let original = createConversation(CONVERSATION_ID);
    let restored = createConversation(CONVERSATION_ID);
    let summarySteps = 0;
    for (const input of inputs) {
      if (original.committed.call?.summary !== undefined) summarySteps += 1;
      const a = transition(original, input);
      const b = transition(JSON.parse(toCanonicalJSON(restored)) as RuntimeState, input);
      assert.equal(toCanonicalJSON(b), toCanonicalJSON(a));
      original = a.state;
      restored = b.state;
    }
    assert.ok(summarySteps > 0);
  });

  test("the estimate is what the provider would count, within the calibration", () => {
    const messages = [assistantMessage([text("x".repeat(4_000))])];
    assert.equal(estimateMessages(messages, 4), 1_004);
  });
});

describe("the estimate after a compaction", () => {
  test("usage reported before a compaction is not used: no second compaction at once", () => {
    const t2c0 = toCallID(CONVERSATION_ID, "t2", 0);
    const t3c0 = toCallID(CONVERSATION_ID, "t3", 0);
    const settings = COMPACTING.compaction as CompactionSettings;
    const after = given(
      start("one", { settings: COMPACTING }),
      streamed(toCallID(CONVERSATION_ID, "t1", 0), assistantWithUsage([text("a")], 300)),
      followUp("two"),
      streamed(t2c0, assistantWithUsage([text("b")], 398)),
      compact(),
      streamed(t3c0, assistantMessage([text("Short summary.")])),
    );
    assert.equal(after.state.committed.compactions?.length, 1);
    // The last answer reported 398 tokens for the uncompacted request; the compacted one is small.
    assert.ok(estimateNextRequest(after.state.committed, settings) < 100);
    const next = after.when(followUp("three")).thenExpect({ command: "call_llm" });
    assert.equal(next.transition.state.committed.call?.summary, undefined, "no second compaction");
  });
});

describe("the estimate without a usage report", () => {
  test("counts the system prompt and the tools' JSON text, whatever the tools (property)", () => {
    // Each tool's length is remembered per tool object (issue #19); the sum must stay the length
    // of `JSON.stringify(tools)`, also for tools shared by several settings values.
    const shared = [{ name: "read", description: "reads…", parameters: { type: "object" } }];
    const tool = fc.oneof(
      fc.constantFrom(...shared),
      fc.record({ name: fc.string(), description: fc.string(), parameters: fc.jsonValue() }),
    );
    fc.assert(
      fc.property(fc.array(tool, { maxLength: 5 }), fc.string(), (tools, systemPrompt) => {
        const settings = { ...WINDOWED, systemPrompt, tools } as TurnSettings;
        const state = { ...createConversation(CONVERSATION_ID).committed, settings };
        const fixed = systemPrompt.length + JSON.stringify(tools).length;
        assert.equal(
          estimateNextRequest(state, SETTINGS_OF),
          Math.ceil(fixed / SETTINGS_OF.charsPerToken),
        );
      }),
      { numRuns: 500 },
    );
  });
});
