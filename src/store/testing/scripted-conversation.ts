/**
 * Test support for the store: a scripted conversation (model → tool call → result → model →
 * final) run through the real loop, so stores are tested with the states the loop produces.
 * Used by the contract suite, the crash-recovery driver and the tests; never by the store itself.
 */
import { createConversation } from "../../loop/state.ts";
import {
  assistantMessage,
  SETTINGS,
  T0,
  text,
  thinking,
  toEvents,
  toolCall,
  userMessage,
} from "../../loop/testing.ts";
import { transition } from "../../loop/transition.ts";
import type {
  AssistantMessage,
  Command,
  ConversationState,
  Input,
  Message,
  StartInput,
  ToolCall,
} from "../../loop/types.ts";

type ToolResultMessage = Extract<Message, { role: "toolResult" }>;

/** The user's request. Non-ASCII text and an emoji check that bytes survive storage. */
export function toStartInput(conversationID: string): StartInput {
  return {
    type: "start",
    inputID: `${conversationID}:start`,
    at: T0,
    userMessage: userMessage("Read a.ts and tell me what it does — ünïcödé 🚀"),
    context: [{ key: "workspace", text: "cwd: /home/dev/project" }],
    settings: SETTINGS,
  };
}

/**
 * The model's answer for call `step` of the turn: first a tool call whose argument keys are not
 * sorted (their order must survive byte for byte), then a final text.
 */
export function toScriptedResponse(step: number): AssistantMessage {
  if (step === 0) {
    return assistantMessage(
      [
        thinking("The user wants a.ts; read it first.", "sig-Zm9vYmFy"),
        text("Let me read the file."),
        toolCall("call_0", "read", { path: "a.ts", limit: 200, encoding: "utf8" }),
      ],
      "toolUse",
      T0 + 1,
    );
  }
  return assistantMessage(
    [text("a.ts exports `add(a, b)`, which returns the sum of two numbers.")],
    "stop",
    T0 + 3,
  );
}

/** What the scripted client answers for a tool call. */
export function toScriptedToolResult(call: ToolCall): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: [{ type: "text", text: "export function add(a, b) {\n  return a + b;\n}\n" }],
    isError: false,
    timestamp: T0 + 2,
  };
}

/** The input id under which a model call's terminal event is committed. */
export function toLLMInputID(callID: string): string {
  return callID;
}

/** The input id of a tool result. */
export function toToolResultInputID(operationID: string): string {
  return `${operationID}:result`;
}

export interface ScriptedCommit {
  readonly inputID: string;
  readonly state: ConversationState;
  readonly command: Command;
}

/**
 * Every commit of the scripted conversation, in order, as a runner would make them: one per
 * input that changed the committed state.
 */
export function toScriptedCommits(conversationID: string): ScriptedCommit[] {
  const commits: ScriptedCommit[] = [];
  let state = createConversation(conversationID);
  const apply = (input: Input, inputID: string): void => {
    const step = transition(state, input);
    if (step.rejected !== null) throw new Error(`scripted input rejected: ${step.rejected.detail}`);
    if (step.state.committed !== state.committed) {
      commits.push({ inputID, state: step.state.committed, command: step.command });
    }
    state = step.state;
  };
  apply(toStartInput(conversationID), `${conversationID}:start`);
  while (state.committed.status !== "final") {
    const { committed } = state;
    if (committed.status === "waiting_llm" && committed.call !== null) {
      const { callID, step } = committed.call;
      for (const event of toEvents(toScriptedResponse(step))) {
        apply({ type: "llm_event", callID, event }, toLLMInputID(callID));
      }
    } else if (committed.status === "waiting_client" && committed.waiting !== null) {
      const { calls, answered, operationIDs } = committed.waiting;
      const call = calls[answered] as ToolCall;
      const inputID = toToolResultInputID(operationIDs[answered] as string);
      apply(
        { type: "tool_result", inputID, at: T0 + 2, message: toScriptedToolResult(call) },
        inputID,
      );
    } else {
      throw new Error(`scripted conversation stuck in ${committed.status}`);
    }
  }
  return commits;
}
