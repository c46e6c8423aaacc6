/**
 * The store logic, written once over a `Backend` (tables.ts): the SQLite, in-memory and
 * PostgreSQL stores are this function applied to three backends, so they decide identically.
 */
import { createDashboardReads } from "./dashboard-reads.ts";
import { StoreError } from "./errors.ts";
import {
  EMPTY_HEAD,
  fromStoredRows,
  type MessageHashCache,
  toAppendedRows,
  toStateJSON,
} from "./history.ts";
import { withImagesByHash } from "./image-refs.ts";
import { fromJSONText, toJSONText } from "./json-text.ts";
import {
  applyRecordWrite,
  type CallAlreadyFinished,
  saveClientOperationRow,
  saveLLMCallRow,
  setClientOperationStatusRow,
  setLLMCallStatusRow,
  toClientOperationRecord,
  toLLMCallRecord,
} from "./records.ts";
import { bindRequestStreamRow, toRequestStream } from "./request-streams.ts";
import { summarizeCommit } from "./summaries.ts";
import type { Backend, InputCommitRow, Tables, WriteContext } from "./tables.ts";
import { checkBlobID, recordTurnBlobRows } from "./turn-blobs.ts";
import type {
  ClientOperationRecord,
  CommitResult,
  InputCommit,
  LLMCallRecord,
  PreviousCommit,
  Store,
} from "./types.ts";

export interface StoreOptions {
  /** The clock for `createdAt`/`updatedAt`/`committedAt`, epoch milliseconds. */
  readonly now?: () => number;
}

/** Unwinds a write transaction that must leave nothing behind but is not an error. */
class Abort {
  readonly result: CommitResult;
  constructor(result: CommitResult) {
    this.result = result;
  }
}

export function createStore(tablesBackend: Backend, options: StoreOptions = {}): Store {
  const backend = withImagesByHash(tablesBackend);
  const now = options.now ?? Date.now;
  const location = backend.location;
  const cache: MessageHashCache = new WeakMap();
  let closed = false;

  const context = (conversationID: string | null = null): WriteContext => ({
    location,
    now: Math.floor(now()),
    conversationID,
  });
  const open = (): Backend => {
    if (closed) {
      throw new StoreError(
        "closed",
        location,
        `The store for ${location} is closed; open it again to use it.`,
      );
    }
    return backend;
  };
  const readCall = async (tables: Tables, callID: string): Promise<LLMCallRecord> => {
    const row = await tables.readLLMCall(callID);
    if (row === null) throw new Error(`model call ${callID} vanished inside its transaction`);
    return toLLMCallRecord(row);
  };
  const readOperation = async (
    tables: Tables,
    operationID: string,
  ): Promise<ClientOperationRecord> => {
    const row = await tables.readClientOperation(operationID);
    if (row === null) throw new Error(`operation ${operationID} vanished inside its transaction`);
    return toClientOperationRecord(row);
  };

  const store: Store = {
    location,

    async load(conversationID) {
      return open().read(async (tables) => {
        const row = await tables.readConversation(conversationID);
        if (row === null) return null;
        const messages = await tables.readMessages(conversationID);
        const state = fromStoredRows(row, messages, cache, location);
        return { state, version: row.version };
      });
    },

    async findInputCommit(conversationID, inputID) {
      return open().read(async (tables) => {
        const row = await tables.readInputCommit(conversationID, inputID);
        return row === null ? null : toPreviousCommit(row);
      });
    },

    async commitInput(commit) {
      const db = open();
      try {
        return await db.write((tables) => commitInTables(tables, commit, context, cache, location));
      } catch (error) {
        if (error instanceof Abort) return error.result;
        throw error;
      }
    },

    async saveLLMCall(call) {
      return open().write(async (tables) => {
        await saveLLMCallRow(tables, call, context(), false);
        return readCall(tables, call.callID);
      });
    },

    async setLLMCallStatus(callID, status) {
      return open().write(async (tables) => {
        await setLLMCallStatusRow(tables, callID, status, context(), false);
        return readCall(tables, callID);
      });
    },

    async getLLMCall(callID) {
      return open().read(async (tables) => {
        const row = await tables.readLLMCall(callID);
        return row === null ? null : toLLMCallRecord(row);
      });
    },

    async saveClientOperation(operation) {
      return open().write(async (tables) => {
        await saveClientOperationRow(tables, operation, context());
        return readOperation(tables, operation.operationID);
      });
    },

    async setClientOperationStatus(operationID, status, result) {
      return open().write(async (tables) => {
        await setClientOperationStatusRow(tables, operationID, status, result, context());
        return readOperation(tables, operationID);
      });
    },

    async getClientOperation(operationID) {
      return open().read(async (tables) => {
        const row = await tables.readClientOperation(operationID);
        return row === null ? null : toClientOperationRecord(row);
      });
    },

    async findRequestStream(requestID) {
      return open().read(async (tables) => {
        const row = await tables.readRequestStream(requestID);
        return row === null ? null : toRequestStream(row);
      });
    },

    async findNewestConversation(prefix, without) {
      const last = typeof prefix === "string" ? prefix.charCodeAt(prefix.length - 1) : Number.NaN;
      if (!(last >= 0x20 && last < 0x7f) || typeof without !== "string" || without === "") {
        throw new StoreError(
          "invalid_argument",
          location,
          `Cannot find conversations by prefix in ${location}: the prefix must end with a ` +
            "printable ASCII character and the excluded part must not be empty.",
        );
      }
      return open().read((tables) => tables.readNewestConversationID(prefix, without));
    },

    async bindRequestStream(binding) {
      const { conversationID, requestID, turnID, clientState, expectedVersion } = binding;
      if (typeof conversationID !== "string" || conversationID === "") {
        throw invalidBinding("the conversationID must be a non-empty string", location);
      }
      if (typeof turnID !== "string" || turnID === "") {
        throw invalidBinding("the turnID must be a non-empty string", location);
      }
      if (!Number.isSafeInteger(expectedVersion) || expectedVersion < 1) {
        throw invalidBinding("the expected version must be a positive integer", location);
      }
      return open().write(async (tables) => {
        // Locked: a commit of another process cannot move the turn on between check and bind.
        const actualVersion = (await tables.lockHead(conversationID))?.version ?? 0;
        if (actualVersion !== expectedVersion) {
          return { type: "conflict", conversationID, expectedVersion, actualVersion };
        }
        const saved = { turnID, ...(clientState === undefined ? {} : { clientState }) };
        await bindRequestStreamRow(tables, requestID, saved, context(conversationID));
        const row = await tables.readRequestStream(requestID);
        if (row === null) throw new Error(`request ${requestID} vanished inside its transaction`);
        return { type: "bound", stream: toRequestStream(row) };
      });
    },

    async recordTurnBlobs(blobs) {
      if (!Array.isArray(blobs)) {
        throw new StoreError(
          "invalid_argument",
          location,
          `Cannot record turn blobs in ${location}: expected a list. Nothing was written.`,
        );
      }
      if (blobs.length === 0) return;
      // Relaxed (tables.ts `WriteOptions`): an fsync per checkpoint on the event loop (≈4 ms
      // on a disk) would cost every stream of the process more than these rows are worth.
      await open().write((tables) => recordTurnBlobRows(tables, blobs, location), {
        relaxed: true,
      });
    },

    async findTurnBlob(blobID) {
      checkBlobID(blobID, location);
      // One statement: on PostgreSQL one round trip, without a transaction (ReadOptions).
      return open().read(
        async (tables) => {
          const row = await tables.readTurnBlob(blobID);
          return row === null
            ? null
            : { blobID: row.blobID, conversationID: row.conversationID, requestID: row.requestID };
        },
        { single: true },
      );
    },

    async findTurnBlobsOf(requestID) {
      if (typeof requestID !== "string") {
        throw new StoreError(
          "invalid_argument",
          location,
          `Cannot read turn blobs in ${location}: the request id must be a string.`,
        );
      }
      return open().read(
        async (tables) =>
          (await tables.readTurnBlobsOf(requestID)).map((row) => ({
            blobID: row.blobID,
            conversationID: row.conversationID,
            requestID: row.requestID,
          })),
        { single: true },
      );
    },

    ...createDashboardReads(() => open(), location, cache),

    async close() {
      if (closed) return;
      closed = true;
      await backend.close();
    },
  };
  openBackends.set(store, open);
  rawBackends.set(store, () => {
    open();
    return tablesBackend;
  });
  return store;
}

/**
 * Each store's backend, behind the same "closed" check as its methods. Not exported by the
 * store's index: only the testing surface (testing/unfinished.ts) reads rows the `Store`
 * interface does not offer.
 */
const openBackends = new WeakMap<Store, () => Backend>();

/** Runs `read` over a store's tables; for the testing surface only (see `openBackends`). */
export function readTablesForTesting<T>(
  store: Store,
  read: (tables: Tables) => Promise<T>,
): Promise<T> {
  const open = openBackends.get(store);
  if (open === undefined) throw new Error("not a store made by createStore");
  return open().read(read);
}

/** Each store's backend as stored, image references unresolved; for tests that count rows. */
const rawBackends = new WeakMap<Store, () => Backend>();

/** Runs `read` over a store's rows as stored (images by reference); for the testing surface. */
export function readStoredRowsForTesting<T>(
  store: Store,
  read: (tables: Tables) => Promise<T>,
): Promise<T> {
  const open = rawBackends.get(store);
  if (open === undefined) throw new Error("not a store made by createStore");
  return open().read(read);
}

async function commitInTables(
  tables: Tables,
  commit: InputCommit,
  context: (conversationID: string) => WriteContext,
  cache: MessageHashCache,
  location: string,
): Promise<CommitResult> {
  const { inputID, expectedVersion, state } = commit;
  const conversationID = state?.conversationID;
  if (typeof conversationID !== "string" || conversationID === "") {
    throw invalidCommit("the state has no conversationID", location);
  }
  if (typeof inputID !== "string" || inputID === "") {
    throw invalidCommit("the inputID must be a non-empty string", location);
  }
  if (!Number.isSafeInteger(expectedVersion) || expectedVersion < 0) {
    throw invalidCommit("the expected version must be a non-negative integer", location);
  }

  const previous = await tables.readInputCommit(conversationID, inputID);
  if (previous !== null) return { type: "duplicate", previous: toPreviousCommit(previous) };

  const head = await tables.readHead(conversationID);
  const actualVersion = head?.version ?? 0;
  if (actualVersion !== expectedVersion) {
    return { type: "conflict", conversationID, expectedVersion, actualVersion };
  }

  const rows = toAppendedRows(head ?? EMPTY_HEAD, state, cache, location);
  const toText = (value: unknown): string => toJSONText(value, "the state", location);
  const written = context(conversationID);
  const version = expectedVersion + 1;
  const conversation = {
    conversationID,
    version,
    messageCount: state.messages.length,
    chainHash: state.hashes.chainHash,
    lastMessageHash: state.hashes.lastMessageHash,
    stateJSON: toStateJSON(state, toText),
    createdAt: written.now,
    updatedAt: written.now,
  };
  const resultJSON = toJSONText(commit.result, "the commit result", location);

  // The conditional write is the final arbiter, whatever was read above.
  const swapped =
    head === null
      ? await tables.insertConversation(conversation)
      : await tables.updateConversation(conversation, expectedVersion);
  if (!swapped) {
    throw new Abort({
      type: "conflict",
      conversationID,
      expectedVersion,
      actualVersion: (await tables.readHead(conversationID))?.version ?? 0,
    });
  }
  await tables.appendMessages(conversationID, rows);
  const committed: InputCommitRow = {
    conversationID,
    inputID,
    version,
    messageCount: state.messages.length,
    chainHash: state.hashes.chainHash,
    resultJSON,
    committedAt: written.now,
  };
  await tables.insertInputCommit(committed);

  for (const write of commit.records ?? []) {
    const finished: CallAlreadyFinished | null = await applyRecordWrite(
      tables,
      write,
      written,
      true,
    );
    if (finished !== null) throw new Abort({ type: "call_finished", ...finished });
  }
  await summarizeCommit(tables, state, head?.messageCount ?? 0, commit.records ?? [], written.now);
  return { type: "committed", commit: toPreviousCommit(committed) };
}

function toPreviousCommit(row: InputCommitRow): PreviousCommit {
  return {
    conversationID: row.conversationID,
    inputID: row.inputID,
    version: row.version,
    messageCount: row.messageCount,
    chainHash: row.chainHash,
    result: fromJSONText(row.resultJSON),
    committedAt: row.committedAt,
  };
}

function invalidBinding(detail: string, location: string): StoreError {
  return new StoreError(
    "invalid_argument",
    location,
    `Cannot bind a request stream in ${location}: ${detail}. Nothing was written.`,
  );
}

function invalidCommit(detail: string, location: string): StoreError {
  return new StoreError(
    "invalid_argument",
    location,
    `Cannot commit to ${location}: ${detail}. Nothing was written.`,
  );
}
