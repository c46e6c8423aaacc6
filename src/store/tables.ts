/**
 * The storage contract under every store: rows as the database holds them (JSON as text) and
 * the few operations the store logic needs. The logic (create-store.ts) is written once against
 * this contract, so the SQLite, in-memory and PostgreSQL stores decide identically; they differ
 * only in how rows are kept. The logic sees `Tables` (every operation returns a promise, since a
 * PostgreSQL query is a round trip); SQLite and memory implement the synchronous `SyncTables`
 * and are lifted by `toAsyncTables` (sync-tables.ts).
 */
import type { ClientOperationStatus, LLMCallStatus } from "./types.ts";

/** What a commit needs to know about a conversation before it writes. */
export interface ConversationHead {
  readonly version: number;
  readonly messageCount: number;
  readonly chainHash: string;
  readonly lastMessageHash: string;
}

export interface ConversationRow extends ConversationHead {
  readonly conversationID: string;
  /** The committed state without its messages (`messages` is `[]` in this text). */
  readonly stateJSON: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface MessageRow {
  /** 0-based position in history. */
  readonly seq: number;
  /** The message's canonical JSON; its UTF-8 bytes are what `hash` covers. */
  readonly json: string;
  readonly hash: string;
  readonly chainHash: string;
}

export interface InputCommitRow {
  readonly conversationID: string;
  readonly inputID: string;
  readonly version: number;
  readonly messageCount: number;
  readonly chainHash: string;
  readonly resultJSON: string;
  readonly committedAt: number;
}

export interface LLMCallRow {
  readonly callID: string;
  readonly conversationID: string;
  readonly turnID: string;
  readonly model: string;
  readonly request: string;
  readonly requestHash: string;
  readonly messagesHash: string;
  readonly messageCount: number;
  readonly lastMessageHash: string;
  readonly status: LLMCallStatus;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface ClientOperationRow {
  readonly operationID: string;
  readonly conversationID: string;
  readonly turnID: string;
  readonly toolCallID: string;
  readonly requestJSON: string;
  readonly status: ClientOperationStatus;
  readonly resultJSON: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface RequestStreamRow {
  readonly requestID: string;
  readonly conversationID: string;
  readonly turnID: string | null;
  /** Bytes (a BLOB column); backends store and return copies. */
  readonly clientState: Uint8Array | null;
  readonly createdAt: number;
}

/** A recorded turn blob (types.ts `TurnBlob`); `blobID` as 64 lowercase hex digits. */
export interface TurnBlobRow {
  readonly blobID: string;
  readonly conversationID: string;
  readonly requestID: string;
}

/** The dashboard's summary of a conversation, maintained by every commit (summaries.ts). */
export interface SummaryRow {
  readonly conversationID: string;
  readonly title: string;
  readonly model: string;
  readonly provider: string;
  readonly status: string;
  readonly turns: number;
  readonly modelCalls: number;
  readonly messageCount: number;
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
  readonly cost: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** Usage of one committed assistant message (one model call), written once. */
export interface CallUsageRow {
  readonly conversationID: string;
  /** The assistant message's position in history. */
  readonly seq: number;
  /** The model call that committed it; `null` when no saved call was marked committed. */
  readonly callID: string | null;
  readonly provider: string;
  readonly model: string;
  /** UTC day `YYYY-MM-DD` the usage counts for. */
  readonly day: string;
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
  readonly cost: number;
  readonly committedAt: number;
}

/** Totals of one day × provider × model; `addDailyUsage` adds to them. */
export interface DailyUsageRow {
  readonly day: string;
  readonly provider: string;
  readonly model: string;
  readonly calls: number;
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
  readonly cost: number;
}

/** A model call without its request body (which may be large). */
export interface CallListRow {
  readonly callID: string;
  readonly turnID: string;
  readonly model: string;
  readonly status: LLMCallStatus;
  readonly requestHash: string;
  readonly requestBytes: number;
  readonly messageCount: number;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly firstEventAt: number | null;
}

export interface SummaryQueryRows {
  readonly rows: SummaryRow[];
  /** `null` when not asked for. */
  readonly total: number | null;
}

/** Keyset paging position: rows strictly after it in (`updatedAt` desc, id desc) order. */
export interface SummaryPosition {
  readonly updatedAt: number;
  readonly conversationID: string;
}

/**
 * Synchronous access to the rows, valid only inside one `Backend.read`/`Backend.write` call.
 * Conditional writes report whether a row was written; nothing here validates business rules.
 */
export interface SyncTables {
  readHead(conversationID: string): ConversationHead | null;
  /**
   * `readHead`, holding the conversation's row until the write transaction ends, so that no
   * other transaction moves its version meanwhile (PostgreSQL: `for update`; SQLite's and the
   * memory store's write transactions run one at a time already).
   */
  lockHead(conversationID: string): ConversationHead | null;
  readConversation(conversationID: string): ConversationRow | null;
  /** Messages in `seq` order. */
  readMessages(conversationID: string): MessageRow[];
  /**
   * The id of the newest conversation (latest `createdAt`, then greatest id) whose id starts with
   * `prefix` and whose rest does not contain `without`, or null: a range scan of the primary key
   * over [`prefix`, `toPrefixEnd(prefix)`), never a scan of every conversation.
   */
  readNewestConversationID(prefix: string, without: string): string | null;
  /** Inserts at version 1 unless the conversation exists; false when it does. */
  insertConversation(row: ConversationRow): boolean;
  /** `update … where conversation_id = ? and version = ?`; false when no row matched. */
  updateConversation(row: ConversationRow, expectedVersion: number): boolean;
  appendMessages(conversationID: string, rows: readonly MessageRow[]): void;

  readInputCommit(conversationID: string, inputID: string): InputCommitRow | null;
  insertInputCommit(row: InputCommitRow): void;

  readLLMCall(callID: string): LLMCallRow | null;
  insertLLMCall(row: LLMCallRow): void;
  updateLLMCallStatus(callID: string, status: LLMCallStatus, updatedAt: number): void;

  readClientOperation(operationID: string): ClientOperationRow | null;
  insertClientOperation(row: ClientOperationRow): void;
  updateClientOperation(
    operationID: string,
    status: ClientOperationStatus,
    resultJSON: string | null,
    updatedAt: number,
  ): void;

  /** Calls `planned`/`streaming` and operations `planned`/`sent`, by `createdAt` then id. */
  listUnfinishedLLMCalls(conversationID: string | null): LLMCallRow[];
  listUnfinishedClientOperations(conversationID: string | null): ClientOperationRow[];

  /** The base64 text stored under its SHA-256 hex (image-refs.ts), or `null`. */
  readImage(hash: string): string | null;
  /** Inserts the image unless its hash is stored already (then nothing changes). */
  insertImage(hash: string, data: string): void;

  readRequestStream(requestID: string): RequestStreamRow | null;
  /**
   * Inserts a new binding; the request id must not be bound yet. `row.clientState` is the
   * caller's: a table that keeps it in memory keeps a copy.
   */
  insertRequestStream(row: RequestStreamRow): void;
  /**
   * Sets the client state of every request stream of the conversation except `keepRequestID` to
   * `null` (request-streams.ts: a newer stream was bound); the rows themselves stay.
   */
  releaseRequestStreams(conversationID: string, keepRequestID: string): void;

  /** Inserts the row unless its blob id is recorded already (then nothing changes). */
  insertTurnBlob(row: TurnBlobRow): void;
  readTurnBlob(blobID: string): TurnBlobRow | null;
  /** The request id's turn blobs, newest first (at most `TURN_BLOBS_PER_REQUEST`, kept so). */
  readTurnBlobsOf(requestID: string): TurnBlobRow[];
  /** Deletes the request id's turn blobs but the `keep` inserted last. */
  trimTurnBlobs(requestID: string, keep: number): void;

  // Dashboard (dashboard-types.ts): derived rows, written in the commit that caused them.
  readSummary(conversationID: string): SummaryRow | null;
  /** Inserts or replaces the conversation's summary. */
  writeSummary(row: SummaryRow): void;
  insertCallUsage(row: CallUsageRow): void;
  /** Adds the row's figures to the day × provider × model totals (inserting them if new). */
  addDailyUsage(row: DailyUsageRow): void;
  /** Records when a call's first stream event came; a second record is ignored. */
  insertFirstEvent(callID: string, at: number): void;
  /**
   * Summaries in (`updatedAt` desc, id desc) order after `after`, at most `limit`, whose title or
   * id contains `search` (lower-cased; "" matches all), and, when `count`, how many match in all.
   */
  listSummaries(
    search: string,
    after: SummaryPosition | null,
    limit: number,
    count: boolean,
  ): SummaryQueryRows;
  /** Messages with `seq >= fromSeq`, at most `limit`, in order. */
  readMessagesFrom(conversationID: string, fromSeq: number, limit: number): MessageRow[];
  /** The conversation's calls by `createdAt` then id, with their first-event time. */
  listCallsOf(conversationID: string): CallListRow[];
  /** By `seq`. */
  listCallUsageOf(conversationID: string): CallUsageRow[];
  /** By `createdAt` then id. */
  listOperationsOf(conversationID: string): ClientOperationRow[];
  /** Days in `[fromDay, toDay]`, ordered by day, provider, model. */
  listDailyUsage(fromDay: string, toDay: string): DailyUsageRow[];
}

/** `SyncTables` with every operation returning a promise: what the store logic calls. */
export type Tables = {
  readonly [K in keyof SyncTables]: SyncTables[K] extends (...args: infer A) => infer R
    ? (...args: A) => Promise<R>
    : never;
};

/** What every write needs to know: where (for errors), when, and for which conversation. */
export interface WriteContext {
  readonly location: string;
  readonly now: number;
  /** Set inside `commitInput`: records must belong to this conversation. */
  readonly conversationID: string | null;
}

export interface WriteOptions {
  /**
   * The transaction need not survive a crash of the machine (power loss, a kernel panic, the
   * database server's crash) that comes right after it returned; a crash of this process it
   * survives. Atomicity and consistency are unchanged. For rows that are worth less than an
   * fsync on the event loop (turn-blobs.ts): SQLite commits it with `synchronous = NORMAL` (into
   * the WAL without an fsync; the next fsynced commit makes it durable), PostgreSQL with
   * `synchronous_commit = off`.
   */
  readonly relaxed?: boolean;
}

export interface ReadOptions {
  /**
   * `work` runs one statement (a snapshot of itself): PostgreSQL runs it without a transaction
   * (one round trip instead of three: turn-blobs.ts's look-up at a turn's start). The others
   * ignore it.
   */
  readonly single?: boolean;
}

/** A database the store logic runs on. */
export interface Backend {
  /** File path, or a label; named in every error. */
  readonly location: string;
  /**
   * Runs `work` in one write transaction: everything it wrote is kept if it resolves, and
   * nothing if it rejects (the error is rethrown, database failures as `StoreError`s). A backend
   * may run `work` again from the start when the database asks for a retry (PostgreSQL
   * serialization failures), so `work` must not act outside the tables.
   */
  write<T>(work: (tables: Tables) => Promise<T>, options?: WriteOptions): Promise<T>;
  /** Runs `work` on one consistent snapshot. */
  read<T>(work: (tables: Tables) => Promise<T>, options?: ReadOptions): Promise<T>;
  close(): Promise<void>;
}
