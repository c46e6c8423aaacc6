/**
 * Test helpers for the loop: message and event builders, and a given/when/then specification.
 *
 * `given(...inputs)` folds inputs from a new conversation (each must be applied), `when(input)`
 * runs one transition, and the outcome's `thenExpect(...)` checks the command, the emitted events, the
 * status and the messages appended. Every `when` also checks the loop's invariants: the
 * transition is deterministic over serialised bytes, it does not mutate its arguments, history
 * only grows, and a rejected input changes nothing.
 *
 * Why one file of about 550 lines: the loop's test vocabulary (builders and the given/when/then
 * specification with its invariant checks) is imported as one module by every loop test.
 */
import assert from "node:assert/strict";
import type {
  AssistantMessage,
  ResponseEvent,
  TextContent,
  ThinkingContent,
  Tool,
  ToolCall,
  ToolResultMessage,
  Usage,
  UserMessage,
} from "../llm/types.ts";
import { toCanonicalJSON } from "./canonical-json.ts";
import { createConversation } from "./state.ts";
import { transition } from "./transition.ts";
import type {
  Command,
  ContextSupplement,
  Input,
  Message,
  RejectionReason,
  RuntimeState,
  Status,
  Transition,
  TurnSettings,
} from "./types.ts";

export const CONVERSATION_ID = "conv-1";
export const T0 = 1_767_225_600_000;

// ---------------------------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------------------------

export const READ_TOOL: Tool = {
  name: "read",
  description: "Read a file.",
  parameters: {
    type: "object",
    properties: { path: { type: "string" } },
    required: ["path"],
  },
};

export const SETTINGS: TurnSettings = {
  model: "test-model",
  systemPrompt: "You are a careful coding agent.",
  tools: [READ_TOOL],
};

export const SHELL_TOOL: Tool = {
  name: "shell",
  description: "Run a command.",
  parameters: {
    type: "object",
    properties: { command: { type: "string" } },
    required: ["command"],
  },
};

/** Settings where `read` is read-only (its calls run together) and `shell` has effects. */
export const BATCH_SETTINGS: TurnSettings = {
  model: "test-model",
  systemPrompt: "You are a careful coding agent.",
  tools: [READ_TOOL, SHELL_TOOL],
  readOnlyTools: ["read"],
};

export function zeroUsage(): Usage {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

export function userMessage(text: string, at = T0): UserMessage {
  return { role: "user", content: text, timestamp: at };
}

export function text(value: string): TextContent {
  return { type: "text", text: value };
}

export function thinking(value: string, signature?: string): ThinkingContent {
  return signature === undefined
    ? { type: "thinking", thinking: value }
    : { type: "thinking", thinking: value, thinkingSignature: signature };
}

export function toolCall(id: string, name: string, args: ToolCall["arguments"] = {}): ToolCall {
  return { type: "toolCall", id, name, arguments: args };
}

export function assistantMessage(
  content: AssistantMessage["content"],
  stopReason: AssistantMessage["stopReason"] = content.some((b) => b.type === "toolCall")
    ? "toolUse"
    : "stop",
  at = T0,
): AssistantMessage {
  return {
    role: "assistant",
    content,
    api: "openai-completions",
    provider: "test",
    model: "test-model",
    responseId: `resp-${at}`,
    usage: { ...zeroUsage(), input: 10, output: 5, totalTokens: 15 },
    stopReason,
    timestamp: at,
  };
}

export function toolResult(
  call: ToolCall,
  output: string,
  isError = false,
  at = T0,
): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: [{ type: "text", text: output }],
    isError,
    timestamp: at,
  };
}

// Inputs ----------------------------------------------------------------------------------------

/** Input ids are derived from the input's content, so that the same script gives the same ids. */
function textOf(message: UserMessage): string {
  return typeof message.content === "string" ? message.content : JSON.stringify(message.content);
}

export function start(
  message: UserMessage | string,
  options: { context?: ContextSupplement[]; settings?: TurnSettings; inputID?: string } = {},
): Input {
  const userMsg = typeof message === "string" ? userMessage(message) : message;
  return {
    type: "start",
    inputID: options.inputID ?? `start:${textOf(userMsg)}`,
    at: userMsg.timestamp,
    userMessage: userMsg,
    context: options.context ?? [],
    settings: options.settings ?? SETTINGS,
  };
}

export function followUp(message: UserMessage | string): Input {
  const userMsg = typeof message === "string" ? userMessage(message) : message;
  return {
    type: "user_message",
    inputID: `user:${textOf(userMsg)}`,
    at: userMsg.timestamp,
    message: userMsg,
  };
}

export function llm(callID: string, event: ResponseEvent): Input {
  return { type: "llm_event", callID, event };
}

export function result(call: ToolCall, output: string, isError = false): Input {
  return {
    type: "tool_result",
    inputID: `result:${call.id}`,
    at: T0,
    message: toolResult(call, output, isError),
  };
}

export function cancel(reason = "user canceled"): Input {
  return { type: "cancel", inputID: `cancel:${reason}`, at: T0, reason };
}

// Streams ---------------------------------------------------------------------------------------

/**
 * The events a provider stream produces for `message`, the way pi-ai emits them: `start`, each
 * block's start/deltas/end (text split into `chunkSize` pieces), then `done`. Each event's
 * `partial` is its own snapshot.
 */
export function toEvents(message: AssistantMessage, chunkSize = 4): ResponseEvent[] {
  const events: ResponseEvent[] = [];
  const partial: AssistantMessage = { ...message, content: [], stopReason: "pending" };
  const snapshot = (): AssistantMessage => structuredClone(partial);
  events.push({ type: "start", partial: snapshot() });
  message.content.forEach((block, contentIndex) => {
    switch (block.type) {
      case "text": {
        partial.content.push({ type: "text", text: "" });
        events.push({ type: "text_start", contentIndex, partial: snapshot() });
        for (const delta of chunk(block.text, chunkSize)) {
          partial.content[contentIndex] = {
            type: "text",
            text: `${textAt(partial, contentIndex)}${delta}`,
          };
          events.push({ type: "text_delta", contentIndex, delta, partial: snapshot() });
        }
        partial.content[contentIndex] = block;
        events.push({ type: "text_end", contentIndex, content: block.text, partial: snapshot() });
        break;
      }
      case "thinking": {
        partial.content.push({ ...block, thinking: "" });
        events.push({ type: "thinking_start", contentIndex, partial: snapshot() });
        for (const delta of chunk(block.thinking, chunkSize)) {
          const current = partial.content[contentIndex] as ThinkingContent;
          partial.content[contentIndex] = { ...current, thinking: current.thinking + delta };
          events.push({ type: "thinking_delta", contentIndex, delta, partial: snapshot() });
        }
        partial.content[contentIndex] = block;
        events.push({
          type: "thinking_end",
          contentIndex,
          content: block.thinking,
          partial: snapshot(),
        });
        break;
      }
      case "toolCall": {
        partial.content.push({ ...block, arguments: {} });
        events.push({ type: "toolcall_start", contentIndex, partial: snapshot() });
        for (const delta of chunk(JSON.stringify(block.arguments), chunkSize)) {
          events.push({ type: "toolcall_delta", contentIndex, delta, partial: snapshot() });
        }
        partial.content[contentIndex] = block;
        events.push({ type: "toolcall_end", contentIndex, toolCall: block, partial: snapshot() });
        break;
      }
    }
  });
  const reason = message.stopReason;
  if (reason === "stop" || reason === "length" || reason === "toolUse") {
    events.push({ type: "done", reason, message });
  } else if (reason === "error" || reason === "aborted") {
    events.push({ type: "error", reason, error: message });
  }
  return events;
}

/** The events of `message`, each wrapped as an input of call `callID`. */
export function streamed(callID: string, message: AssistantMessage, chunkSize = 4): Input[] {
  return toEvents(message, chunkSize).map((event) => llm(callID, event));
}

function chunk(value: string, size: number): string[] {
  const parts: string[] = [];
  for (let i = 0; i < value.length; i += size) parts.push(value.slice(i, i + size));
  return parts;
}

function textAt(message: AssistantMessage, index: number): string {
  const block = message.content[index];
  return block?.type === "text" ? block.text : "";
}

// ---------------------------------------------------------------------------------------------
// given / when / then
// ---------------------------------------------------------------------------------------------

export interface Expected {
  /** The command's type, or the command itself compared deeply. */
  command?: Command["type"] | Command;
  /** The types of the emitted events, in order. */
  emit?: ResponseEvent["type"][];
  status?: Status;
  /** The messages this transition appended to history. */
  appended?: Message[];
}

export interface Outcome {
  readonly before: RuntimeState;
  readonly transition: Transition;
  thenExpect(expected: Expected): Outcome;
  thenRejected(reason: RejectionReason): Outcome;
}

export interface Spec {
  readonly state: RuntimeState;
  given(...inputs: (Input | Input[])[]): Spec;
  when(input: Input): Outcome;
  /** Applies several inputs in turn (each checked as `when` does) and returns the last outcome. */
  whenAll(inputs: Input[]): Outcome;
}

export function given(...inputs: (Input | Input[])[]): Spec {
  return fromState(createConversation(CONVERSATION_ID)).given(...inputs);
}

export function fromState(state: RuntimeState): Spec {
  return {
    state,
    given(...inputs) {
      let current = state;
      for (const input of inputs.flat()) {
        const step = checkedTransition(current, input);
        assert.equal(
          step.rejected,
          null,
          `given input ${describe(input)} was rejected: ${step.rejected?.reason} ${step.rejected?.detail}`,
        );
        current = step.state;
      }
      return fromState(current);
    },
    when(input) {
      return toOutcome(state, checkedTransition(state, input));
    },
    whenAll(inputs) {
      assert.ok(inputs.length > 0, "whenAll needs at least one input");
      let current = state;
      let outcome: Outcome | undefined;
      for (const input of inputs) {
        outcome = toOutcome(current, checkedTransition(current, input));
        current = outcome.transition.state;
      }
      return outcome as Outcome;
    },
  };
}

function toOutcome(before: RuntimeState, step: Transition): Outcome {
  const outcome: Outcome = {
    before,
    transition: step,
    thenExpect(expected) {
      assert.equal(step.rejected, null, `input was rejected: ${step.rejected?.detail}`);
      if (expected.command !== undefined) {
        if (typeof expected.command === "string") assert.equal(step.command.type, expected.command);
        else assert.deepEqual(step.command, expected.command);
      }
      if (expected.emit !== undefined) {
        assert.deepEqual(
          step.emit.map((event) => event.type),
          expected.emit,
        );
      }
      if (expected.status !== undefined) assert.equal(step.state.committed.status, expected.status);
      if (expected.appended !== undefined) {
        assert.deepEqual(
          step.state.committed.messages.slice(before.committed.messages.length),
          expected.appended,
        );
      }
      return outcome;
    },
    thenRejected(reason) {
      assert.equal(step.rejected?.reason, reason, `expected rejection ${reason}`);
      return outcome;
    },
  };
  return outcome;
}

/**
 * Runs `transition` twice on the same arguments and checks the invariants every transition must
 * keep, whatever the input.
 */
export function checkedTransition(state: RuntimeState, input: Input): Transition {
  const stateBefore = serialise(state);
  const inputBefore = serialise(input);
  const first = transition(state, input);
  const second = transition(state, input);
  assert.equal(serialise(state), stateBefore, "transition mutated its state argument");
  assert.equal(serialise(input), inputBefore, "transition mutated its input argument");
  assert.equal(serialise(first), serialise(second), "transition is not deterministic");

  const before = state.committed.messages;
  const after = first.state.committed.messages;
  assert.ok(after.length >= before.length, "history shrank");
  for (let i = 0; i < before.length; i += 1) {
    assert.equal(after[i], before[i], `message ${i} was replaced`);
  }
  if (first.rejected !== null) {
    assert.equal(first.state, state, "a rejected input changed the state");
    assert.deepEqual(first.emit, [], "a rejected input emitted events");
  }
  return first;
}

/** Canonical bytes of any loop value, for byte-level comparisons. */
export function serialise(value: unknown): string {
  return toCanonicalJSON(value);
}

function describe(input: Input): string {
  return input.type === "llm_event" ? `llm_event(${input.event.type})` : input.type;
}

// ---------------------------------------------------------------------------------------------
// A scripted driver: the loop with a scripted model and client, the way the runner drives it
// ---------------------------------------------------------------------------------------------

export interface Script {
  /** The model's response to each call, in call order. */
  readonly responses: readonly AssistantMessage[];
  /** The client's output for a tool call. */
  readonly run?: (call: ToolCall) => string;
  /** Answer all tool calls of a message at once, last first (out of order). */
  readonly reverseResults?: boolean;
  /**
   * The order the client answers the calls of a batch (`call_clients`) in: a permutation of
   * `0..n-1` for a batch of `n`; content order when absent.
   */
  readonly batchOrder?: (size: number, batch: number) => readonly number[];
  /** Split deltas into pieces of this size. */
  readonly chunkSize?: number;
}

export interface Driven {
  readonly state: RuntimeState;
  readonly transitions: Transition[];
  /** The inputs fed to the loop, one per transition. */
  readonly inputs: Input[];
  readonly calls: Extract<Command, { type: "call_llm" }>[];
  readonly outcome: Command;
}

/**
 * Runs `input` and everything it leads to until the turn ends or waits for an input the script
 * does not provide, checking every transition as `when` does.
 */
export function drive(
  state: RuntimeState,
  input: Input,
  script: Script,
  responseOffset = 0,
): Driven {
  const transitions: Transition[] = [];
  const inputs: Input[] = [];
  const calls: Extract<Command, { type: "call_llm" }>[] = [];
  const queue: Input[] = [input];
  let current = state;
  let responseIndex = responseOffset;
  let outcome: Command = { type: "wait_input" };
  let batches = 0;
  const run = script.run ?? ((call: ToolCall) => `output of ${call.name}`);
  while (queue.length > 0) {
    const next = queue.shift() as Input;
    const step = checkedTransition(current, next);
    inputs.push(next);
    transitions.push(step);
    current = step.state;
    outcome = step.command;
    switch (step.command.type) {
      case "call_llm": {
        calls.push(step.command);
        const response = script.responses[responseIndex];
        responseIndex += 1;
        if (response === undefined) return { state: current, transitions, inputs, calls, outcome };
        queue.push(...streamed(step.command.callID, response, script.chunkSize));
        break;
      }
      case "call_client": {
        const waiting = current.committed.waiting;
        if (script.reverseResults && waiting !== null && waiting.answered === 0) {
          const pendingCalls = [...waiting.calls].reverse();
          queue.push(...pendingCalls.map((call) => result(call, run(call))));
        } else if (!script.reverseResults) {
          queue.push(result(step.command.toolCall, run(step.command.toolCall)));
        }
        break;
      }
      case "call_clients": {
        const calls = step.command.calls;
        const order = script.batchOrder?.(calls.length, batches) ?? calls.map((_, i) => i);
        batches += 1;
        for (const i of order) {
          const call = (calls[i] as (typeof calls)[number]).toolCall;
          queue.push(result(call, run(call)));
        }
        break;
      }
      default:
        break;
    }
  }
  return { state: current, transitions, inputs, calls, outcome };
}

// ---------------------------------------------------------------------------------------------
// Compaction
// ---------------------------------------------------------------------------------------------

/** Settings with automatic compaction in a small window: 800 input tokens, compact above 400. */
export const COMPACTING: TurnSettings = {
  ...SETTINGS,
  compaction: {
    auto: true,
    contextWindow: 1_000,
    outputReserve: 200,
    threshold: 0.5,
    summaryModel: "summary-model",
    tailMessages: 2,
    charsPerToken: 4,
  },
};

/** An assistant message whose usage report says the request held `tokens` tokens. */
export function assistantWithUsage(
  content: AssistantMessage["content"],
  tokens: number,
  at = T0,
): AssistantMessage {
  const message = assistantMessage(content, undefined, at);
  return { ...message, usage: { ...message.usage, input: tokens, totalTokens: tokens + 5 } };
}

/** A compact request (the client's summarize action). */
export function compact(inputID = "compact:1"): Input {
  return { type: "compact", inputID, at: T0 };
}

/** A context-length error of call `callID`, classified as such by the runner. */
export function overflow(
  callID: string,
  message = "prompt is too long: 1200 tokens > 1000",
): Input {
  const error = { ...assistantMessage([], "error"), errorMessage: message };
  return {
    type: "llm_event",
    callID,
    event: { type: "error", reason: "error", error },
    contextOverflow: true,
  };
}
