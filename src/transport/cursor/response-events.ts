/**
 * The model's stream → the client's UI stream. Each native `ResponseEvent` the loop emits
 * becomes zero or more `interaction_update`s:
 *
 * | event           | sent                                                                     |
 * | --------------- | ------------------------------------------------------------------------ |
 * | text_delta      | text_delta                                                               |
 * | thinking_delta  | thinking_delta                                                           |
 * | thinking_end    | thinking_completed, with the time since thinking_start                   |
 * | toolcall_start  | partial_tool_call (UI variant of the tool, no args yet)                  |
 * | toolcall_delta  | partial_tool_call with the argument text delta                           |
 * | done            | token_delta (output tokens); the call's text/thinking become turn steps |
 * | others          | nothing (start, *_start of text, text_end, toolcall_end, error)           |
 *
 * `tool_call_started` is sent when the tool actually starts (tool-session.ts), not when the
 * model finishes writing it, because calls run one at a time.
 */
import { create } from "@bufbuild/protobuf";
import type { AssistantMessage, ResponseEvent } from "../../llm/types.ts";
import { deepFreeze } from "./deep-freeze.ts";
import type { AgentServerMessage } from "./gen/agent/v1/agent_stream_pb.js";
import {
  type ConversationStep,
  ConversationStepSchema,
} from "./gen/agent/v1/conversation_state_pb.js";
import { ToolCallSchema } from "./gen/agent/v1/tool_call_pb.js";
import { toTextDeltaMessage, toThinkingDeltaMessage, toUpdateMessage } from "./server-message.ts";
import { findTool } from "./tools/catalogue.ts";
import { addUsage, type StreamingToolCall, type TurnState, toContextTokens } from "./turn-state.ts";

export interface EventContext {
  /** Arrival time of the event, epoch ms. */
  readonly at: number;
  /** The loop's id of the model call the event belongs to (sent as `model_call_id`). */
  readonly callID: string;
}

export interface Outbound {
  readonly state: TurnState;
  readonly messages: readonly AgentServerMessage[];
}

export function fromResponseEvent(
  state: TurnState,
  event: ResponseEvent,
  context: EventContext,
): Outbound {
  switch (event.type) {
    case "start":
      return {
        state: {
          ...state,
          modelCallID: context.callID,
          streaming: [],
          thinking: null,
          thinkingDurations: [],
        },
        messages: [],
      };
    case "text_delta":
      if (event.delta === "") return { state, messages: [] };
      return {
        state,
        messages: [toTextDeltaMessage(event.delta)],
      };
    case "thinking_start":
      return {
        state: { ...state, thinking: { contentIndex: event.contentIndex, startedAt: context.at } },
        messages: [],
      };
    case "thinking_delta":
      if (event.delta === "") return { state, messages: [] };
      return {
        state,
        messages: [toThinkingDeltaMessage(event.delta)],
      };
    case "thinking_end": {
      const startedAt =
        state.thinking?.contentIndex === event.contentIndex ? state.thinking.startedAt : context.at;
      const durationMs = Math.max(0, Math.min(context.at - startedAt, 0x7fff_ffff));
      return {
        state: {
          ...state,
          thinking: null,
          thinkingDurations: [
            ...state.thinkingDurations,
            { contentIndex: event.contentIndex, durationMs },
          ],
        },
        messages: [
          toUpdateMessage({ case: "thinkingCompleted", value: { thinkingDurationMs: durationMs } }),
        ],
      };
    }
    case "toolcall_start":
    case "toolcall_delta":
      return toPartialToolCall(state, event, context);
    case "done": {
      const usage = event.message.usage;
      return {
        state: {
          ...state,
          usage: addUsage(state.usage, usage),
          contextTokens: toContextTokens(usage),
          steps: [...state.steps, ...toSteps(event.message, state)],
          streaming: [],
        },
        messages:
          usage.output > 0
            ? [
                toUpdateMessage({
                  case: "tokenDelta",
                  value: { tokens: Math.min(usage.output, 0x7fff_ffff) },
                }),
              ]
            : [],
      };
    }
    case "error":
      return {
        state: { ...state, usage: addUsage(state.usage, event.error.usage), streaming: [] },
        messages: [],
      };
    default:
      return { state, messages: [] };
  }
}

function toPartialToolCall(
  state: TurnState,
  event: Extract<ResponseEvent, { type: "toolcall_start" | "toolcall_delta" }>,
  context: EventContext,
): Outbound {
  let streaming = state.streaming.find((entry) => entry.contentIndex === event.contentIndex);
  let next = state;
  if (streaming === undefined) {
    const block = event.partial.content[event.contentIndex];
    if (block?.type !== "toolCall" || block.id === "" || block.name === "")
      return { state, messages: [] };
    const tool = findTool(block.name, state.mode, state.mcpTools, state.web);
    streaming = {
      contentIndex: event.contentIndex,
      toolCallID: block.id,
      toolName: block.name,
      // Frozen: every partial_tool_call of the call carries this one object, and its bytes are
      // cached by identity (server-message.ts).
      preview: deepFreeze(
        create(ToolCallSchema, {
          toolCallId: block.id,
          ...(tool === null ? {} : { tool: tool.preview() }),
        }),
      ),
    };
    next = { ...state, streaming: [...state.streaming, streaming] };
  }
  const delta = event.type === "toolcall_delta" ? event.delta : "";
  if (event.type === "toolcall_delta" && delta === "") return { state: next, messages: [] };
  return { state: next, messages: [toPartialMessage(streaming, delta, context.callID)] };
}

function toPartialMessage(
  streaming: StreamingToolCall,
  delta: string,
  modelCallID: string,
): AgentServerMessage {
  return toUpdateMessage({
    case: "partialToolCall",
    value: {
      callId: streaming.toolCallID,
      // One message for all of the call's updates: they are only serialised, never changed.
      toolCall: streaming.preview,
      argsTextDelta: delta,
      modelCallId: modelCallID,
    },
  });
}

/** The text and thinking of a finished model call, as checkpoint steps. */
function toSteps(message: AssistantMessage, state: TurnState): ConversationStep[] {
  const steps: ConversationStep[] = [];
  message.content.forEach((block, index) => {
    if (block.type === "thinking" && block.thinking !== "") {
      const durationMs =
        state.thinkingDurations.find((entry) => entry.contentIndex === index)?.durationMs ?? 0;
      steps.push(
        create(ConversationStepSchema, {
          message: { case: "thinkingMessage", value: { text: block.thinking, durationMs } },
        }),
      );
    } else if (block.type === "text" && block.text !== "") {
      steps.push(
        create(ConversationStepSchema, {
          message: { case: "assistantMessage", value: { text: block.text } },
        }),
      );
    }
  });
  return steps;
}
