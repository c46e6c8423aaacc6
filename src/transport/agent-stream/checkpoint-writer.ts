/**
 * Everything the stream sends goes out through here, so that its checkpoints are blob-backed
 * (docs/protocol.md §2.9, §2.10, §3 step 6): before a checkpoint, each blob of it that the
 * client has not confirmed on this stream is written to the client's store
 * (`kv_server_message.set_blob_args`, each blob once per stream); the checkpoint, with the blob
 * ids, goes out once the client confirmed every one (`kv_client_message.set_blob_result`).
 *
 * - Only checkpoints wait: text, tool calls, execs and queries go out at once. Checkpoints that
 *   wait are kept in order; on each confirmation the NEWEST one whose blobs are all confirmed goes
 *   out and the older ones are dropped (a checkpoint is the whole state), so a turn whose steps
 *   grow faster than one ack round trip still gets its checkpoints out, in order. `turn_ended`,
 *   and whatever follows it, waits until no checkpoint waits; the stream's end (`whenSent`)
 *   also waits for the answers to every write (bounded by the timeout).
 * - A client that answers nothing for `timeoutMs` (counted while a reader is attached, restarted
 *   by every confirmation) while a checkpoint waits, or answers with an error a write that a
 *   waiting checkpoint requires (other errors are ignored, as by SAK): the newest
 *   waiting checkpoint goes out in the inline form (checkpoint.ts), and so does every later one of
 *   the stream, logged once at warn.
 * - `flush` (the stream ends now: takeover, the client gone or reset): a waiting checkpoint goes
 *   out inline at once, then what waited behind it. `hold` (shutdown) does the same for a turn
 *   that is over; a running turn's waiting checkpoint is dropped instead (the restart writes it
 *   again as blobs; an inline turn would stay in the client's checkpoints for good).
 *
 * Blob bytes are held only by the `set_blob_args` messages in the outbound backlog (released once
 * written) and the waiting checkpoints (bounded by the timeout: each confirmation drops all but the
 * ones newer than what went out); this keeps the confirmed blob ids (hex) per stream, and how many
 * steps the turn blobs of its last blob-form checkpoints that went out list (`sentTurnSteps`).
 */
import type { AgentServerMessage } from "../cursor/index.ts";
import {
  type KvClientMessage,
  toBlobCheckpoint,
  toCheckpointSource,
  toCheckpointUpdate,
  toSetBlobMessage,
} from "../cursor/index.ts";
import type { Log } from "../log.ts";
import type { OutboundStream } from "../outbound-stream.ts";

/** How long a checkpoint waits for the client's confirmations by default (SAK's 10 s). */
export const DEFAULT_BLOB_WRITE_TIMEOUT_MS = 10_000;

/**
 * How many of the last blob-form checkpoints that went out are kept (`sentTurnSteps`): the
 * client's last checkpoint is one of the last few (those still in flight when its RunSSE
 * dropped); once nobody reads the stream, a checkpoint that writes blobs waits unconfirmed.
 */
export const SENT_TURN_BLOBS = 16;

export interface CheckpointWriter {
  /** Sends `messages` in order; checkpoints as described above. */
  send(messages: readonly AgentServerMessage[]): void;
  /** A `kv_client_message` of the client (`id` and its result). */
  result(id: number, result: KvClientMessage["message"]): void;
  /**
   * Runs `then` once no checkpoint waits and every blob write is answered: at once, or when that
   * comes; unanswered writes that no checkpoint needs are waited for up to the timeout.
   */
  whenSent(then: () => void): void;
  /** No more waiting: the newest waiting checkpoint goes out inline now, then what waited behind. */
  flush(): void;
  /**
   * The stream is held (shutdown, docs/protocol.md §2.10): a turn that is over (something waits
   * behind its checkpoint, or the stream's end does) is flushed, so its end goes out; a running
   * turn's waiting checkpoint is dropped instead, since the client keeps one inline turn for good
   * (its fork then fails), and the turn goes on after the restart, whose checkpoints are written
   * as blobs again.
   */
  hold(): void;
  /**
   * Numbers later blob writes from `firstID`: a stream picked up after a restart, whose client
   * may still remember the kv ids the earlier process sent (as its exec ids, agent-stream.ts).
   */
  renumber(firstID: number): void;
  /**
   * Nobody reads the stream (its RunSSE dropped): the client cannot answer, so the timeout does
   * not run; `resume` (a reader again) gives a waiting checkpoint the whole timeout anew. The
   * reconnect grace bounds the wait (an end "now" then sends it inline).
   */
  pause(): void;
  resume(): void;
  /**
   * How many steps the turn blobs of the last `SENT_TURN_BLOBS` blob-form checkpoints that went
   * out list (every blob of them confirmed; distinct counts, newest last). A turn blob is a
   * function of the turn state and this count, so a takeover reads the client's turn blob from
   * it (carried-turn.ts `toSentClientTurn`) with no blob id kept (issue #19: per-stream heap).
   */
  sentTurnSteps(): readonly number[];
}

export interface CheckpointWriterOptions {
  readonly outbound: OutboundStream<AgentServerMessage>;
  /** False: every checkpoint inline, no KV traffic. */
  readonly blobs: boolean;
  readonly timeoutMs: number;
  readonly log: Log;
  /** Fields for the log line (request, conversation). */
  readonly describe: () => Record<string, unknown>;
  /**
   * Told the turn blob (hex id) of each blob-form checkpoint released to the client, with its
   * turn's conversation (the client's) and request id, before the checkpoint goes out
   * (transport/turn-blob-origins.ts records it). A checkpoint replaced while it waited is not
   * told: its turn blob is one the client never holds, and recording it would push the rows of
   * the ones it does hold out of the store's newest few (store/turn-blobs.ts).
   */
  readonly onTurnBlob?: (key: string, conversationID: string, requestID: string) => void;
}

interface Waiting {
  readonly blobForm: AgentServerMessage;
  /** How many steps the turn blob `blobForm` names lists. */
  readonly turnSteps: number;
  readonly inline: AgentServerMessage;
  /** Keys of the blobs not confirmed when it was queued. */
  readonly required: readonly string[];
  /** Tells `onTurnBlob` the checkpoint's turn blob, when it is released. */
  readonly told: () => void;
}

export function createCheckpointWriter(options: CheckpointWriterOptions): CheckpointWriter {
  const { outbound, timeoutMs, log } = options;
  let blobs = options.blobs;
  /**
   * The stream's blob writes, made at its first (issue #19: most of the writer's memory, which a
   * stream that has sent no blob-backed checkpoint does not need).
   */
  let writes: Writes | undefined;
  const toWrites = (): Writes =>
    (writes ??= { confirmed: new Set(), written: new Map(), writing: new Set(), sent: [] });
  const unanswered = (): number => writes?.writing.size ?? 0;
  let nextID = 1;
  /** Checkpoints that wait for confirmations, oldest first. */
  let waiting: Waiting[] = [];
  /** Messages that wait behind `waiting` (turn_ended and what follows it). */
  let behind: AgentServerMessage[] = [];
  const then: (() => void)[] = [];
  /** The timeout's handle while it runs (a plain timer: one object less per stream). */
  let timer: NodeJS.Timeout | undefined;
  const clearTimer = (): void => {
    clearTimeout(timer);
    timer = undefined;
  };
  let paused = false;
  /**
   * The timeout runs while a checkpoint waits, or while an end waits for writes still unanswered;
   * it expires with no answer for `timeoutMs`.
   */
  const arm = (): void => {
    clearTimeout(timer);
    timer = setTimeout(expire, timeoutMs);
    timer.unref();
  };
  const timed = (): boolean => waiting.length > 0 || (then.length > 0 && unanswered() > 0);
  /** After an answer or a release: the timeout anew while something waits, else off. */
  const rearm = (): void => {
    if (!timed()) clearTimer();
    else if (!paused) arm();
  };
  const expire = (): void => {
    timer = undefined;
    if (waiting.length > 0) fallBack("timeout");
    else runThen(true);
  };
  /**
   * Runs what waits for the end once no checkpoint waits and no write is unanswered (the client
   * answers into a closed stream otherwise: "WritableIterable already closed"); `force`: the
   * timeout expired with writes no checkpoint needs still unanswered.
   */
  const runThen = (force = false): void => {
    if (waiting.length > 0 || then.length === 0) return;
    if (unanswered() > 0 && !force) {
      if (timer === undefined && !paused) arm();
      return;
    }
    clearTimer();
    for (const run of then.splice(0)) run();
  };

  const send = (messages: readonly AgentServerMessage[]): void => {
    for (const message of messages) {
      if (outbound.ended) return;
      if (behind.length > 0 || (waiting.length > 0 && isTurnEnded(message))) {
        behind.push(message);
      } else if (message.message.case === "conversationCheckpointUpdate") {
        checkpoint(message);
      } else {
        outbound.push(message);
      }
    }
  };

  const checkpoint = (message: AgentServerMessage): void => {
    const state = blobs ? toCheckpointSource(message) : undefined;
    if (state === undefined) {
      // Inline (after a fallback, or a checkpoint not made from a turn state): out at once,
      // replacing those that wait.
      release(message, waiting.length);
      return;
    }
    const blobCheckpoint = toBlobCheckpoint(state);
    const required: string[] = [];
    const { confirmed, written, writing } = toWrites();
    for (const blob of blobCheckpoint.blobs) {
      if (confirmed.has(blob.key)) continue;
      required.push(blob.key);
      if (writing.has(blob.key)) continue;
      const id = nextID++;
      written.set(id, blob.key);
      writing.add(blob.key);
      outbound.push(toSetBlobMessage(id, blob));
    }
    const blobForm = toCheckpointUpdate(blobCheckpoint.checkpoint);
    const turnKey = blobCheckpoint.turn?.key;
    const told = () => {
      if (turnKey !== undefined)
        options.onTurnBlob?.(turnKey, state.conversationID, state.requestID);
    };
    if (required.length === 0) {
      sent(blobCheckpoint.turnSteps);
      told();
      release(blobForm, waiting.length);
      return;
    }
    if (waiting.length === 0 && !paused) arm();
    waiting.push({
      blobForm,
      turnSteps: blobCheckpoint.turnSteps,
      inline: message,
      required,
      told,
    });
  };

  /** A blob-form checkpoint whose turn blob lists `steps` went out: the last ones are kept. */
  const sent = (steps: number): void => {
    const counts = toWrites().sent;
    if (counts.at(-1) === steps) return;
    counts.push(steps);
    if (counts.length > SENT_TURN_BLOBS) counts.shift();
  };

  /**
   * `message` goes out in place of the first `count` waiting checkpoints (dropped: it is newer);
   * once none waits, what waited behind them.
   */
  const release = (message: AgentServerMessage, count: number): void => {
    waiting = waiting.slice(count);
    outbound.push(message);
    if (waiting.length > 0) return;
    clearTimer();
    const held = behind;
    behind = [];
    send(held);
    runThen();
  };

  /** The index of the newest waiting checkpoint whose blobs are all confirmed, or -1. */
  const newestReady = (): number => {
    for (let index = waiting.length - 1; index >= 0; index--) {
      if (waiting[index]?.required.every((key) => writes?.confirmed.has(key) === true) === true) {
        return index;
      }
    }
    return -1;
  };

  const fallBack = (reason: "timeout" | "error", detail?: string): void => {
    if (!blobs) return;
    blobs = false;
    log.warn(
      {
        ...options.describe(),
        reason,
        unconfirmed: unanswered(),
        ...(detail === undefined ? {} : { detail: detail.slice(0, 200) }),
        ...(reason === "timeout" ? { timeoutMs } : {}),
      },
      reason === "timeout"
        ? "the client did not confirm checkpoint blob writes in time; checkpoints go inline for the rest of the stream"
        : "the client refused a checkpoint blob write; checkpoints go inline for the rest of the stream",
    );
    writes?.written.clear();
    writes?.writing.clear();
    const newest = waiting.at(-1);
    if (newest !== undefined) release(newest.inline, waiting.length);
  };

  const flush = (): void => {
    blobs = false;
    const newest = waiting.at(-1);
    waiting = [];
    clearTimer();
    if (newest !== undefined) outbound.push(newest.inline);
    const held = behind;
    behind = [];
    for (const message of held) outbound.push(message);
    for (const run of then.splice(0)) run();
  };

  return {
    send,
    renumber(firstID) {
      nextID = firstID;
    },
    pause() {
      paused = true;
      clearTimer();
    },
    resume() {
      paused = false;
      if (timed() && timer === undefined) arm();
    },
    result(id, result) {
      const key = writes?.written.get(id);
      if (writes === undefined || key === undefined) return;
      writes.written.delete(id);
      writes.writing.delete(key);
      if (result.case === "setBlobResult" && result.value.error === undefined) {
        writes.confirmed.add(key);
        // An answer: the client is alive, the timeout starts anew.
        rearm();
        const ready = newestReady();
        const released = waiting[ready];
        if (released !== undefined) {
          sent(released.turnSteps);
          released.told();
          release(released.blobForm, ready + 1);
        } else runThen();
        return;
      }
      // A refused write that no waiting checkpoint requires (one that replaced it went out)
      // changes nothing, as with SAK; a later checkpoint that needs the blob writes it again.
      if (!waiting.some((checkpoint) => checkpoint.required.includes(key))) {
        rearm();
        runThen();
        return;
      }
      const error =
        result.case === "setBlobResult" ? result.value.error?.message : `a ${result.case} answer`;
      fallBack("error", error ?? "");
    },
    whenSent(next) {
      then.push(next);
      runThen();
    },
    sentTurnSteps() {
      return writes?.sent ?? [];
    },
    hold() {
      if (behind.length > 0 || then.length > 0) {
        flush();
        return;
      }
      waiting = [];
      clearTimer();
    },
    flush,
  };
}

interface Writes {
  /** Blobs the client confirmed on this stream. */
  readonly confirmed: Set<string>;
  /** Writes sent and not answered: kv id → blob key; and the keys. */
  readonly written: Map<number, string>;
  readonly writing: Set<string>;
  /** How many steps the turn blobs of the last blob-form checkpoints that went out list. */
  readonly sent: number[];
}

function isTurnEnded(message: AgentServerMessage): boolean {
  const branch = message.message;
  return branch.case === "interactionUpdate" && branch.value.message.case === "turnEnded";
}
