/**
 * Everything the stream sends goes out through here, so that its checkpoints are blob-backed
 * (docs/protocol.md §2.9, §2.10, §3 step 6): before a checkpoint, each blob of it that the
 * client has not confirmed on this stream is written to the client's store
 * (`kv_server_message.set_blob_args`, each blob once per stream); the checkpoint, with the blob
 * ids, goes out once the client confirmed every one (`kv_client_message.set_blob_result`).
 * It also reads a blob back from the client's store (`get_blob_args` / `get_blob_result`, `read`:
 * a resumed turn's last checkpoint), and holds checkpoints while a tool's result is being saved
 * (`holdCheckpoints`).
 *
 * - Only checkpoints wait: text, tool calls, execs and queries go out at once. Checkpoints that
 *   wait are kept in order; on each confirmation the NEWEST one whose blobs are all confirmed goes
 *   out and the older ones are dropped (a checkpoint is the whole state), so a turn whose steps
 *   grow faster than one ack round trip still gets its checkpoints out, in order. `turn_ended`,
 *   and whatever follows it, waits until no checkpoint waits and no read or hold is on; the
 *   stream's end (`whenSent`) also waits for the answers to every write (bounded by the timeout).
 * - A read not answered within its own, shorter timeout (counted while a reader is attached)
 *   found nothing; it changes nothing about the writes.
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
import { withMethods } from "../../llm/index.ts";
import type { AgentServerMessage } from "../cursor/index.ts";
import {
  type KvClientMessage,
  toBlob,
  toBlobCheckpoint,
  toCheckpointSource,
  toCheckpointUpdate,
  toGetBlobMessage,
  toSetBlobMessage,
} from "../cursor/index.ts";
import type { Log } from "../log.ts";
import type { OutboundStream } from "../outbound-stream.ts";

/** How long a checkpoint waits for the client's confirmations by default (SAK's 10 s). */
export const DEFAULT_BLOB_WRITE_TIMEOUT_MS = 10_000;

/**
 * How long a blob read (`read`) waits for the client's answer by default, counted while a reader
 * is attached: it sits in front of the stream's first checkpoint, and its end, and whether the IDE
 * answers `get_blob_args` at all is unverified (docs/protocol.md §2.9), so it is short; an answer
 * is one round trip on a live connection. Never longer than the write timeout.
 */
export const DEFAULT_BLOB_READ_TIMEOUT_MS = 3_000;

/**
 * How many of the last blob-form checkpoints that went out are kept (`sentTurnSteps`): the
 * client's last checkpoint is one of the last few (those still in flight when its RunSSE
 * dropped); once nobody reads the stream, a checkpoint that writes blobs waits unconfirmed.
 */
export const SENT_TURN_BLOBS = 16;

/**
 * Its members are methods shared by every instance: call them on the object, never pass them on
 * (bind or wrap in an arrow).
 */
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
  /**
   * Reads a blob back from the client's store (`get_blob_args`): the first of `keys` (hex ids,
   * or a promise of them) the client has. `then` gets it, its bytes checked against its id, or
   * null when the client has none of them, does not answer within the read timeout (all asks
   * together, counted while a reader is attached; the writes stay blob-form), the stream ends
   * now (`flush`), or the stream sends no blob writes. Until then no
   * checkpoint goes out: one sent meanwhile is dropped, and `then` is told (`checkpointed`) to
   * send the stream's checkpoint anew; `turn_ended` and the end wait too.
   */
  read(keys: readonly string[] | Promise<readonly string[]>, then: ReadThen): void;
  /**
   * Holds checkpoints while `key` (a tool call's operation id) is held: one sent meanwhile waits
   * (the newest only), and goes out once no hold or read is left (`unholdCheckpoints`), the
   * timeout passed, or the stream ends now; `turn_ended` and the end wait too. A tool step goes
   * into the turn when its result comes, before the runner saved that result: a checkpoint
   * listing it must not reach the client before a restart would reuse the result (else the call
   * is asked again and the turn lists its step twice).
   */
  holdCheckpoints(key: string): void;
  unholdCheckpoints(key: string): void;
}

/** What `read` gives: the blob found (null: none), and whether a checkpoint waited for it. */
export type ReadThen = (
  found: { readonly key: string; readonly data: Uint8Array } | null,
  checkpointed: boolean,
) => void;

export interface CheckpointWriterOptions {
  readonly outbound: OutboundStream<AgentServerMessage>;
  /** False: every checkpoint inline, no KV traffic. */
  readonly blobs: boolean;
  readonly timeoutMs: number;
  /** How long a read waits for its answer (default `DEFAULT_BLOB_READ_TIMEOUT_MS`; never longer than `timeoutMs`). */
  readonly readTimeoutMs?: number;
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
  /** What `onTurnBlob` is told when it is released (data, not a closure per checkpoint). */
  readonly turn: TurnBlobTold | undefined;
}

/** A checkpoint's turn blob and its turn's ids, for `onTurnBlob`. */
interface TurnBlobTold {
  readonly key: string;
  readonly conversationID: string;
  readonly requestID: string;
}

/**
 * One stream's writer: a plain record of its state, whose prototype is `writerMethods`, shared by
 * every writer (issue #19: a factory of closures made ≈ 20 closures and their context per open
 * stream, ≈ 1.2 KiB; a record costs what its fields do). The members below are the writer's
 * own; only the methods of `CheckpointWriter` (on the prototype) are public.
 */
interface Writer {
  readonly outbound: OutboundStream<AgentServerMessage>;
  readonly timeoutMs: number;
  readonly readTimeoutMs: number;
  readonly log: Log;
  readonly describe: () => Record<string, unknown>;
  readonly onTurnBlob: CheckpointWriterOptions["onTurnBlob"];
  blobs: boolean;
  /**
   * The stream's blob writes, made at its first (issue #19: most of the writer's memory, which a
   * stream that has sent no blob-backed checkpoint does not need).
   */
  writes: Writes | undefined;
  nextID: number;
  /** Checkpoints that wait for confirmations, oldest first. */
  waiting: Waiting[];
  /** Messages that wait behind `waiting` (turn_ended and what follows it). */
  behind: AgentServerMessage[];
  /** What waits for the end (`whenSent`); made at the first. */
  atEnd: (() => void)[] | undefined;
  /** The timeout's handle while it runs (a plain timer: one object less per stream). */
  timer: NodeJS.Timeout | undefined;
  paused: boolean;
}

export function createCheckpointWriter(options: CheckpointWriterOptions): CheckpointWriter {
  const writer: Writer = {
    outbound: options.outbound,
    timeoutMs: options.timeoutMs,
    readTimeoutMs: Math.min(
      options.readTimeoutMs ?? DEFAULT_BLOB_READ_TIMEOUT_MS,
      options.timeoutMs,
    ),
    log: options.log,
    describe: options.describe,
    onTurnBlob: options.onTurnBlob,
    blobs: options.blobs,
    writes: undefined,
    nextID: 1,
    waiting: [],
    behind: [],
    atEnd: undefined,
    timer: undefined,
    paused: false,
  };
  return withMethods(writer, writerMethods);
}

/** The public methods, shared by every writer (`this` is the writer's record). */
const writerMethods: CheckpointWriter & ThisType<Writer> = {
  send(messages) {
    send(this, messages);
  },
  renumber(firstID) {
    this.nextID = firstID;
  },
  pause() {
    this.paused = true;
    clearTimer(this);
    // A read's timeout stops too: the client cannot answer while nobody reads the stream.
    for (const read of this.writes?.reads ?? []) {
      clearTimeout(read.timer);
      read.timer = undefined;
    }
  },
  resume() {
    this.paused = false;
    if (timed(this) && this.timer === undefined) arm(this);
    for (const read of this.writes?.reads ?? []) if (read.timer === undefined) armRead(this, read);
  },
  result(id, result) {
    const writes = this.writes;
    const asked = writes?.asked?.get(id);
    if (asked !== undefined) {
      writes?.asked?.delete(id);
      answered(this, asked, result.case === "getBlobResult" ? result.value.blobData : undefined);
      return;
    }
    const key = writes?.written.get(id);
    if (writes === undefined || key === undefined) return;
    writes.written.delete(id);
    writes.writing.delete(key);
    if (result.case === "setBlobResult" && result.value.error === undefined) {
      writes.confirmed.add(key);
      // An answer: the client is alive, the timeout starts anew.
      rearm(this);
      const ready = newestReady(this);
      const released = this.waiting[ready];
      if (released !== undefined) {
        sent(this, released.turnSteps);
        told(this, released.turn);
        release(this, released.blobForm, ready + 1);
      } else runThen(this);
      return;
    }
    // A refused write that no waiting checkpoint requires (one that replaced it went out)
    // changes nothing, as with SAK; a later checkpoint that needs the blob writes it again.
    if (!this.waiting.some((checkpoint) => checkpoint.required.includes(key))) {
      rearm(this);
      runThen(this);
      return;
    }
    const error =
      result.case === "setBlobResult" ? result.value.error?.message : `a ${result.case} answer`;
    fallBack(this, "error", error ?? "");
  },
  sentTurnSteps() {
    return this.writes?.sent ?? [];
  },
  holdCheckpoints(key) {
    if (this.outbound.ended) return;
    const writes = toWrites(this);
    writes.holds ??= new Map();
    clearTimeout(writes.holds.get(key));
    const timer = setTimeout(unhold, this.timeoutMs, this, key);
    timer.unref();
    writes.holds.set(key, timer);
  },
  unholdCheckpoints(key) {
    unhold(this, key);
  },
  read(keys, then) {
    if (!this.blobs || this.outbound.ended) {
      then(null, false);
      return;
    }
    const writes = toWrites(this);
    const read: Read = { then, key: "", rest: [], timer: undefined, done: false };
    if (!this.paused) armRead(this, read);
    writes.reads ??= new Set();
    writes.reads.add(read);
    if (Array.isArray(keys)) ask(this, read, keys as readonly string[]);
    else {
      (keys as Promise<readonly string[]>).then(
        (found) => ask(this, read, found),
        () => ask(this, read, []),
      );
    }
  },
  whenSent(next) {
    this.atEnd ??= [];
    this.atEnd.push(next);
    runThen(this);
  },
  hold() {
    if (this.behind.length > 0 || (this.atEnd?.length ?? 0) > 0) {
      flush(this);
      return;
    }
    this.waiting = [];
    clearTimer(this);
    // A running turn's checkpoint held by a read or a hold is dropped too.
    if (this.writes !== undefined) this.writes.deferred = undefined;
  },
  flush() {
    flush(this);
  },
};

/**
 * Whether a read is under way (`read`) or a hold is on (`holdCheckpoints`): checkpoints,
 * `turn_ended` and the end wait.
 */
function reading(writer: Writer): boolean {
  return (writer.writes?.reads?.size ?? 0) > 0 || (writer.writes?.holds?.size ?? 0) > 0;
}

/** Hold `key` is off (released, or its timeout passed). */
function unhold(writer: Writer, key: string): void {
  const holds = writer.writes?.holds;
  const timer = holds?.get(key);
  if (holds === undefined || timer === undefined) return;
  clearTimeout(timer);
  holds.delete(key);
  if (reading(writer)) return;
  opened(writer, () => {
    const deferred = takeDeferred(writer);
    if (deferred !== undefined) checkpoint(writer, deferred);
  });
}

/** The checkpoint held while reads or holds were on, now theirs to send (or not). */
function takeDeferred(writer: Writer): AgentServerMessage | undefined {
  const writes = writer.writes;
  const deferred = writes?.deferred;
  if (writes !== undefined) writes.deferred = undefined;
  return deferred;
}

/**
 * The last read or hold is over: `run` sends the checkpoint held meanwhile (or a newer one), then
 * what waited behind, and the end, go after it (in place of the one dropped, which came before
 * them).
 */
function opened(writer: Writer, run: () => void): void {
  const held = writer.behind;
  const atEnd = writer.atEnd;
  writer.behind = [];
  writer.atEnd = undefined;
  run();
  if (atEnd !== undefined) writer.atEnd = [...atEnd, ...(writer.atEnd ?? [])];
  send(writer, held);
  runThen(writer);
}

/** Asks the client for the first of `keys` (none left: the read found nothing). */
function ask(writer: Writer, read: Read, keys: readonly string[]): void {
  const key = keys[0];
  if (read.done) return;
  if (key === undefined || writer.outbound.ended) {
    readDone(writer, read, null);
    return;
  }
  const writes = toWrites(writer);
  writes.asked ??= new Map();
  const id = writer.nextID++;
  writes.asked.set(id, read);
  read.key = key;
  read.rest = keys.slice(1);
  writer.outbound.push(toGetBlobMessage(id, key));
}

/** The client's answer to an ask of `read`: its blob if it is the one asked for, else the next. */
function answered(writer: Writer, read: Read, data: Uint8Array | undefined): void {
  if (data !== undefined && toBlob(data).key === read.key) {
    readDone(writer, read, { key: read.key, data });
  } else ask(writer, read, read.rest);
}

/** `read`'s timeout, anew (while a reader is attached: `pause` stops it, `resume` restarts it). */
function armRead(writer: Writer, read: Read): void {
  clearTimeout(read.timer);
  read.timer = setTimeout(readTimedOut, writer.readTimeoutMs, writer, read);
  read.timer.unref();
}

/**
 * No answer to `read` within the read timeout: the read found nothing, as when the client has
 * none of the blobs. Checkpoints stay in the blob form: a client may answer writes and not reads,
 * and an inline turn stays in the client's checkpoints and fails its forks for good; whether the
 * client answers writes, their own timeout decides (`expire`).
 */
function readTimedOut(writer: Writer, read: Read): void {
  read.timer = undefined;
  readDone(writer, read, null);
}

/** `read` is over (`found` null: nothing found), once; then what waited for the reads. */
function readDone(
  writer: Writer,
  read: Read,
  found: { readonly key: string; readonly data: Uint8Array } | null,
): void {
  const writes = writer.writes;
  if (read.done || writes === undefined) return;
  read.done = true;
  clearTimeout(read.timer);
  writes.reads?.delete(read);
  for (const [id, asked] of writes.asked ?? []) if (asked === read) writes.asked?.delete(id);
  // The reader sends a checkpoint anew, as the turn is once read, for one held meanwhile: it
  // is held again while other reads or holds are on.
  const checkpointed = takeDeferred(writer) !== undefined;
  if (reading(writer)) {
    read.then(found, checkpointed);
    return;
  }
  opened(writer, () => read.then(found, checkpointed));
}

function unanswered(writer: Writer): number {
  return writer.writes?.writing.size ?? 0;
}

function toWrites(writer: Writer): Writes {
  writer.writes ??= { confirmed: new Set(), written: new Map(), writing: new Set(), sent: [] };
  return writer.writes;
}

function clearTimer(writer: Writer): void {
  clearTimeout(writer.timer);
  writer.timer = undefined;
}

/**
 * The timeout runs while a checkpoint waits, or while an end waits for writes still unanswered;
 * it expires with no answer for `timeoutMs`.
 */
function arm(writer: Writer): void {
  clearTimeout(writer.timer);
  writer.timer = setTimeout(expire, writer.timeoutMs, writer);
  writer.timer.unref();
}

function timed(writer: Writer): boolean {
  return writer.waiting.length > 0 || ((writer.atEnd?.length ?? 0) > 0 && unanswered(writer) > 0);
}

/** After an answer or a release: the timeout anew while something waits, else off. */
function rearm(writer: Writer): void {
  if (!timed(writer)) clearTimer(writer);
  else if (!writer.paused) arm(writer);
}

function expire(writer: Writer): void {
  writer.timer = undefined;
  if (writer.waiting.length > 0) fallBack(writer, "timeout");
  else runThen(writer, true);
}

/**
 * Runs what waits for the end once no checkpoint waits and no write is unanswered (the client
 * answers into a closed stream otherwise: "WritableIterable already closed"); `force`: the
 * timeout expired with writes no checkpoint needs still unanswered.
 */
function runThen(writer: Writer, force = false): void {
  const atEnd = writer.atEnd;
  if (writer.waiting.length > 0 || reading(writer) || atEnd === undefined || atEnd.length === 0) {
    return;
  }
  if (unanswered(writer) > 0 && !force) {
    if (writer.timer === undefined && !writer.paused) arm(writer);
    return;
  }
  clearTimer(writer);
  for (const run of atEnd.splice(0)) run();
}

function send(writer: Writer, messages: readonly AgentServerMessage[]): void {
  for (const message of messages) {
    if (writer.outbound.ended) return;
    // turn_ended waits behind a checkpoint that waits, for its blobs or held (`reading`).
    if (
      writer.behind.length > 0 ||
      ((writer.waiting.length > 0 || writer.writes?.deferred !== undefined) && isTurnEnded(message))
    ) {
      writer.behind.push(message);
    } else if (message.message.case === "conversationCheckpointUpdate") {
      checkpoint(writer, message);
    } else {
      writer.outbound.push(message);
    }
  }
}

function checkpoint(writer: Writer, message: AgentServerMessage): void {
  if (writer.writes !== undefined && reading(writer)) {
    // Out once no read or hold is left (a reader sends the stream's checkpoint anew instead).
    writer.writes.deferred = message;
    return;
  }
  const state = writer.blobs ? toCheckpointSource(message) : undefined;
  if (state === undefined) {
    // Inline (after a fallback, or a checkpoint not made from a turn state): out at once,
    // replacing those that wait.
    release(writer, message, writer.waiting.length);
    return;
  }
  const blobCheckpoint = toBlobCheckpoint(state);
  const required: string[] = [];
  const { confirmed, written, writing } = toWrites(writer);
  for (const blob of blobCheckpoint.blobs) {
    if (confirmed.has(blob.key)) continue;
    required.push(blob.key);
    if (writing.has(blob.key)) continue;
    const id = writer.nextID++;
    written.set(id, blob.key);
    writing.add(blob.key);
    writer.outbound.push(toSetBlobMessage(id, blob));
  }
  const blobForm = toCheckpointUpdate(blobCheckpoint.checkpoint);
  const turnKey = blobCheckpoint.turn?.key;
  const turn =
    turnKey === undefined || writer.onTurnBlob === undefined
      ? undefined
      : { key: turnKey, conversationID: state.conversationID, requestID: state.requestID };
  if (required.length === 0) {
    sent(writer, blobCheckpoint.turnSteps);
    told(writer, turn);
    release(writer, blobForm, writer.waiting.length);
    return;
  }
  if (writer.waiting.length === 0 && !writer.paused) arm(writer);
  writer.waiting.push({
    blobForm,
    turnSteps: blobCheckpoint.turnSteps,
    inline: message,
    required,
    turn,
  });
}

/** Tells `onTurnBlob` a checkpoint's turn blob, as the checkpoint is released. */
function told(writer: Writer, turn: TurnBlobTold | undefined): void {
  if (turn === undefined) return;
  const onTurnBlob = writer.onTurnBlob;
  onTurnBlob?.(turn.key, turn.conversationID, turn.requestID);
}

/** A blob-form checkpoint whose turn blob lists `steps` went out: the last ones are kept. */
function sent(writer: Writer, steps: number): void {
  const counts = toWrites(writer).sent;
  if (counts.at(-1) === steps) return;
  counts.push(steps);
  if (counts.length > SENT_TURN_BLOBS) counts.shift();
}

/**
 * `message` goes out in place of the first `count` waiting checkpoints (dropped: it is newer);
 * once none waits, what waited behind them.
 */
function release(writer: Writer, message: AgentServerMessage, count: number): void {
  writer.waiting = writer.waiting.slice(count);
  writer.outbound.push(message);
  if (writer.waiting.length > 0) return;
  clearTimer(writer);
  const held = writer.behind;
  writer.behind = [];
  send(writer, held);
  runThen(writer);
}

/** The index of the newest waiting checkpoint whose blobs are all confirmed, or -1. */
function newestReady(writer: Writer): number {
  const confirmed = writer.writes?.confirmed;
  for (let index = writer.waiting.length - 1; index >= 0; index--) {
    if (writer.waiting[index]?.required.every((key) => confirmed?.has(key) === true) === true) {
      return index;
    }
  }
  return -1;
}

function fallBack(writer: Writer, reason: "timeout" | "error", detail?: string): void {
  if (!writer.blobs) return;
  writer.blobs = false;
  writer.log.warn(
    {
      ...writer.describe(),
      reason,
      unconfirmed: unanswered(writer),
      ...(detail === undefined ? {} : { detail: detail.slice(0, 200) }),
      ...(reason === "error" ? {} : { timeoutMs: writer.timeoutMs }),
    },
    reason === "timeout"
      ? "the client did not confirm checkpoint blob writes in time; checkpoints go inline for the rest of the stream"
      : "the client refused a checkpoint blob write; checkpoints go inline for the rest of the stream",
  );
  writer.writes?.written.clear();
  writer.writes?.writing.clear();
  const newest = writer.waiting.at(-1);
  if (newest !== undefined) release(writer, newest.inline, writer.waiting.length);
}

function flush(writer: Writer): void {
  writer.blobs = false;
  const newest = writer.waiting.at(-1);
  writer.waiting = [];
  clearTimer(writer);
  if (newest !== undefined) writer.outbound.push(newest.inline);
  // Holds are off and unanswered reads get nothing now: the checkpoint held meanwhile goes out
  // (inline, as it was) before the end.
  const writes = writer.writes;
  if (writes !== undefined) {
    for (const timer of writes.holds?.values() ?? []) clearTimeout(timer);
    writes.holds?.clear();
    const reads = [...(writes.reads ?? [])];
    writes.reads?.clear();
    writes.asked?.clear();
    const deferred = takeDeferred(writer);
    for (const read of reads) {
      read.done = true;
      clearTimeout(read.timer);
      read.then(null, false);
    }
    if (deferred !== undefined && !writer.outbound.ended) writer.outbound.push(deferred);
  }
  const held = writer.behind;
  writer.behind = [];
  for (const message of held) writer.outbound.push(message);
  const atEnd = writer.atEnd;
  if (atEnd !== undefined) for (const run of atEnd.splice(0)) run();
}

interface Writes {
  /** Blobs the client confirmed on this stream. */
  readonly confirmed: Set<string>;
  /** Writes sent and not answered: kv id → blob key; and the keys. */
  readonly written: Map<number, string>;
  readonly writing: Set<string>;
  /** How many steps the turn blobs of the last blob-form checkpoints that went out list. */
  readonly sent: number[];
  /** Reads under way (`read`); made at the first. */
  reads?: Set<Read>;
  /** Their asks sent and not answered: kv id → read. */
  asked?: Map<number, Read>;
  /** The newest checkpoint sent while reads or holds were on; out once none is. */
  deferred?: AgentServerMessage | undefined;
  /** Holds on (`holdCheckpoints`): key → its timeout; made at the first. */
  holds?: Map<string, NodeJS.Timeout>;
}

interface Read {
  readonly then: ReadThen;
  /** The blob asked for now, and the ones to ask for if the client has not got it. */
  key: string;
  rest: readonly string[];
  timer: NodeJS.Timeout | undefined;
  done: boolean;
}

function isTurnEnded(message: AgentServerMessage): boolean {
  const branch = message.message;
  return branch.case === "interactionUpdate" && branch.value.message.case === "turnEnded";
}
