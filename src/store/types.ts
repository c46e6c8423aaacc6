/**
 * The store's vocabulary (docs/design.md §7, §8): what a commit carries, the records of model calls
 * and client operations, and the results a commit can have. Everything is plain, readonly data.
 *
 * JSON-valued fields (`result`, a client operation's `request` and `result`, a diagnostic's
 * `detail`) must be plain JSON: they are stored as canonical JSON text (loop/canonical-json.ts)
 * and every read returns a freshly parsed copy, so no caller ever shares an object with the store.
 */
import type { ConversationState } from "../loop/types.ts";
import type { DashboardReads } from "./dashboard-types.ts";
import type { ClientOperationStatus, LLMCallStatus } from "./record-status.ts";

export type { ClientOperationStatus, LLMCallStatus } from "./record-status.ts";

// ---------------------------------------------------------------------------------------------
// Model calls
// ---------------------------------------------------------------------------------------------

/** A model call as the runner saves it before the upstream stream opens (docs/design.md §7, step 3). */
export interface LLMCallInput {
  readonly callID: string;
  readonly conversationID: string;
  readonly turnID: string;
  readonly model: string;
  /** The exact provider request body. A retry sends these bytes, never a rebuilt request. */
  readonly request: string;
  /** chain hash of the request's messages (loop/history-hash.ts). */
  readonly messagesHash: string;
  readonly messageCount: number;
  readonly lastMessageHash: string;
  readonly status: LLMCallStatus;
  /**
   * sha256 (lowercase hex) of the UTF-8 bytes of `request`, when the caller already has it (the
   * LLM layer's `ExactRequest.bodyHash`, computed from the same string): saves hashing a 20–40 KB
   * body a second time before the call is sent (issue #19). Absent: the store computes it.
   */
  readonly requestHash?: string;
}

export interface LLMCallRecord extends LLMCallInput {
  /** sha256 (hex) of the UTF-8 bytes of `request`: the caller's, or computed by the store. */
  readonly requestHash: string;
  /** Epoch milliseconds, from the store's clock. */
  readonly createdAt: number;
  readonly updatedAt: number;
}

// ---------------------------------------------------------------------------------------------
// Client operations
// ---------------------------------------------------------------------------------------------

/** One tool call run by the client (docs/design.md §8: operation id = call id + tool call id). */
export interface ClientOperationInput {
  readonly operationID: string;
  readonly conversationID: string;
  readonly turnID: string;
  readonly toolCallID: string;
  /** What is sent to the client (plain JSON, e.g. the tool call). */
  readonly request: unknown;
  readonly status: ClientOperationStatus;
  /** Required with status `completed`, absent otherwise (plain JSON). */
  readonly result?: unknown;
}

export interface ClientOperationRecord {
  readonly operationID: string;
  readonly conversationID: string;
  readonly turnID: string;
  readonly toolCallID: string;
  readonly request: unknown;
  readonly status: ClientOperationStatus;
  /** The saved result; `null` until the operation completed. */
  readonly result: unknown;
  readonly createdAt: number;
  readonly updatedAt: number;
}

// ---------------------------------------------------------------------------------------------
// Request streams
// ---------------------------------------------------------------------------------------------

/**
 * The conversation a client's agent stream (its protocol `request_id`) belongs to, so that a
 * client reconnecting the same stream after a restart reaches the same conversation. A binding is
 * permanent: a request id is bound to one conversation, once.
 */
export interface RequestStream {
  readonly conversationID: string;
  /** The turn the stream started, as saved with the binding; `null` when none was saved. */
  readonly turnID: string | null;
  /**
   * What the client protocol saved with the binding to pick the stream up again: opaque bytes
   * (the Cursor transport's encoded run request); `null` when nothing was saved.
   */
  readonly clientState: Uint8Array | null;
  /** Epoch milliseconds, from the store's clock, of the commit that bound it. */
  readonly createdAt: number;
}

// ---------------------------------------------------------------------------------------------
// Turn blobs
// ---------------------------------------------------------------------------------------------

/**
 * A turn blob a client protocol wrote to its client (the Cursor transport: the SHA-256 of a
 * checkpoint's `ConversationTurnStructure`, docs/protocol.md "Rewinds"), so that the turn a
 * client's checkpoint ends with can be told from that id alone, after a restart or on another
 * instance. Written outside commits, in batches (`recordTurnBlobs`).
 */
export interface TurnBlob {
  /** The blob's id: 64 lowercase hex digits (32 bytes, stored as bytes). */
  readonly blobID: string;
  /** The conversation the client named (for access checks: whose blob it is). */
  readonly conversationID: string;
  /** The client's id of the turn (its request id). */
  readonly requestID: string;
}

// ---------------------------------------------------------------------------------------------
// Commits
// ---------------------------------------------------------------------------------------------

/**
 * A record written in the same transaction as a commit. `llm_call` and `client_operation` save a
 * record (or, if it exists, keep its request and only move its status forward); the `*_status`
 * writes move the status of an existing record forward. `request_stream` binds a request id to
 * the commit's conversation: again to the same conversation it does nothing, to another one it
 * fails the whole commit with `StoreError("request_bound_elsewhere")`.
 */
export type RecordWrite =
  | { readonly type: "llm_call"; readonly call: LLMCallInput }
  | { readonly type: "llm_call_status"; readonly callID: string; readonly status: LLMCallStatus }
  | { readonly type: "client_operation"; readonly operation: ClientOperationInput }
  | {
      readonly type: "client_operation_status";
      readonly operationID: string;
      readonly status: ClientOperationStatus;
      readonly result?: unknown;
    }
  | {
      /** When the call's first stream event arrived; only the first record counts. */
      readonly type: "llm_call_first_event";
      readonly callID: string;
      /** Epoch milliseconds, the caller's clock. */
      readonly at: number;
    }
  | {
      readonly type: "request_stream";
      readonly requestID: string;
      /** Saved with the first binding, as `clientState`; a re-bind keeps the first ones. */
      readonly turnID?: string;
      /** Saved with the first binding (a copy); a re-bind keeps the first one. */
      readonly clientState?: Uint8Array;
    };

/** One applied input, committed atomically (docs/design.md §7, step 2). */
export interface InputCommit {
  /** The input's idempotency key (docs/design.md §8). */
  readonly inputID: string;
  /** The version the state was loaded at; 0 creates the conversation. */
  readonly expectedVersion: number;
  /**
   * The loop's next committed state. Its messages must extend the stored history: the store
   * appends `messages.slice(storedCount)` and checks that its chain equals `hashes.chainHash`.
   */
  readonly state: ConversationState;
  /** What a repeat of this input returns (plain JSON, e.g. the command the transition produced). */
  readonly result: unknown;
  readonly records?: readonly RecordWrite[];
}

/** What a committed input left behind; returned again when the same input arrives twice. */
export interface PreviousCommit {
  readonly conversationID: string;
  readonly inputID: string;
  /** The conversation's version after this commit. */
  readonly version: number;
  /** History length and chain hash after this commit. */
  readonly messageCount: number;
  readonly chainHash: string;
  readonly result: unknown;
  readonly committedAt: number;
}

export interface Committed {
  readonly type: "committed";
  readonly commit: PreviousCommit;
}

/** The compare-and-swap was lost: the conversation is not at the expected version. */
export interface Conflict {
  readonly type: "conflict";
  readonly conversationID: string;
  readonly expectedVersion: number;
  /** The stored version (0 when the conversation does not exist). */
  readonly actualVersion: number;
}

/** The input was committed before; nothing was written. */
export interface DuplicateInput {
  readonly type: "duplicate";
  readonly previous: PreviousCommit;
}

/**
 * The commit would mark a model call `committed` that already ended (committed, failed or
 * canceled): a second `done` for one call never reaches history. Nothing was written.
 */
export interface CallFinished {
  readonly type: "call_finished";
  readonly callID: string;
  readonly status: LLMCallStatus;
}

export type CommitResult = Committed | Conflict | DuplicateInput | CallFinished;

/**
 * A request stream bound outside a commit: a stream that took over the conversation's running
 * turn (the Cursor transport's resume action) changes no state, so there is no commit to carry
 * its `request_stream` record. Bound only while the conversation is still at `expectedVersion`,
 * so the binding names the turn that is current when it is written.
 */
export interface RequestStreamBinding {
  readonly conversationID: string;
  readonly requestID: string;
  /** The conversation's current turn, which the stream now carries. */
  readonly turnID: string;
  /** Saved with the binding (a copy), as a commit's `request_stream` record saves it. */
  readonly clientState?: Uint8Array;
  /** The version the caller loaded; another version (or no conversation) is a `conflict`. */
  readonly expectedVersion: number;
}

/** The binding as stored (a re-bind to the same conversation keeps the first one). */
export interface Bound {
  readonly type: "bound";
  readonly stream: RequestStream;
}

export type BindResult = Bound | Conflict;

export interface LoadedConversation {
  readonly state: ConversationState;
  readonly version: number;
}

// ---------------------------------------------------------------------------------------------
// The store
// ---------------------------------------------------------------------------------------------

/**
 * Persistence of conversations (docs/design.md §7). Methods return promises so that a server
 * database can implement the same interface. Failures are `StoreError`s (errors.ts); a lost
 * compare-and-swap, a repeated input and a second commit of a model call are results, not errors.
 *
 * Every method is atomic: it writes everything or nothing.
 */
export interface Store extends DashboardReads {
  /** Where the data lives (a file path, or a label for the in-memory store); used in errors. */
  readonly location: string;

  /** The committed state and its version, or `null` for an unknown conversation. */
  load(conversationID: string): Promise<LoadedConversation | null>;

  /** The commit of an input seen before, or `null`. */
  findInputCommit(conversationID: string, inputID: string): Promise<PreviousCommit | null>;

  /**
   * Appends the state's new messages, stores the rest of the state, records the input and
   * writes `records`, in one transaction guarded by `expectedVersion`.
   *
   * Checked in this order: a repeated input → `duplicate`; a version other than expected →
   * `conflict`; history that does not extend the stored one → `StoreError("chain_mismatch")`;
   * a model call marked `committed` twice → `call_finished`; a request id bound to another
   * conversation → `StoreError("request_bound_elsewhere")`.
   */
  commitInput(commit: InputCommit): Promise<CommitResult>;

  /**
   * Saves a model call. If the call exists, its request and hashes are kept (a retry must send
   * the saved bytes), its status only moves forward, and the saved record is returned: callers
   * use the returned `request`, not their own.
   */
  saveLLMCall(call: LLMCallInput): Promise<LLMCallRecord>;

  /** Moves a saved call's status forward; a backward or post-terminal move leaves it unchanged. */
  setLLMCallStatus(callID: string, status: LLMCallStatus): Promise<LLMCallRecord>;

  getLLMCall(callID: string): Promise<LLMCallRecord | null>;

  /**
   * Saves a client operation; as `saveLLMCall`, an existing operation keeps its request, its
   * status only moves forward, a completed operation keeps its first result, and the saved
   * record is returned.
   */
  saveClientOperation(operation: ClientOperationInput): Promise<ClientOperationRecord>;

  /** Moves a saved operation's status forward; `result` is required for `completed`. */
  setClientOperationStatus(
    operationID: string,
    status: ClientOperationStatus,
    result?: unknown,
  ): Promise<ClientOperationRecord>;

  getClientOperation(operationID: string): Promise<ClientOperationRecord | null>;

  /** The conversation a request id was bound to (a `request_stream` record), or `null`. */
  findRequestStream(requestID: string): Promise<RequestStream | null>;

  /**
   * The id of the newest conversation (by creation) whose id starts with `prefix` and whose rest
   * does not contain `without` (e.g. a conversation's branches, not their subagents), or null.
   * Reads only the ids in the prefix's range of the primary key. `prefix` must end with a
   * printable ASCII character.
   */
  findNewestConversation(prefix: string, without: string): Promise<string | null>;

  /**
   * Binds a request id to a conversation outside a commit (see `RequestStreamBinding`), by the
   * rules of a commit's `request_stream` record: a new binding releases the saved client state
   * of the conversation's other streams, a re-bind to the same conversation changes nothing,
   * another conversation is `StoreError("request_bound_elsewhere")`. Checked first: a version
   * other than expected → `conflict`, nothing written. The conversation's version is unchanged.
   */
  bindRequestStream(binding: RequestStreamBinding): Promise<BindResult>;

  /**
   * Records turn blobs (`TurnBlob`), in one transaction: a blob id recorded before keeps its
   * first record; then, of each request id named, only the newest `TURN_BLOBS_PER_REQUEST` (turn-blobs.ts) are
   * kept (by the order they were first recorded). Not a commit: it does not move any version.
   */
  recordTurnBlobs(blobs: readonly TurnBlob[]): Promise<void>;

  /** The record of a turn blob id (64 hex digits), or `null` (never recorded, or trimmed). */
  findTurnBlob(blobID: string): Promise<TurnBlob | null>;

  /**
   * The records of the turn blobs of request id `requestID` (the turn it started), newest first:
   * the checkpoints of that turn last released to its client (at most `TURN_BLOBS_PER_REQUEST`).
   */
  findTurnBlobsOf(requestID: string): Promise<TurnBlob[]>;

  /** Releases the database. Any later call fails with `StoreError("closed")`. */
  close(): Promise<void>;
}
