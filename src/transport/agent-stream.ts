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
import { withGetters } from "../llm/index.ts";
import type { TurnOutput } from "../runner/types.ts";
import {
  createCheckpointWriter,
  DEFAULT_BLOB_WRITE_TIMEOUT_MS,
} from "./agent-stream/checkpoint-writer.ts";
import { createClientMessages } from "./agent-stream/client-messages.ts";
import { createReconnectGrace } from "./agent-stream/reconnect-grace.ts";
import { fromSavedRunRequest } from "./agent-stream/saved-run-request.ts";
import type { StreamState } from "./agent-stream/stream-state.ts";
import { createToolCalls } from "./agent-stream/tool-calls.ts";
import { createTurnOutput } from "./agent-stream/turn-output.ts";
import { createTurnStart } from "./agent-stream/turn-start.ts";
import type { AgentStream, AgentStreamDeps } from "./agent-stream/types.ts";
import { createAppendSequencer, SequenceGapError } from "./append-sequencer.ts";
import {
  type AgentServerMessage,
  joinDeltas,
  toHeartbeatMessage,
  toProtocolError,
} from "./cursor/index.ts";
import { createOutboundStream } from "./outbound-stream.ts";

export type { AgentStream, AgentStreamDeps, AgentStreamOptions } from "./agent-stream/types.ts";

export function createAgentStream(requestID: string, deps: AgentStreamDeps): AgentStream {
  const { runner, now, options } = deps;
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
    end: endStream,
  };
  const tools = createToolCalls(state);
  const output: TurnOutput = Object.assign(createTurnOutput(state, tools), {
    // Nobody reads the stream (its RunSSE dropped and it waits out its grace, or none came yet):
    // a resume on another stream takes the turn over (loop/turn-ownership.ts).
    isDetached: () => !outbound.subscribed && !outbound.held && !outbound.ended,
    release,
  });
  const grace = createReconnectGrace(state, cancelTurn);
  const turns = createTurnStart(state, output, grace.start);
  const applyClientMessage = createClientMessages(state, { turns, tools, output });

  const settle = (): void => {
    if (outbound.ended && !outbound.subscribed) deps.onSettled?.(stream);
  };
  /** A subscriber's reading ended: without a new one, the turn waits for a reconnect. */
  const detached = (): void => {
    if (!outbound.ended && !outbound.subscribed) {
      grace.start();
      checkpoints.pause();
    }
    settle();
  };

  /**
   * The turn's end (turn_ended, the end of stream) comes after its last checkpoint, which may
   * wait for the client to confirm its blobs (checkpoint-writer.ts); `"now"` does not wait.
   */
  function endStream(error?: ConnectError, when?: "now"): void {
    tools.stopWork();
    if (outbound.ended) return;
    if (when === "now") {
      // A deferred end (the turn's) runs first from here, and is the one the client gets.
      checkpoints.flush();
      finish(error);
    } else {
      checkpoints.whenSent(() => finish(error));
    }
  }

  function finish(error?: ConnectError): void {
    if (outbound.ended) return;
    outbound.end(error);
    sequencer.close("the stream has ended");
    grace.clear();
    tools.clearLateTimer();
    settle();
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
  function release(reason: string): void {
    deps.log.info(
      { request: requestID, conversation: state.conversationID, reason },
      "another stream took the turn over; this stream ends",
    );
    state.turn = null;
    tools.rejectOpen(reason);
    endStream(toProtocolError({ type: "stream_taken_over" }), "now");
  }

  /** Cancels this stream's turn (the runner ignores it if the stream no longer carries it). */
  function cancelTurn(reason: string): Promise<unknown> {
    if (state.conversationID === null) return Promise.resolve();
    return runner.submit(
      state.conversationID,
      { type: "cancel", inputID: `${requestID}:gone`, at: now(), reason },
      output,
    );
  }

  const members: Omit<AgentStream, "conversationID"> = {
    requestID,
    outbound,
    append(seqno, message) {
      return sequencer.run(
        seqno,
        () => applyClientMessage(seqno, message),
        (error) => {
          const detail = error instanceof SequenceGapError ? error.message : String(error);
          return toProtocolError({ type: "append_out_of_order", detail });
        },
      );
    },
    subscribe(signal, onHeld) {
      grace.clear();
      checkpoints.resume();
      // The outbound generator itself, with this stream's bookkeeping when its reader goes.
      return outbound.subscribe(signal, detached, onHeld);
    },
    read(signal) {
      grace.clear();
      checkpoints.resume();
      return outbound.read(signal, detached);
    },
    async restore(conversation, turnID, runRequestBytes) {
      const request = fromSavedRunRequest(runRequestBytes);
      if (request === null) throw toProtocolError({ type: "saved_request_unreadable" });
      state.conversationID = conversation;
      // The client's earlier appends, exec and kv ids belonged to the previous process: take its
      // next seqno as it comes, and number new execs and blob writes far from the ones it may
      // still remember.
      sequencer.resync();
      const firstID = randomInt(2 ** 30, 2 ** 31);
      checkpoints.renumber(firstID);
      await turns.resume(request, { firstID, turnID });
      if (!outbound.subscribed) grace.start();
    },
    async abandon(error) {
      tools.rejectOpen(error.message);
      // Held (shutdown): the turn is left as every turn is at shutdown, not canceled.
      if (state.conversationID !== null && !outbound.ended && !outbound.held) {
        await cancelTurn("the client closed the stream").catch(() => {});
      }
      endStream(error, "now");
    },
    hold() {
      checkpoints.hold();
      outbound.hold();
    },
    close(reason) {
      tools.rejectOpen(reason);
      endStream(toProtocolError({ type: "stream_closed", reason }), "now");
    },
  };
  // Not a literal `get`: that would make each stream a dictionary-mode object (issue #19).
  const stream: AgentStream = withGetters(members, { conversationID: () => state.conversationID });
  return stream;
}
