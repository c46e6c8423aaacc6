/**
 * The three features that change what a request holds, together (README "Tool calls",
 * "Compaction", "Model routing"): generated conversations mix tool batches answered in any order,
 * failovers before the first token, context-length errors, threshold compactions and elisions,
 * the client's summarize action, cancels at any point and restarts from the stored JSON.
 *
 * Checked on every run: each transition is pure and deterministic (`checkedTransition`), and the
 * same transition on the state restored from its JSON gives the same bytes; a restart (pending
 * response dropped) repeats the waiting call with the same request; every request holds a valid
 * history (each tool call followed by its results in content order, never a result the model has
 * not answered elided); a failover repeats the failed request byte for byte; a summary call is
 * never routed; and between two compaction points every request extends the previous one.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { AssistantMessage, Message } from "../llm/types.ts";
import { toCanonicalJSON } from "./canonical-json.ts";
import { hashHistory } from "./history-hash.ts";
import { toResumeCommand } from "./request.ts";
import { createConversation } from "./state.ts";
import {
  assistantMessage,
  BATCH_SETTINGS,
  CONVERSATION_ID,
  checkedTransition,
  serialise,
  start,
  T0,
  text,
  toEvents,
  toolCall,
  toolResult,
  userMessage,
} from "./testing.ts";
import { transition } from "./transition.ts";
import type {
  CallLLMCommand,
  CompactionSettings,
  FailureKind,
  Input,
  RuntimeState,
  ToolCall,
  TurnSettings,
} from "./types.ts";

const COMPACTION: CompactionSettings = {
  auto: true,
  contextWindow: 4_000,
  outputReserve: 500,
  threshold: 0.7,
  summaryModel: "summary-model",
  tailMessages: 4,
  charsPerToken: 4,
};

const MIXED: TurnSettings = {
  ...BATCH_SETTINGS,
  fallbacks: ["backup-1", "backup-2"],
  compaction: COMPACTION,
};

const FAILOVER_KINDS: readonly FailureKind[] = ["rate_limited", "overloaded", "connection"];

function toBytes(messages: readonly Message[]): string {
  return messages.map((message) => `${toCanonicalJSON(message)}\n`).join("");
}

/** The input tokens a provider would report for `call` (4 characters a token). */
function reportedInput(call: CallLLMCommand): number {
  const chars =
    call.request.systemPrompt.length +
    JSON.stringify(call.request.tools).length +
    toBytes(call.request.messages).length;
  return Math.ceil(chars / 4);
}

/** Decisions read from a generated tape, so fast-check can shrink a failing conversation. */
function createTape(values: readonly number[]): (choices: number) => number {
  let index = 0;
  return (choices) => {
    const value = values[index % values.length] ?? 0;
    index += 1;
    return value % choices;
  };
}

interface Seen {
  readonly command: CallLLMCommand;
  readonly summary: boolean;
  /** Compaction and elision records the state held when the call started. */
  readonly records: number;
}

interface Run {
  readonly state: RuntimeState;
  readonly calls: Seen[];
  readonly inputs: Input[];
}

/** Drives one generated conversation the way the runner would, checking every step. */
function simulate(values: readonly number[], turns: number): Run {
  const pick = createTape(values);
  let state = createConversation(CONVERSATION_ID);
  const calls: Seen[] = [];
  const inputs: Input[] = [];
  let serial = 0;
  const next = (prefix: string): string => {
    serial += 1;
    return `${prefix}:${serial}`;
  };

  const apply = (input: Input) => {
    inputs.push(input);
    const step = checkedTransition(state, input);
    // Restored from its JSON (what the store holds), the state takes the same step.
    const restored = transition(JSON.parse(serialise(state)) as RuntimeState, input);
    assert.equal(serialise(restored), serialise(step), `restored state diverged on ${input.type}`);
    state = step.state;
    return step;
  };

  /** Feeds `input` and everything the script answers, until the turn ends. */
  const feed = (input: Input): void => {
    let step = apply(input);
    if (step.rejected !== null) {
      assert.ok(input.type === "compact", `${input.type} rejected: ${step.rejected.detail}`);
      assert.equal(step.rejected.reason, "nothing_to_compact");
      return;
    }
    for (let guard = 0; guard < 1_000; guard += 1) {
      const command = step.command;
      switch (command.type) {
        case "call_llm": {
          const summary = state.committed.call?.summary !== undefined;
          calls.push({
            command,
            summary,
            records:
              (state.committed.compactions?.length ?? 0) + (state.committed.elisions?.length ?? 0),
          });
          step = answerModel(command, summary);
          break;
        }
        case "call_client":
          step = answerClient([command.toolCall]);
          break;
        case "call_clients":
          step = answerClient(command.calls.map((call) => call.toolCall));
          break;
        case "continue_llm":
        case "wait_input":
          throw new Error(`the script left the loop waiting (${command.type})`);
        default:
          return;
      }
    }
    throw new Error("the turn did not end");
  };

  /** The model's behaviour for one call, chosen from the tape. */
  const answerModel = (command: CallLLMCommand, summary: boolean) => {
    const callID = command.callID;
    const usage = (message: AssistantMessage): AssistantMessage => ({
      ...message,
      usage: { ...message.usage, input: reportedInput(command), output: 20 },
    });
    const choice = pick(summary ? 12 : 16);
    // A restart while the call streams: the pending response is dropped, the call repeated.
    if (pick(6) === 0) restart(command);
    if (summary) {
      if (choice === 0) return apply(cancelInput());
      if (choice === 1) return failBefore(callID, "rate_limited");
      return stream(callID, usage(assistantMessage([text(`Summary of ${callID}.`)])));
    }
    if (choice <= 1) return failBefore(callID, FAILOVER_KINDS[pick(3)] as FailureKind);
    if (choice === 2) return overflow(callID);
    if (choice === 3) {
      // Canceled after its first tokens.
      const events = toEvents(assistantMessage([text("Partial answer that goes on")]));
      for (const event of events.slice(0, 3)) apply({ type: "llm_event", callID, event });
      return apply(cancelInput());
    }
    if (choice <= 9) {
      const step = state.committed.call?.step ?? 0;
      const count = 1 + pick(4);
      const content: AssistantMessage["content"] = [text("Looking.")];
      for (let i = 0; i < count; i += 1) {
        const name = pick(4) === 0 ? "shell" : "read";
        const args: Record<string, string> =
          name === "read" ? { path: `f${step}-${i}.ts` } : { command: `make ${i}` };
        // Providers reuse ids across calls: the operation id tells them apart.
        content.push(toolCall(`call_${i}`, name, args));
      }
      return stream(callID, usage(assistantMessage(content)));
    }
    return stream(callID, usage(assistantMessage([text(`Answer of ${callID}.`)])));
  };

  /** The client answers `calls` in an order from the tape; sometimes the user cancels first. */
  const answerClient = (calls: readonly ToolCall[]) => {
    const order = calls.map((_, i) => i);
    for (let i = order.length - 1; i > 0; i -= 1) {
      const j = pick(i + 1);
      [order[i], order[j]] = [order[j] as number, order[i] as number];
    }
    const cancelAfter = pick(10) === 0 ? pick(calls.length) : -1;
    if (pick(6) === 0) restart(null);
    let step = null;
    for (const [k, i] of order.entries()) {
      if (k === cancelAfter) return apply(cancelInput());
      const call = calls[i] as ToolCall;
      const size = pick(3) === 0 ? 1_500 + pick(1_500) : 50 + pick(400);
      step = apply({
        type: "tool_result",
        inputID: next("result"),
        at: T0,
        message: toolResult(call, "x".repeat(size)),
      });
    }
    return step ?? apply(cancelInput());
  };

  const stream = (callID: string, message: AssistantMessage) => {
    let step = null;
    for (const event of toEvents(message, 64)) step = apply({ type: "llm_event", callID, event });
    if (step === null) throw new Error("no events");
    return step;
  };

  const failBefore = (callID: string, failure: FailureKind) => {
    const error = { ...assistantMessage([], "error"), errorMessage: "503 overloaded" };
    apply({ type: "llm_event", callID, event: { type: "start", partial: error } });
    return apply({
      type: "llm_event",
      callID,
      event: { type: "error", reason: "error", error },
      failure,
    });
  };

  const overflow = (callID: string) => {
    const error = { ...assistantMessage([], "error"), errorMessage: "prompt is too long" };
    return apply({
      type: "llm_event",
      callID,
      event: { type: "error", reason: "error", error },
      contextOverflow: true,
    });
  };

  const cancelInput = (): Input => ({
    type: "cancel",
    inputID: next("cancel"),
    at: T0,
    reason: "user canceled",
  });

  /**
   * A process restart: only the committed state survives (as JSON). The resume command must ask
   * for the same model call (same id, same request bytes) or for the same tool calls.
   */
  const restart = (command: CallLLMCommand | null): void => {
    const committed = JSON.parse(serialise(state.committed)) as RuntimeState["committed"];
    const resumed = toResumeCommand(committed);
    if (command !== null) {
      assert.ok(resumed?.type === "call_llm");
      assert.equal(resumed.callID, command.callID);
      assert.equal(resumed.model, command.model);
      assert.equal(serialise(resumed.request), serialise(command.request));
      assert.equal(resumed.messagesHash, command.messagesHash);
    } else {
      assert.ok(resumed?.type === "call_client" || resumed?.type === "call_clients");
    }
    state = { committed, pending: null };
  };

  for (let turn = 0; turn < turns; turn += 1) {
    const message = `request ${turn}: carry on with step ${turn} of the plan`;
    if (turn === 0) feed(start(message, { settings: MIXED }));
    else if (pick(6) === 0) feed({ type: "compact", inputID: next("compact"), at: T0 });
    else
      feed({ type: "user_message", inputID: next("user"), at: T0, message: userMessage(message) });
  }
  return { state, calls, inputs };
}

/** Each assistant tool call is followed by its results, in content order; nothing else. */
function assertValidHistory(messages: readonly Message[], where: string): void {
  assert.notEqual(messages[0]?.role, "toolResult", `${where}: starts with a tool result`);
  let lastAssistant = -1;
  messages.forEach((message, i) => {
    if (message.role === "assistant") lastAssistant = i;
  });
  for (let i = 0; i < messages.length; i += 1) {
    const message = messages[i] as Message;
    if (message.role === "toolResult") {
      const text = message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
      if (text.startsWith("[The output of")) {
        assert.ok(i < lastAssistant, `${where}: result ${i} elided before the model answered it`);
      }
      continue;
    }
    if (message.role !== "assistant") continue;
    const ids = message.content.flatMap((b) => (b.type === "toolCall" ? [b.id] : []));
    const results = messages.slice(i + 1, i + 1 + ids.length);
    assert.deepEqual(
      results.map((r) => (r.role === "toolResult" ? r.toolCallId : r.role)),
      ids,
      `${where}: the calls of message ${i} are not followed by their results`,
    );
    const after = messages[i + 1 + ids.length];
    assert.ok(after?.role !== "toolResult", `${where}: a result without its call`);
  }
}

function assertRun(run: Run): void {
  const byID = new Map(run.calls.map((seen) => [seen.command.callID, seen]));
  let previous: Seen | null = null;
  for (const seen of run.calls) {
    const { command } = seen;
    assert.equal(command.messagesHash, hashHistory(command.request.messages).chainHash);
    assert.equal(command.messageCount, command.request.messages.length);
    if (seen.summary) {
      assert.equal(command.model, COMPACTION.summaryModel);
      assert.equal(command.failover, undefined, "a summary call failed over");
      assert.equal(command.fallbackLeft, undefined, "a summary call is routed");
      previous = null;
      continue;
    }
    assertValidHistory(command.request.messages, command.callID);
    if (command.failover !== undefined) {
      const failed = byID.get(command.failover.failedCallID);
      assert.ok(failed !== undefined);
      assert.notEqual(command.model, failed.command.model);
      assert.equal(
        toBytes(command.request.messages),
        toBytes(failed.command.request.messages),
        `${command.callID}: the failover does not repeat the request`,
      );
    }
    if (previous !== null && previous.records === seen.records) {
      const a = toBytes(previous.command.request.messages);
      const b = toBytes(command.request.messages);
      assert.equal(
        b.slice(0, a.length),
        a,
        `${command.callID} does not extend ${previous.command.callID}`,
      );
      assert.equal(command.request.systemPrompt, previous.command.request.systemPrompt);
    }
    previous = seen;
  }
  const committed = run.state.committed;
  assert.deepEqual(hashHistory(committed.messages), committed.hashes);
  assertValidHistory(committed.messages, "history");
}

const arbTape = fc.array(fc.nat({ max: 9_999 }), { minLength: 50, maxLength: 400 });

describe("batches, compaction and failover together", () => {
  test("generated conversations keep every guarantee", () => {
    fc.assert(
      fc.property(arbTape, (tape) => {
        assertRun(simulate(tape, 20));
      }),
      { numRuns: 25, seed: 2026 },
    );
  });

  test("the same inputs give the same requests", () => {
    fc.assert(
      fc.property(arbTape, (tape) => {
        const a = simulate(tape, 8);
        const b = simulate(tape, 8);
        assert.equal(serialise(b.calls), serialise(a.calls));
        assert.equal(serialise(b.state), serialise(a.state));
      }),
      { numRuns: 10, seed: 20 },
    );
  });
});

describe("a summary call on the turn's own model", () => {
  test("goes to the model the conversation is on, not back to the one that failed", () => {
    const settings: TurnSettings = {
      ...MIXED,
      compaction: { ...COMPACTION, auto: false, tailMessages: 1, summaryModel: MIXED.model },
    };
    let state = createConversation(CONVERSATION_ID);
    const step = (input: Input) => {
      const next = checkedTransition(state, input);
      assert.equal(next.rejected, null, next.rejected?.detail);
      state = next.state;
      return next.command;
    };
    const first = step(start("one", { settings }));
    assert.ok(first.type === "call_llm");
    const error = { ...assistantMessage([], "error"), errorMessage: "429" };
    const failover = step({
      type: "llm_event",
      callID: first.callID,
      event: { type: "error", reason: "error", error },
      failure: "rate_limited",
    });
    assert.ok(failover.type === "call_llm" && failover.model === "backup-1");
    for (const event of toEvents(assistantMessage([text("From the backup.")]))) {
      step({ type: "llm_event", callID: failover.callID, event });
    }
    assert.deepEqual(state.committed.route, { requested: "test-model", model: "backup-1" });
    const summary = step({ type: "compact", inputID: "compact:1", at: T0 });
    assert.ok(summary.type === "call_llm");
    assert.equal(summary.model, "backup-1");
    assert.equal(summary.fallbackLeft, undefined, "still not routed further");
    // A restart repeats it on the same model.
    const resumed = toResumeCommand(JSON.parse(serialise(state.committed)));
    assert.ok(resumed?.type === "call_llm");
    assert.equal(resumed.model, "backup-1");
  });

  test("a configured summary model is used as it is", () => {
    const settings: TurnSettings = {
      ...MIXED,
      compaction: { ...COMPACTION, auto: false, tailMessages: 1 },
    };
    let state = createConversation(CONVERSATION_ID);
    const first = checkedTransition(state, start("one", { settings }));
    state = first.state;
    assert.ok(first.command.type === "call_llm");
    for (const event of toEvents(assistantMessage([text("Hi.")]))) {
      state = checkedTransition(state, {
        type: "llm_event",
        callID: first.command.callID,
        event,
      }).state;
    }
    const summary = checkedTransition(state, { type: "compact", inputID: "c", at: T0 });
    assert.ok(summary.command.type === "call_llm");
    assert.equal(summary.command.model, COMPACTION.summaryModel);
  });
});
