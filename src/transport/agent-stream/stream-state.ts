/**
 * What the parts of one agent stream share (agent-stream.ts puts them together). The stream goes
 * through three phases, read from these fields:
 *
 * | phase    | `turn`      | `outbound.ended` | reached by                                          |
 * |----------|-------------|------------------|-----------------------------------------------------|
 * | no turn  | null        | false            | opening the stream                                  |
 * | turn     | a TurnState | false            | a run request (turn-start.ts), resume or restore    |
 * | ended    | either      | true             | the turn's end, a refusal, abandon, close, grace    |
 *
 * `turn` is the dialect's per-turn protocol state, one plain value replaced on every step (it
 * keeps its last value after the end). `conversationID` is set with the turn, or by `restore`
 * before it. Nothing is sent once the stream has ended. The open tool call and the timers belong
 * to their parts (tool-calls.ts, reconnect-grace.ts).
 */
import type { ConnectError } from "@connectrpc/connect";
import type { AgentServerMessage, TurnState } from "../cursor/index.ts";
import type { OutboundStream } from "../outbound-stream.ts";
import type { CheckpointWriter } from "./checkpoint-writer.ts";
import type { AgentStreamDeps } from "./types.ts";

export interface StreamState {
  readonly requestID: string;
  readonly deps: AgentStreamDeps;
  readonly outbound: OutboundStream<AgentServerMessage>;
  turn: TurnState | null;
  conversationID: string | null;
  /** When the turn started (for the "turn ended" log line). */
  startedAt: number | null;
  /** What the stream sends goes through it: checkpoints wait for their blobs (checkpoint-writer.ts). */
  readonly checkpoints: CheckpointWriter;
  /**
   * Ends the stream (idempotent): the outbound backlog ends with `error`, timers stop. By
   * default once no checkpoint waits for the client's blob confirmations (bounded by their
   * timeout); `"now"` when nobody will confirm them (the client went away): a waiting checkpoint
   * then goes out inline first.
   */
  readonly end: (error?: ConnectError, when?: "now") => void;
}

/** Queues messages for the client, unless the stream has ended. */
export function send(state: StreamState, messages: readonly AgentServerMessage[]): void {
  if (state.outbound.ended) return;
  state.checkpoints.send(messages);
}
