/**
 * `conversation_checkpoint_update`: the conversation state the client stores and sends back with
 * the next run request. Built from the checkpoint the client sent (so fields this server does
 * not manage, and unknown fields, survive unchanged) plus this turn, in the inline form: each
 * turn is a serialized ConversationTurnStructure whose user message and steps are serialized
 * bytes too (docs/protocol.md §2.10). Blob-backed turns (`set_blob_args`, needed for forking a
 * chat) are not produced yet.
 */
import { clone, create, toBinary } from "@bufbuild/protobuf";
import type { AgentServerMessage } from "./gen/agent/v1/agent_stream_pb.js";
import { AgentServerMessageSchema } from "./gen/agent/v1/agent_stream_pb.js";
import { TodoItemSchema } from "./gen/agent/v1/common_pb.js";
import {
  type ConversationStateStructure,
  ConversationStateStructureSchema,
  ConversationStepSchema,
  ConversationTokenDetailsSchema,
  ConversationTurnStructureSchema,
} from "./gen/agent/v1/conversation_state_pb.js";
import { UserMessageSchema } from "./gen/agent/v1/user_message_pb.js";
import type { TurnState } from "./turn-state.ts";

/**
 * Largest checkpoint sent. The client keeps each checkpoint as one blob in its renderer, and
 * very large ones stall it (peers cap at 512 KiB); older material is dropped first.
 */
export const MAX_CHECKPOINT_BYTES = 512 * 1024;

const UINT32_MAX = 0xffff_ffff;

export function toCheckpoint(state: TurnState): ConversationStateStructure {
  // A copy: the state's value is never mutated.
  const checkpoint = clone(ConversationStateStructureSchema, state.previous);
  checkpoint.turns = [...state.previous.turns, toTurnBytes(state)];
  checkpoint.pendingToolCalls = state.open.map(toPendingToolCall);
  // A stale breakdown from an earlier checkpoint would contradict the new totals.
  checkpoint.tokenDetails = create(ConversationTokenDetailsSchema, {
    usedTokens: Math.min(state.contextTokens, UINT32_MAX),
    maxTokens: Math.min(state.contextWindow, UINT32_MAX),
  });
  checkpoint.mode = state.agentMode;
  checkpoint.todos = state.todos.map((todo) => toBinary(TodoItemSchema, todo));
  return fitCheckpoint(checkpoint);
}

export function toCheckpointMessage(state: TurnState): AgentServerMessage {
  return create(AgentServerMessageSchema, {
    message: { case: "conversationCheckpointUpdate", value: toCheckpoint(state) },
  });
}

/** This turn as inline bytes: ConversationTurnStructure{agent_conversation_turn{…}}. */
export function toTurnBytes(state: TurnState): Uint8Array {
  const turn = create(ConversationTurnStructureSchema, {
    turn: {
      case: "agentConversationTurn",
      value: {
        userMessage: toBinary(UserMessageSchema, state.userMessage),
        steps: state.steps.map((step) => toBinary(ConversationStepSchema, step)),
        requestId: state.requestID,
      },
    },
  });
  return toBinary(ConversationTurnStructureSchema, turn);
}

/** An open tool call in the AI-SDK-style JSON peers send (one assistant message, one call). */
function toPendingToolCall(open: TurnState["open"][number]): string {
  return JSON.stringify({
    id: open.toolCallID,
    role: "assistant",
    content: [
      {
        type: "tool-call",
        toolCallId: open.toolCallID,
        toolName: open.toolName,
        args: open.arguments,
      },
    ],
  });
}

/**
 * Drops what the client can do without, oldest first, until the checkpoint fits: replay JSON,
 * file snapshots, read paths, then earlier turns. The current turn is always kept.
 */
function fitCheckpoint(checkpoint: ConversationStateStructure): ConversationStateStructure {
  const size = () => toBinary(ConversationStateStructureSchema, checkpoint).length;
  if (size() <= MAX_CHECKPOINT_BYTES) return checkpoint;
  checkpoint.rootPromptMessagesJson = [];
  checkpoint.fileStates = {};
  checkpoint.fileStatesV2 = {};
  checkpoint.readPaths = [];
  while (size() > MAX_CHECKPOINT_BYTES && checkpoint.turns.length > 1) {
    checkpoint.turns = checkpoint.turns.slice(1);
  }
  return checkpoint;
}
