/**
 * One Cursor agent stream: one request id, one turn. It ties the three halves together:
 *
 * - client → server: appends (BidiAppend, or the messages of an HTTP/2 `Run`) are applied in
 *   `append_seqno` order (append-sequencer.ts) and translated by the dialect into runner calls or
 *   tool-call progress (agent-stream/client-messages.ts);
 * - runner → client: the stream is the runner's `TurnOutput` for the turn
 *   (agent-stream/turn-output.ts); everything it sends goes through one ordered outbound backlog
 *   (outbound-stream.ts), which RunSSE subscribers read;
 * - the dialect's per-turn protocol state (`TurnState`) lives in the stream's shared state
 *   (agent-stream/stream-state.ts, which also tabulates the stream's phases), as one plain value
 *   replaced on every step.
 *
 * The parts, one concept each, are in agent-stream/: turn-start.ts (run and resume), tool-calls.ts
 * (the open tool call, the server's web work, the late-result timer), reconnect-grace.ts (a RunSSE
 * that drops does not cancel the turn at once: docs/design.md §10). This file assembles them and
 * holds the stream's own lifecycle (end, settle, restore, abandon, close).
 */

import { randomInt } from "node:crypto";
import type { ConnectError } from "@connectrpc/connect";
import { withMethods } from "../llm/index.ts";
import type { TurnOutput } from "../runner/types.ts";
import {
  type CheckpointWriter,
  createCheckpointWriter,
  DEFAULT_BLOB_WRITE_TIMEOUT_MS,
} from "./agent-stream/checkpoint-writer.ts";
import { type ApplyClientMessage, createClientMessages } from "./agent-stream/client-messages.ts";
import { createReconnectGrace, type ReconnectGrace } from "./agent-stream/reconnect-grace.ts";
import { fromSavedRunRequest } from "./agent-stream/saved-run-request.ts";
import type { StreamState } from "./agent-stream/stream-state.ts";
import { createToolCalls, type ToolCalls } from "./agent-stream/tool-calls.ts";
import { createTurnOutput } from "./agent-stream/turn-output.ts";
import { createTurnStart, type TurnStart } from "./agent-stream/turn-start.ts";
import type { AgentStream, AgentStreamDeps } from "./agent-stream/types.ts";
import {
  type AppendSequencer,
  createAppendSequencer,
  SequenceGapError,
} from "./append-sequencer.ts";
import {
  type AgentServerMessage,
  joinDeltas,
  toHeartbeatMessage,
  toProtocolError,
} from "./cursor/index.ts";
import { createOutboundStream, type OutboundStream } from "./outbound-stream.ts";

export type { AgentStream, AgentStreamDeps, AgentStreamOptions } from "./agent-stream/types.ts";

/**
 * One stream: a plain record of its parts, whose prototype is `streamMethods`, shared by every
 * stream (issue #19: the stream's members were ≈ 16 closures per open stream). What its parts
 * call back (the stream's end, its output's `release`, the reconnect grace's cancel) are the few
 * closures left.
 */
interface Stream {
  readonly requestID: string;
  readonly outbound: OutboundStream<AgentServerMessage>;
  readonly state: StreamState;
  readonly sequencer: AppendSequencer;
  readonly checkpoints: CheckpointWriter;
  readonly tools: ToolCalls;
  readonly output: TurnOutput;
  readonly grace: ReconnectGrace;
  readonly turns: TurnStart;
  readonly applyClientMessage: ApplyClientMessage;
  /** The outbound `onDetach` of its subscribers. */
  readonly detached: () => void;
}

export function createAgentStream(requestID: string, deps: AgentStreamDeps): AgentStream {
  const { options } = deps;
  const outbound = createOutboundStream<AgentServerMessage>({
    heartbeatMs: options.heartbeatMs,
    heartbeat: toHeartbeatMessage,
    join: joinDeltas,
  });
  const sequencer = createAppendSequencer({
    gapTimeoutMs: options.appendGapTimeoutMs,
    maxAhead: options.maxAppendsAhead,
  });
  const checkpoints = createCheckpointWriter({
    outbound,
    blobs: options.blobCheckpoints ?? true,
    timeoutMs: options.blobWriteTimeoutMs ?? DEFAULT_BLOB_WRITE_TIMEOUT_MS,
    ...(options.blobReadTimeoutMs === undefined
      ? {}
      : { readTimeoutMs: options.blobReadTimeoutMs }),
    log: deps.log,
    describe: () => ({ request: requestID, conversation: state.conversationID }),
    ...(deps.turnBlobs === undefined ? {} : { onTurnBlob: deps.turnBlobs.remember }),
  });
  const state: StreamState = {
    requestID,
    deps,
    outbound,
    checkpoints,
    turn: null,
    conversationID: null,
    startedAt: null,
    end: (error, when) => endStream(stream, error, when),
  };
  const tools = createToolCalls(state);
  const output: TurnOutput = Object.assign(createTurnOutput(state, tools), {
    release: (reason: string) => release(stream, reason),
  });
  const grace = createReconnectGrace(state, (reason) => cancelTurn(stream, reason));
  const turns = createTurnStart(state, output, grace);
  const record: Stream = {
    requestID,
    outbound,
    state,
    sequencer,
    checkpoints,
    tools,
    output,
    grace,
    turns,
    applyClientMessage: createClientMessages(state, { turns, tools, output }),
    detached: () => detached(stream),
  };
  const stream = withMethods(record, streamMethods);
  return stream;
}

/** The public members, shared by every stream (`this` is the stream's record). */
const streamMethods: Omit<AgentStream, "requestID" | "outbound"> & ThisType<Stream & AgentStream> =
  {
    get conversationID() {
      return this.state.conversationID;
    },
    append(seqno, message) {
      const { sequencer, applyClientMessage } = this;
      return sequencer.run(seqno, () => applyClientMessage(seqno, message), toAppendError);
    },
    subscribe(signal, onHeld) {
      this.grace.clear();
      this.checkpoints.resume();
      // The outbound generator itself, with this stream's bookkeeping when its reader goes.
      return this.outbound.subscribe(signal, this.detached, onHeld);
    },
    read(signal) {
      this.grace.clear();
      this.checkpoints.resume();
      return this.outbound.read(signal, this.detached);
    },
    async restore(conversation, turnID, runRequestBytes) {
      const request = fromSavedRunRequest(runRequestBytes);
      if (request === null) throw toProtocolError({ type: "saved_request_unreadable" });
      this.state.conversationID = conversation;
      // The client's earlier appends, exec and kv ids belonged to the previous process: take its
      // next seqno as it comes, and number new execs and blob writes far from the ones it may
      // still remember.
      this.sequencer.resync();
      const firstID = randomInt(2 ** 30, 2 ** 31);
      this.checkpoints.renumber(firstID);
      // Nobody reads it yet (picked up for a RunSSE that subscribes next, or a BidiAppend whose
      // RunSSE may come later): the writer's timeouts, a read back's among them, run from then.
      if (!this.outbound.subscribed) this.checkpoints.pause();
      await this.turns.resume(request, { firstID, turnID });
      if (!this.outbound.subscribed) this.grace.start();
    },
    async abandon(error) {
      this.tools.rejectOpen(error.message);
      // Held (shutdown): the turn is left as every turn is at shutdown, not canceled.
      if (this.state.conversationID !== null && !this.outbound.ended && !this.outbound.held) {
        await cancelTurn(this, "the client closed the stream").catch(() => {});
      }
      endStream(this, error, "now");
    },
    hold() {
      this.checkpoints.hold();
      this.outbound.hold();
    },
    close(this: Stream & AgentStream, reason: string) {
      this.tools.rejectOpen(reason);
      endStream(this, toProtocolError({ type: "stream_closed", reason }), "now");
    },
  };

/** An append refused by the sequencer, as the client gets it. */
function toAppendError(error: unknown): ConnectError {
  const detail = error instanceof SequenceGapError ? error.message : String(error);
  return toProtocolError({ type: "append_out_of_order", detail });
}

function settle(stream: Stream & AgentStream): void {
  if (stream.outbound.ended && !stream.outbound.subscribed) stream.state.deps.onSettled?.(stream);
}

/** A subscriber's reading ended: without a new one, the turn waits for a reconnect. */
function detached(stream: Stream & AgentStream): void {
  if (!stream.outbound.ended && !stream.outbound.subscribed) {
    stream.grace.start();
    stream.checkpoints.pause();
  }
  settle(stream);
}

/**
 * The turn's end (turn_ended, the end of stream) comes after its last checkpoint, which may
 * wait for the client to confirm its blobs (checkpoint-writer.ts); `"now"` does not wait.
 */
function endStream(stream: Stream & AgentStream, error?: ConnectError, when?: "now"): void {
  stream.tools.stopWork();
  if (stream.outbound.ended) return;
  if (when === "now") {
    // A deferred end (the turn's) runs first from here, and is the one the client gets.
    stream.checkpoints.flush();
    finish(stream, error);
  } else {
    stream.checkpoints.whenSent(() => finish(stream, error));
  }
}

function finish(stream: Stream & AgentStream, error?: ConnectError): void {
  if (stream.outbound.ended) return;
  stream.outbound.end(error);
  stream.sequencer.close("the stream has ended");
  stream.grace.clear();
  stream.tools.clearLateTimer();
  settle(stream);
}

/**
 * Another stream resumed this stream's turn (`TurnOutput.release`): this stream ends without
 * ending the turn. Its grace is cleared (it never cancels the turn), the runner's waits for its
 * tool calls fail (the runner asks them again on the new stream), its web work stops and its
 * subagents are left for the new stream (subagents.ts, "only the stream went away"). A late
 * reconnect to it gets its end, `stream_taken_over`, not a turn end, while the registry keeps
 * it; once it is dropped, `stream_released` (the new stream's binding released its saved
 * request): either way not a turn end, since the turn goes on elsewhere.
 */
function release(stream: Stream & AgentStream, reason: string): void {
  const { state } = stream;
  state.deps.log.info(
    { request: stream.requestID, conversation: state.conversationID, reason },
    "another stream took the turn over; this stream ends",
  );
  state.turn = null;
  stream.tools.rejectOpen(reason);
  endStream(stream, toProtocolError({ type: "stream_taken_over" }), "now");
}

/** Cancels this stream's turn (the runner ignores it if the stream no longer carries it). */
function cancelTurn(stream: Stream & AgentStream, reason: string): Promise<unknown> {
  const { state } = stream;
  if (state.conversationID === null) return Promise.resolve();
  return state.deps.runner.submit(
    state.conversationID,
    { type: "cancel", inputID: `${stream.requestID}:gone`, at: state.deps.now(), reason },
    stream.output,
  );
}
