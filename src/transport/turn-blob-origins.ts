/**
 * Which turn a checkpoint's turn blob names, when the client does not send the blob back
 * (docs/protocol.md "Rewinds"): every turn blob this server writes to a client (each checkpoint
 * of a turn writes a new one, agent-stream/checkpoint-writer.ts) is remembered here and
 * recorded in the store (store/turn-blobs.ts), so the request id of the last turn of a run
 * request's checkpoint is known after a restart and on every instance of a team (rewind
 * detection, a fork's lineage: cursor/checkpoint-origin.ts, runner/route-start.ts).
 *
 * - Memory first: the most recently written or read `TURN_BLOB_ORIGINS` ids (an LRU, ≈250 bytes
 *   each), so a start on the instance that ran the conversation's last turn reads nothing, as
 *   before; a miss is one indexed store read, waited for `TURN_BLOB_LOOK_UP_TIMEOUT_MS` at most.
 * - Writes are not awaited by anyone: `remember` queues the row; one write at a time takes
 *   everything queued (one transaction), begun on the next turn of the event loop, so rows that
 *   come while one is written go together in the next. A blob is remembered when the checkpoint
 *   naming it is released to the client (agent-stream/checkpoint-writer.ts), so the row is
 *   written while that checkpoint travels; a rewind needs the user to edit a message first, by
 *   which time it is there. What a crash loses: the rows queued or being written at that moment.
 *   A write that fails is logged at warn (once a minute, with a count); its rows go again with
 *   the next write (the next row remembered, or `flush`), the oldest `TURN_BLOB_RETRY_ROWS` of
 *   them at most, so a store that was briefly unreachable (a PostgreSQL fail-over, a busy
 *   SQLite file) loses nothing, and one that stays down costs bounded memory. A batch the store
 *   refuses as invalid is not sent again. The ids stay known in memory either way. The server
 *   writes what is queued, and tries what failed once more, before leaving its cluster and at
 *   shutdown.
 * - Team mode: a blob of another conversation than the request's resolves only when the request
 *   may see that conversation (`mayRead`, the fork's read check: user-access.ts
 *   `createReadCheck`); otherwise, and when the store cannot be read, it does not resolve (the
 *   start is then no rewind and no fork: fail closed).
 */
import { errorMessage } from "../errors/error-message.ts";
import { toRootConversationID } from "../loop/index.ts";
import { isStoreError, type Store, type TurnBlob } from "../store/index.ts";
import type { Log } from "./log.ts";

/** How many turn blob ids are kept in memory. */
export const TURN_BLOB_ORIGINS = 20_000;

/**
 * How long a turn start waits for the store's answer (the read and the visibility check) before
 * going on without it ("unknown": no rewind detection, logged at warn). A slow or unreachable
 * store then delays a turn start by this much at most, not by its connect time-out.
 */
export const TURN_BLOB_LOOK_UP_TIMEOUT_MS = 2_000;

export interface TurnBlobOrigins {
  /**
   * A turn blob (hex id) about to be written to the client of `conversationID` (the client's
   * conversation id), for its turn `requestID`: remembered, and recorded in the store soon.
   */
  remember(blobID: string, conversationID: string, requestID: string): void;
  /**
   * The request id of the turn blob `blobID` (hex) for a run request naming `conversationID`,
   * from memory or the store; null when unknown or not visible to the request (above).
   */
  find(blobID: string, conversationID: string): Promise<string | null>;
  /**
   * The turn blobs (hex ids) written for turn `requestID` of the client's conversation
   * `conversationID`, newest first: the store's rows (the ones in memory are of streams in this
   * process), for the turn's own stream picked up after a restart (agent-stream/carry-turn.ts).
   * Empty when none, or when the store fails or takes longer than the look-up time-out (warn).
   */
  writtenFor(requestID: string, conversationID: string): Promise<readonly string[]>;
  /** Resolves once every row remembered so far is written (or its write failed). */
  flush(): Promise<void>;
}

export interface TurnBlobOriginsOptions {
  readonly store: Pick<Store, "recordTurnBlobs" | "findTurnBlob" | "findTurnBlobsOf">;
  readonly log: Log;
  /** Whether the request being handled may see a conversation; absent: every one (no users). */
  readonly mayRead?: (conversationID: string) => Promise<boolean>;
  /** Default `TURN_BLOB_ORIGINS`. */
  readonly capacity?: number;
  /** Default `TURN_BLOB_LOOK_UP_TIMEOUT_MS`. */
  readonly lookUpTimeoutMs?: number;
  /** The clock of the write-failure warn's throttle; default `Date.now`. */
  readonly now?: () => number;
  /** Default `TURN_BLOB_RETRY_ROWS`. */
  readonly retryRows?: number;
}

/**
 * Write failures are said at warn once per this many ms, with how many failed since: a store that
 * fails fast (closed, disk full) would otherwise log about two lines per tool call per stream.
 */
export const TURN_BLOB_WARN_INTERVAL_MS = 60_000;

/**
 * How many rows of failed writes are kept to go again with the next write (≈250 bytes each);
 * beyond it the oldest are dropped, and counted in the warn.
 */
export const TURN_BLOB_RETRY_ROWS = 2_000;

/** What a look-up that outlived its time-out resolves to. */
const TIMED_OUT = Symbol("timed out");

interface Origin {
  readonly conversationID: string;
  readonly requestID: string;
}

export function createTurnBlobOrigins(options: TurnBlobOriginsOptions): TurnBlobOrigins {
  const { store, log, mayRead } = options;
  const capacity = options.capacity ?? TURN_BLOB_ORIGINS;
  const lookUpTimeoutMs = options.lookUpTimeoutMs ?? TURN_BLOB_LOOK_UP_TIMEOUT_MS;
  const now = options.now ?? Date.now;
  const retryRows = options.retryRows ?? TURN_BLOB_RETRY_ROWS;
  /** Failed writes not said yet, and when the last warn was (null: none yet). */
  let unsaid = { batches: 0, rows: 0, dropped: 0 };
  let warnedAt: number | null = null;
  /** Hex blob id → its turn, least recently used first (a Map keeps insertion order). */
  const origins = new Map<string, Origin>();
  let queued: TurnBlob[] = [];
  /** Rows of failed writes, oldest first: they go first in the next write. */
  let failed: TurnBlob[] = [];
  /** The write under way (or about to begin), or null. */
  let writing: Promise<void> | null = null;

  const keep = (blobID: string, origin: Origin): void => {
    origins.delete(blobID);
    origins.set(blobID, origin);
    if (origins.size > capacity) {
      const oldest = origins.keys().next().value;
      if (oldest !== undefined) origins.delete(oldest);
    }
  };

  /**
   * Writes what is queued, then what came meanwhile, one transaction at a time; `retry`: also
   * when only rows of failed writes wait.
   */
  const write = async (retry: boolean): Promise<void> => {
    // Begun on the next turn of the event loop: the checkpoint that queued the row goes out
    // first, and rows of the same moment go together.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (queued.length > 0 || (retry && failed.length > 0)) {
      retry = false;
      // What failed before goes first, in one transaction with the new rows: a store that is
      // still down is asked once per batch, not once per failed row.
      const batch = failed.length === 0 ? queued : [...failed, ...queued];
      const fresh = queued.length;
      queued = [];
      failed = [];
      try {
        await store.recordTurnBlobs(batch);
      } catch (error) {
        // Refused as invalid: it would be refused again, and take later rows with it.
        if (!isStoreError(error, "invalid_argument")) keepFailed(batch);
        unsaid = { ...unsaid, batches: unsaid.batches + 1, rows: unsaid.rows + fresh };
        const at = now();
        if (warnedAt === null || at - warnedAt >= TURN_BLOB_WARN_INTERVAL_MS) {
          warnedAt = at;
          log.warn(
            {
              batches: unsaid.batches,
              rows: unsaid.rows,
              waiting: failed.length,
              dropped: unsaid.dropped,
              error: errorMessage(error),
            },
            "turn blobs could not be recorded; they go again with the next write (until then an edit of an earlier message in those turns is not detected after a restart or on another instance)",
          );
          unsaid = { batches: 0, rows: 0, dropped: 0 };
        }
      }
    }
    writing = null;
  };

  /** Keeps a failed batch for the next write: its newest `retryRows` rows at most. */
  const keepFailed = (batch: TurnBlob[]): void => {
    const over = batch.length - retryRows;
    failed = over > 0 ? batch.slice(over) : batch;
    if (over > 0) unsaid = { ...unsaid, dropped: unsaid.dropped + over };
  };

  const visible = async (origin: Origin, conversationID: string): Promise<boolean> => {
    if (toRootConversationID(origin.conversationID) === toRootConversationID(conversationID)) {
      // The request's own conversation: its access was checked with the run request.
      return true;
    }
    return mayRead === undefined ? true : await mayRead(origin.conversationID);
  };

  return {
    remember(blobID, conversationID, requestID) {
      // The store refuses a batch with such a row whole: it would take the others with it.
      if (conversationID === "" || requestID === "") return;
      // First wins, as in the store (its row is never replaced): memory answers as it does.
      if (origins.has(blobID)) return;
      const origin = { conversationID, requestID };
      keep(blobID, origin);
      queued.push({ blobID, ...origin });
      writing ??= write(false);
    },

    async find(blobID, conversationID) {
      const origin = origins.get(blobID);
      if (origin !== undefined) {
        keep(blobID, origin);
        return check(blobID, origin, conversationID);
      }
      // Only a store read waits, and for `lookUpTimeoutMs` at most (the read itself goes on).
      let timer: ReturnType<typeof setTimeout> | undefined;
      const deadline = new Promise<typeof TIMED_OUT>((resolve) => {
        timer = setTimeout(() => resolve(TIMED_OUT), lookUpTimeoutMs);
      });
      try {
        const found = await Promise.race([lookUp(blobID, conversationID), deadline]);
        if (found !== TIMED_OUT) return found;
        log.warn(
          { blob: blobID, timeoutMs: lookUpTimeoutMs },
          "the turn blob look-up in the store took too long; no rewind detection for this start",
        );
        return null;
      } finally {
        clearTimeout(timer);
      }
    },

    async writtenFor(requestID, conversationID) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const deadline = new Promise<typeof TIMED_OUT>((resolve) => {
        timer = setTimeout(() => resolve(TIMED_OUT), lookUpTimeoutMs);
      });
      try {
        const rows = await Promise.race([store.findTurnBlobsOf(requestID), deadline]);
        if (rows === TIMED_OUT) {
          log.warn(
            { request: requestID, timeoutMs: lookUpTimeoutMs },
            "the turn's blobs took too long to read from the store; its checkpoints list only the steps made since the restart",
          );
          return [];
        }
        // Only the client's own conversation's: a request id is the client's to choose.
        return rows.filter((row) => row.conversationID === conversationID).map((row) => row.blobID);
      } catch (error) {
        log.warn(
          { request: requestID, error: errorMessage(error) },
          "the turn's blobs could not be read from the store; its checkpoints list only the steps made since the restart",
        );
        return [];
      } finally {
        clearTimeout(timer);
      }
    },

    async flush() {
      while (writing !== null) await writing;
      // Rows of failed writes are tried once more (a flush comes before a leave or a shutdown).
      if (failed.length === 0) return;
      writing = write(true);
      while (writing !== null) await writing;
    },
  };

  /** `find` on a memory miss: the store's row, then whether the request may see it. */
  async function lookUp(blobID: string, conversationID: string): Promise<string | null> {
    let origin: Origin;
    try {
      const recorded = await store.findTurnBlob(blobID);
      if (recorded === null) return null;
      origin = { conversationID: recorded.conversationID, requestID: recorded.requestID };
    } catch (error) {
      log.warn(
        { blob: blobID, error: errorMessage(error) },
        "the turn blob could not be looked up in the store; no rewind detection for this start",
      );
      return null;
    }
    keep(blobID, origin);
    return check(blobID, origin, conversationID);
  }

  /** The request id of `origin`'s turn if the request for `conversationID` may see it. */
  async function check(
    blobID: string,
    origin: Origin,
    conversationID: string,
  ): Promise<string | null> {
    let may: boolean;
    try {
      may = await visible(origin, conversationID);
    } catch (error) {
      log.warn(
        { blob: blobID, error: errorMessage(error) },
        "whether the request may see the turn blob's conversation could not be checked; not used",
      );
      return null;
    }
    if (may) return origin.requestID;
    log.info(
      { conversation: conversationID, blob: blobID },
      "the checkpoint's last turn is a turn of a conversation this request may not see; not used",
    );
    return null;
  }
}
