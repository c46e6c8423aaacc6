/**
 * How a turn ends on the wire, for the loop's terminal commands:
 *
 * | command    | messages                                                        | end of stream            |
 * | ---------- | --------------------------------------------------------------- | ------------------------ |
 * | `final`    | checkpoint, turn_ended (usage)                                  | success (`{}`)           |
 * | `failed`   | checkpoint, turn_ended (usage)                                  | Connect error + details  |
 * | `canceled` | exec abort + tool_call_completed (if a tool ran), checkpoint,   | Connect error `canceled` |
 * |            | turn_ended (usage)                                              |                          |
 *
 * `turn_ended` always reports the tokens the turn actually consumed (peers send zeros on
 * cancel; real usage keeps the client's cost display honest). The transport writes `messages`
 * in order and then ends the stream with `error` (or success when it is null).
 */
import type { ConnectError } from "@connectrpc/connect";
import { BUDGET_REACHED_PREFIX, isBudgetRefusal } from "../../llm/index.ts";
import type {
  AssistantMessage,
  CanceledCommand,
  FailedCommand,
  FinalCommand,
  TurnEndRecord,
} from "../../loop/types.ts";
import { toCheckpointMessage } from "./checkpoint.ts";
import type { AgentServerMessage } from "./gen/agent/v1/agent_stream_pb.js";
import { toUpdateMessage } from "./server-message.ts";
import { abortToolCalls } from "./tool-session.ts";
import type { TurnState } from "./turn-state.ts";
import { classifyProviderError, toConnectError } from "./wire-error.ts";

export interface TurnEnd {
  readonly state: TurnState;
  readonly messages: readonly AgentServerMessage[];
  /** The Connect error to end the stream with; null for a normal end. */
  readonly error: ConnectError | null;
}

export function toTurnEnd(
  state: TurnState,
  command: FinalCommand | FailedCommand | CanceledCommand,
  context: { readonly at: number },
): TurnEnd {
  switch (command.type) {
    case "final":
      return { state, messages: [toCheckpointMessage(state), toTurnEnded(state)], error: null };
    case "failed":
      return {
        state,
        messages: [toCheckpointMessage(state), toTurnEnded(state)],
        error: toFailedError(command.message),
      };
    case "canceled": {
      const aborted = abortToolCalls(state, context.at, "canceled by the user");
      return {
        state: aborted.state,
        messages: [
          ...aborted.messages,
          toCheckpointMessage(aborted.state),
          toTurnEnded(aborted.state),
        ],
        error: toCanceledError(command.reason),
      };
    }
  }
}

/**
 * The error a stream ends with when it comes to a turn that had already ended (a reconnect after
 * a restart, a resume request): the one the turn's own stream ended with, made from the turn's
 * record (loop/turn-record.ts), except that it is never marked retryable — the turn is over, and
 * replaying this request cannot run it again; null for a normal end.
 */
export function toEndedTurnError(end: TurnEndRecord): ConnectError | null {
  switch (end.type) {
    case "final":
      return null;
    case "failed":
      return toFailedError(
        {
          ...(end.message === undefined ? {} : { errorMessage: end.message }),
          provider: end.provider ?? "",
        },
        { replayable: false },
      );
    case "canceled":
      return toCanceledError(end.reason);
  }
}

function toFailedError(
  message: Pick<AssistantMessage, "provider" | "errorMessage">,
  options: { readonly replayable: boolean } = { replayable: true },
): ConnectError {
  const detail = message.errorMessage ?? "the model call failed";
  return toConnectError(
    isBudgetRefusal(message)
      ? { kind: "budget", detail: detail.slice(BUDGET_REACHED_PREFIX.length) }
      : classifyProviderError(detail),
    options,
  );
}

function toCanceledError(reason: string): ConnectError {
  return toConnectError({ kind: "canceled", detail: reason });
}

export function toTurnEnded(state: TurnState): AgentServerMessage {
  const { usage } = state;
  return toUpdateMessage({
    case: "turnEnded",
    value: {
      inputTokens: BigInt(usage.input),
      outputTokens: BigInt(usage.output),
      cacheReadTokens: BigInt(usage.cacheRead),
      cacheWriteTokens: BigInt(usage.cacheWrite),
      reasoningTokens: BigInt(usage.reasoning),
    },
  });
}
