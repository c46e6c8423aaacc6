/**
 * What a user would see of a turn, read from the server messages in order: the answer text,
 * the thinking text, tool calls started and completed, shell output, usage and the checkpoint.
 */
import type { AgentServerMessage } from "../cursor/gen/agent/v1/agent_stream_pb.js";
import type { ConversationStateStructure } from "../cursor/gen/agent/v1/conversation_state_pb.js";
import type { ExecServerMessage } from "../cursor/gen/agent/v1/exec_pb.js";
import type { InteractionQuery } from "../cursor/gen/agent/v1/interaction_query_pb.js";
import type { TurnEndedUpdate } from "../cursor/gen/agent/v1/interaction_update_pb.js";
import type { ToolCall } from "../cursor/gen/agent/v1/tool_call_pb.js";

export interface ToolCallView {
  readonly callId: string;
  readonly modelCallId: string;
  /** The UI variant (`ToolCall.tool` case), e.g. `readToolCall`, `shellToolCall`. */
  readonly variant: ToolCall["tool"]["case"];
  readonly toolCall: ToolCall | undefined;
}

export interface TurnUsageView {
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  readonly cacheReadTokens?: number;
  readonly cacheWriteTokens?: number;
  readonly reasoningTokens?: number;
}

export interface TurnView {
  /** All `text_delta` texts, concatenated (server notices excluded). */
  readonly text: string;
  /** The `text_delta`s marked `is_server_notice`: notes from the server to the user. */
  readonly notices: readonly string[];
  /** All `thinking_delta` texts, concatenated. */
  readonly thinking: string;
  readonly toolCallsStarted: readonly ToolCallView[];
  readonly toolCallsCompleted: readonly ToolCallView[];
  readonly partialToolCalls: readonly ToolCallView[];
  /** The last `turn_ended`, if any. */
  readonly turnEnded: TurnEndedUpdate | undefined;
  /** `turn_ended`'s usage as numbers (absent fields stay absent). */
  readonly usage: TurnUsageView | undefined;
  /** `shell_output_delta` stdout and stderr, concatenated; the last exit code. */
  readonly shellOutput: {
    readonly stdout: string;
    readonly stderr: string;
    readonly exitCode?: number;
  };
  /** The last `conversation_checkpoint_update`. */
  readonly checkpoint: ConversationStateStructure | undefined;
  readonly checkpoints: number;
  readonly execs: readonly ExecServerMessage[];
  readonly queries: readonly InteractionQuery[];
  readonly heartbeats: number;
  /** `case` of every message in order: the update's case for interaction updates. */
  readonly kinds: readonly string[];
}

export function toTurnView(messages: readonly AgentServerMessage[]): TurnView {
  let text = "";
  const notices: string[] = [];
  let thinking = "";
  let stdout = "";
  let stderr = "";
  let exitCode: number | undefined;
  let turnEnded: TurnEndedUpdate | undefined;
  let checkpoint: ConversationStateStructure | undefined;
  let checkpoints = 0;
  let heartbeats = 0;
  const started: ToolCallView[] = [];
  const completed: ToolCallView[] = [];
  const partial: ToolCallView[] = [];
  const execs: ExecServerMessage[] = [];
  const queries: InteractionQuery[] = [];
  for (const message of messages) {
    const branch = message.message;
    switch (branch.case) {
      case "interactionUpdate": {
        const update = branch.value.message;
        switch (update.case) {
          case "textDelta":
            if (update.value.isServerNotice) notices.push(update.value.text);
            else text += update.value.text;
            break;
          case "thinkingDelta":
            thinking += update.value.text;
            break;
          case "toolCallStarted":
            started.push(toToolCallView(update.value));
            break;
          case "toolCallCompleted":
            completed.push(toToolCallView(update.value));
            break;
          case "partialToolCall":
            partial.push(toToolCallView(update.value));
            break;
          case "shellOutputDelta": {
            const event = update.value.event;
            if (event.case === "stdout") stdout += event.value.data;
            else if (event.case === "stderr") stderr += event.value.data;
            else if (event.case === "exit") exitCode = event.value.code;
            break;
          }
          case "turnEnded":
            turnEnded = update.value;
            break;
          case "heartbeat":
            heartbeats += 1;
            break;
          default:
            break;
        }
        break;
      }
      case "conversationCheckpointUpdate":
        checkpoint = branch.value;
        checkpoints += 1;
        break;
      case "execServerMessage":
        execs.push(branch.value);
        break;
      case "interactionQuery":
        queries.push(branch.value);
        break;
      default:
        break;
    }
  }
  return {
    text,
    notices,
    thinking,
    toolCallsStarted: started,
    toolCallsCompleted: completed,
    partialToolCalls: partial,
    turnEnded,
    usage: turnEnded === undefined ? undefined : toUsage(turnEnded),
    shellOutput: exitCode === undefined ? { stdout, stderr } : { stdout, stderr, exitCode },
    checkpoint,
    checkpoints,
    execs,
    queries,
    heartbeats,
    kinds: messages.map(toKind),
  };
}

/** A short name for a message: the update's case for interaction updates, else the branch. */
export function toKind(message: AgentServerMessage): string {
  const branch = message.message;
  if (branch.case === "interactionUpdate") return branch.value.message.case ?? "interactionUpdate";
  if (branch.case === "execServerMessage") return `exec:${branch.value.message.case ?? "?"}`;
  if (branch.case === "kvServerMessage") return `kv:${branch.value.message.case ?? "?"}`;
  return branch.case ?? "unknown";
}

function toToolCallView(update: {
  readonly callId: string;
  readonly modelCallId: string;
  readonly toolCall?: ToolCall;
}): ToolCallView {
  return {
    callId: update.callId,
    modelCallId: update.modelCallId,
    variant: update.toolCall?.tool.case,
    toolCall: update.toolCall,
  };
}

function toUsage(update: TurnEndedUpdate): TurnUsageView {
  const usage: Record<string, number> = {};
  const set = (key: keyof TurnUsageView, value: bigint | undefined): void => {
    if (value !== undefined) usage[key] = Number(value);
  };
  set("inputTokens", update.inputTokens);
  set("outputTokens", update.outputTokens);
  set("cacheReadTokens", update.cacheReadTokens);
  set("cacheWriteTokens", update.cacheWriteTokens);
  set("reasoningTokens", update.reasoningTokens);
  return usage;
}
