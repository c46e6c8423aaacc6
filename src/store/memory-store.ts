/**
 * The in-memory store: the same logic as the SQLite store (create-store.ts) over plain maps, for
 * fast tests. Rows hold JSON as text, exactly as the database does, so byte-level behaviour is the
 * same. A write transaction keeps an undo log and rolls back if its work throws.
 */
import { createStore, type StoreOptions } from "./create-store.ts";
import { createSerialQueue, toAsyncTables } from "./sync-tables.ts";
import type {
  Backend,
  CallUsageRow,
  ClientOperationRow,
  ConversationRow,
  DailyUsageRow,
  InputCommitRow,
  LLMCallRow,
  MessageRow,
  RequestStreamRow,
  SummaryRow,
  SyncTables,
  TurnBlobRow,
} from "./tables.ts";
import type { Store } from "./types.ts";

export const MEMORY_LOCATION = "the in-memory store";

export function createMemoryStore(options: StoreOptions = {}): Store {
  return createStore(createMemoryBackend(), options);
}

export function createMemoryBackend(): Backend {
  const conversations = new Map<string, ConversationRow>();
  const messages = new Map<string, MessageRow[]>();
  const inputs = new Map<string, InputCommitRow>();
  const calls = new Map<string, LLMCallRow>();
  const operations = new Map<string, ClientOperationRow>();
  const requestStreams = new Map<string, RequestStreamRow>();
  /** Per conversation, the request ids whose client state is still saved (immutable lists). */
  const savedStates = new Map<string, readonly string[]>();
  const summaries = new Map<string, SummaryRow>();
  const callUsage = new Map<string, CallUsageRow[]>();
  const dailyUsage = new Map<string, DailyUsageRow>();
  const firstEvents = new Map<string, number>();
  const images = new Map<string, string>();
  const turnBlobs = new Map<string, TurnBlobRow>();
  /** Per request id, its turn blob ids in the order recorded (immutable lists). */
  const turnBlobsOf = new Map<string, readonly string[]>();
  let undo: (() => void)[] | null = null;

  /** Sets `key` in `map`, remembering how to restore the previous value. */
  function put<K, V>(map: Map<K, V>, key: K, value: V): void {
    const had = map.has(key);
    const before = map.get(key);
    undo?.push(() => {
      if (had) map.set(key, before as V);
      else map.delete(key);
    });
    map.set(key, value);
  }

  function pushAll<V>(map: Map<string, V[]>, key: string, values: readonly V[]): void {
    const list = map.get(key) ?? [];
    if (!map.has(key)) put(map, key, list);
    const length = list.length;
    undo?.push(() => {
      list.length = length;
    });
    list.push(...values);
  }

  const inputKey = (conversationID: string, inputID: string): string =>
    JSON.stringify([conversationID, inputID]);
  const byAge =
    <R extends { createdAt: number }>(id: (row: R) => string) =>
    (a: R, b: R) =>
      a.createdAt - b.createdAt || (id(a) < id(b) ? -1 : id(a) > id(b) ? 1 : 0);

  const tables: SyncTables = {
    readHead(conversationID) {
      const row = conversations.get(conversationID);
      return row === undefined
        ? null
        : {
            version: row.version,
            messageCount: row.messageCount,
            chainHash: row.chainHash,
            lastMessageHash: row.lastMessageHash,
          };
    },
    lockHead(conversationID) {
      return tables.readHead(conversationID); // transactions here run one at a time
    },
    readNewestConversationID(prefix, without) {
      // Memory keeps no ordered index: every id is looked at (a test store, see README).
      let newest: ConversationRow | null = null;
      for (const row of conversations.values()) {
        const id = row.conversationID;
        if (!id.startsWith(prefix) || id.slice(prefix.length).includes(without)) continue;
        if (
          newest === null ||
          row.createdAt > newest.createdAt ||
          (row.createdAt === newest.createdAt && id > newest.conversationID)
        ) {
          newest = row;
        }
      }
      return newest?.conversationID ?? null;
    },
    readConversation: (conversationID) => conversations.get(conversationID) ?? null,
    readMessages: (conversationID) => [...(messages.get(conversationID) ?? [])],
    insertConversation(row) {
      if (conversations.has(row.conversationID)) return false;
      put(conversations, row.conversationID, row);
      return true;
    },
    updateConversation(row, expectedVersion) {
      const current = conversations.get(row.conversationID);
      if (current === undefined || current.version !== expectedVersion) return false;
      put(conversations, row.conversationID, { ...row, createdAt: current.createdAt });
      return true;
    },
    appendMessages(conversationID, rows) {
      const stored = messages.get(conversationID)?.length ?? 0;
      rows.forEach((row, i) => {
        if (row.seq !== stored + i) throw new Error(`message ${row.seq} is out of sequence`);
      });
      pushAll(messages, conversationID, rows);
    },

    readInputCommit: (conversationID, inputID) =>
      inputs.get(inputKey(conversationID, inputID)) ?? null,
    insertInputCommit(row) {
      const key = inputKey(row.conversationID, row.inputID);
      if (inputs.has(key)) throw new Error(`input ${row.inputID} is already committed`);
      put(inputs, key, row);
    },

    readLLMCall: (callID) => calls.get(callID) ?? null,
    insertLLMCall(row) {
      if (calls.has(row.callID)) throw new Error(`model call ${row.callID} exists`);
      put(calls, row.callID, row);
    },
    updateLLMCallStatus(callID, status, updatedAt) {
      const row = calls.get(callID);
      if (row !== undefined) put(calls, callID, { ...row, status, updatedAt });
    },

    readClientOperation: (operationID) => operations.get(operationID) ?? null,
    insertClientOperation(row) {
      if (operations.has(row.operationID)) throw new Error(`operation ${row.operationID} exists`);
      put(operations, row.operationID, row);
    },
    updateClientOperation(operationID, status, resultJSON, updatedAt) {
      const row = operations.get(operationID);
      if (row !== undefined)
        put(operations, operationID, { ...row, status, resultJSON, updatedAt });
    },

    listUnfinishedLLMCalls: (conversationID) =>
      [...calls.values()]
        .filter(
          (row) =>
            (row.status === "planned" || row.status === "streaming") &&
            (conversationID === null || row.conversationID === conversationID),
        )
        .sort(byAge((row) => row.callID)),
    listUnfinishedClientOperations: (conversationID) =>
      [...operations.values()]
        .filter(
          (row) =>
            (row.status === "planned" || row.status === "sent") &&
            (conversationID === null || row.conversationID === conversationID),
        )
        .sort(byAge((row) => row.operationID)),

    readImage: (hash) => images.get(hash) ?? null,
    insertImage(hash, data) {
      if (!images.has(hash)) put(images, hash, data);
    },

    insertTurnBlob(row) {
      if (turnBlobs.has(row.blobID)) return;
      put(turnBlobs, row.blobID, { ...row });
      put(turnBlobsOf, row.requestID, [...(turnBlobsOf.get(row.requestID) ?? []), row.blobID]);
    },
    readTurnBlob: (blobID) => {
      const row = turnBlobs.get(blobID);
      return row === undefined ? null : { ...row };
    },
    readTurnBlobsOf: (requestID) =>
      (turnBlobsOf.get(requestID) ?? []).toReversed().flatMap((blobID) => {
        const row = turnBlobs.get(blobID);
        return row === undefined ? [] : [{ ...row }];
      }),
    trimTurnBlobs(requestID, keep) {
      const ids = turnBlobsOf.get(requestID) ?? [];
      if (ids.length <= keep) return;
      for (const blobID of ids.slice(0, ids.length - keep)) {
        const row = turnBlobs.get(blobID);
        if (row === undefined) continue;
        undo?.push(() => turnBlobs.set(blobID, row));
        turnBlobs.delete(blobID);
      }
      put(turnBlobsOf, requestID, ids.slice(-keep));
    },

    readRequestStream: (requestID) => requestStreams.get(requestID) ?? null,
    insertRequestStream(row) {
      if (requestStreams.has(row.requestID)) throw new Error(`request ${row.requestID} is bound`);
      if (!conversations.has(row.conversationID)) {
        throw new Error(`request ${row.requestID}: no conversation ${row.conversationID}`);
      }
      const clientState = row.clientState === null ? null : new Uint8Array(row.clientState);
      put(requestStreams, row.requestID, { ...row, clientState });
      if (row.clientState !== null) {
        put(savedStates, row.conversationID, [
          ...(savedStates.get(row.conversationID) ?? []),
          row.requestID,
        ]);
      }
    },
    releaseRequestStreams(conversationID, keepRequestID) {
      const saved = savedStates.get(conversationID) ?? [];
      for (const requestID of saved) {
        const row = requestStreams.get(requestID);
        if (requestID === keepRequestID || row === undefined) continue;
        put(requestStreams, requestID, { ...row, clientState: null });
      }
      if (saved.length > 0) {
        put(
          savedStates,
          conversationID,
          saved.filter((requestID) => requestID === keepRequestID),
        );
      }
    },

    readSummary: (conversationID) => summaries.get(conversationID) ?? null,
    writeSummary(row) {
      put(summaries, row.conversationID, row);
    },
    insertCallUsage(row) {
      if (callUsage.get(row.conversationID)?.some((used) => used.seq === row.seq)) {
        throw new Error(`usage of message ${row.seq} exists`);
      }
      pushAll(callUsage, row.conversationID, [row]);
    },
    addDailyUsage(row) {
      const key = JSON.stringify([row.day, row.provider, row.model]);
      const before = dailyUsage.get(key);
      put(
        dailyUsage,
        key,
        before === undefined
          ? row
          : {
              ...before,
              calls: before.calls + row.calls,
              input: before.input + row.input,
              output: before.output + row.output,
              cacheRead: before.cacheRead + row.cacheRead,
              cacheWrite: before.cacheWrite + row.cacheWrite,
              cost: before.cost + row.cost,
            },
      );
    },
    insertFirstEvent(callID, at) {
      if (!firstEvents.has(callID)) put(firstEvents, callID, at);
    },
    listSummaries(search, after, limit, count) {
      const matching = [...summaries.values()].filter(
        (row) =>
          search === "" ||
          `${row.title.toLowerCase()}\n${row.conversationID.toLowerCase()}`.includes(search),
      );
      const rows = matching
        .filter(
          (row) =>
            after === null ||
            row.updatedAt < after.updatedAt ||
            (row.updatedAt === after.updatedAt && row.conversationID < after.conversationID),
        )
        .sort(
          (a, b) =>
            b.updatedAt - a.updatedAt ||
            (a.conversationID < b.conversationID
              ? 1
              : a.conversationID > b.conversationID
                ? -1
                : 0),
        )
        .slice(0, limit);
      return { rows, total: count ? matching.length : null };
    },
    readMessagesFrom: (conversationID, fromSeq, limit) =>
      (messages.get(conversationID) ?? []).slice(fromSeq, fromSeq + limit),
    listCallsOf: (conversationID) =>
      [...calls.values()]
        .filter((row) => row.conversationID === conversationID)
        .sort(byAge((row) => row.callID))
        .map(({ request, ...row }) => ({
          ...row,
          requestBytes: Buffer.byteLength(request, "utf8"),
          firstEventAt: firstEvents.get(row.callID) ?? null,
        })),
    listCallUsageOf: (conversationID) => [...(callUsage.get(conversationID) ?? [])],
    listOperationsOf: (conversationID) =>
      [...operations.values()]
        .filter((row) => row.conversationID === conversationID)
        .sort(byAge((row) => row.operationID)),
    listDailyUsage: (fromDay, toDay) =>
      [...dailyUsage.values()]
        .filter((row) => row.day >= fromDay && row.day <= toDay)
        .sort(
          (a, b) =>
            compareText(a.day, b.day) ||
            compareText(a.provider, b.provider) ||
            compareText(a.model, b.model),
        ),
  };

  const lifted = toAsyncTables(tables);
  const serial = createSerialQueue();
  return {
    location: MEMORY_LOCATION,
    write: (work) =>
      serial(async () => {
        const log: (() => void)[] = [];
        undo = log;
        try {
          return await work(lifted);
        } catch (error) {
          for (const step of log.reverse()) step();
          throw error;
        } finally {
          undo = null;
        }
      }),
    read: (work) => serial(() => work(lifted)),
    async close() {},
  };
}

/** Code-unit order, as SQLite's default `binary` collation compares text. */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
