import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { createMemoryStore, type Store, StoreError, type TurnBlob } from "../store/index.ts";
import { createRecordingLog } from "./log.ts";
import { createTurnBlobOrigins, TURN_BLOB_WARN_INTERVAL_MS } from "./turn-blob-origins.ts";

const blob = (seed: string): string => createHash("sha256").update(seed).digest("hex");

/** A memory store that counts its turn blob calls, and fails them when told to. */
function countingStore() {
  const store = createMemoryStore();
  const calls = {
    record: [] as (readonly TurnBlob[])[],
    find: 0,
    fail: false,
    /** How many more writes fail (after which they succeed unless `fail`), and with what. */
    failWrites: 0,
    failWith: new Error("disk on fire") as Error,
  };
  const counted: Pick<Store, "recordTurnBlobs" | "findTurnBlob" | "findTurnBlobsOf"> = {
    async recordTurnBlobs(blobs) {
      calls.record.push(blobs);
      if (calls.failWrites > 0) {
        calls.failWrites -= 1;
        throw calls.failWith;
      }
      if (calls.fail) throw calls.failWith;
      await store.recordTurnBlobs(blobs);
    },
    async findTurnBlob(blobID) {
      calls.find += 1;
      if (calls.fail) throw new Error("disk on fire");
      return store.findTurnBlob(blobID);
    },
    async findTurnBlobsOf(requestID) {
      if (calls.fail) throw new Error("disk on fire");
      return store.findTurnBlobsOf(requestID);
    },
  };
  return { store, counted, calls };
}

test("remembered blobs are written later, together, in one call; nothing waits for the write", async () => {
  const { store, counted, calls } = countingStore();
  const { log } = createRecordingLog();
  const origins = createTurnBlobOrigins({ store: counted, log });
  origins.remember(blob("a"), "conv-1", "req-1");
  origins.remember(blob("b"), "conv-1", "req-1");
  origins.remember(blob("b"), "conv-1", "req-1"); // again: already remembered
  origins.remember(blob("c"), "", "req-1"); // no conversation: not kept (it would fail the batch)
  assert.deepEqual(calls.record, [], "not written within the call");
  await origins.flush();
  assert.deepEqual(calls.record, [
    [
      { blobID: blob("a"), conversationID: "conv-1", requestID: "req-1" },
      { blobID: blob("b"), conversationID: "conv-1", requestID: "req-1" },
    ],
  ]);
  assert.deepEqual(await store.findTurnBlob(blob("a")), {
    blobID: blob("a"),
    conversationID: "conv-1",
    requestID: "req-1",
  });
  // Found in memory: no store read.
  assert.equal(await origins.find(blob("b"), "conv-1"), "req-1");
  assert.equal(calls.find, 0);
});

test("blobs remembered while a write is under way go in the next write", async () => {
  const { counted, calls } = countingStore();
  const { log } = createRecordingLog();
  const origins = createTurnBlobOrigins({ store: counted, log });
  origins.remember(blob("a"), "conv-1", "req-1");
  // Wait until the first write began (it is begun on the next turn of the event loop).
  await new Promise<void>((resolve) => setImmediate(resolve));
  assert.equal(calls.record.length, 1);
  origins.remember(blob("b"), "conv-1", "req-1");
  origins.remember(blob("c"), "conv-1", "req-2");
  await origins.flush();
  assert.deepEqual(
    calls.record.map((batch) => batch.map((row) => row.blobID)),
    [[blob("a")], [blob("b"), blob("c")]],
  );
});

test("a blob not in memory is read from the store once (another instance or process wrote it)", async () => {
  const { store, counted, calls } = countingStore();
  await store.recordTurnBlobs([
    { blobID: blob("x"), conversationID: "conv-1", requestID: "req-x" },
  ]);
  const { log, lines } = createRecordingLog();
  const origins = createTurnBlobOrigins({ store: counted, log });
  assert.equal(await origins.find(blob("x"), "conv-1"), "req-x");
  assert.equal(await origins.find(blob("x"), "conv-1"), "req-x");
  assert.equal(calls.find, 1, "then kept in memory");
  assert.equal(await origins.find(blob("unknown"), "conv-1"), null);
  assert.deepEqual(lines, []);
});

test("a failed write is said at warn; the blob stays known in memory", async () => {
  const { counted, calls } = countingStore();
  const { log, lines } = createRecordingLog();
  const origins = createTurnBlobOrigins({ store: counted, log });
  calls.fail = true;
  origins.remember(blob("a"), "conv-1", "req-1");
  await origins.flush();
  assert.deepEqual(
    lines.map((line) => [line.level, line.fields.rows, line.fields.error]),
    [["warn", 1, "disk on fire"]],
  );
  assert.equal(await origins.find(blob("a"), "conv-1"), "req-1");
  // A failed read: not resolved, said at warn.
  assert.equal(await origins.find(blob("b"), "conv-1"), null);
  assert.equal(lines.at(-1)?.level, "warn");
});

test("a blob of another conversation resolves only when the request may see it; fails closed", async () => {
  const { store, counted } = countingStore();
  await store.recordTurnBlobs([
    { blobID: blob("ann"), conversationID: "ann-chat", requestID: "req-ann" },
  ]);
  const asked: string[] = [];
  let answer: boolean | Error = false;
  const { log, lines } = createRecordingLog();
  const origins = createTurnBlobOrigins({
    store: counted,
    log,
    mayRead: async (conversationID) => {
      asked.push(conversationID);
      if (answer instanceof Error) throw answer;
      return answer;
    },
  });
  origins.remember(blob("bob"), "bob-chat", "req-bob");
  // The request's own conversation (or a subagent's of it): no check.
  assert.equal(await origins.find(blob("bob"), "bob-chat"), "req-bob");
  assert.equal(await origins.find(blob("bob"), "bob-chat~task~abc"), "req-bob");
  assert.deepEqual(asked, []);
  // Another conversation: asked, each time (memory holds no answer).
  assert.equal(await origins.find(blob("ann"), "bob-fork"), null);
  assert.equal(await origins.find(blob("ann"), "bob-fork"), null);
  assert.deepEqual(asked, ["ann-chat", "ann-chat"]);
  assert.match(lines.at(-1)?.message ?? "", /may not see/);
  answer = new Error("users table gone");
  assert.equal(await origins.find(blob("ann"), "bob-fork"), null);
  assert.equal(lines.at(-1)?.level, "warn");
  answer = true;
  assert.equal(await origins.find(blob("ann"), "ann-fork"), "req-ann");
});

test("memory holds the most recently written or read blobs, up to its capacity", async () => {
  const { counted, calls } = countingStore();
  const { log } = createRecordingLog();
  const origins = createTurnBlobOrigins({ store: counted, log, capacity: 3 });
  origins.remember(blob("1"), "c", "r1");
  origins.remember(blob("2"), "c", "r2");
  origins.remember(blob("3"), "c", "r3");
  await origins.flush();
  assert.equal(await origins.find(blob("1"), "c"), "r1"); // now the most recent
  origins.remember(blob("4"), "c", "r4"); // evicts 2
  await origins.flush();
  const reads = calls.find;
  assert.equal(await origins.find(blob("1"), "c"), "r1");
  assert.equal(await origins.find(blob("3"), "c"), "r3");
  assert.equal(calls.find, reads, "1 and 3 from memory");
  assert.equal(await origins.find(blob("2"), "c"), "r2");
  assert.equal(calls.find, reads + 1, "2 from the store");
});

test("a store look-up that does not answer in time: unknown, said at warn, without waiting longer", {
  timeout: 10_000,
}, async () => {
  const { log, lines } = createRecordingLog();
  let answer!: (row: TurnBlob | null) => void;
  const origins = createTurnBlobOrigins({
    store: {
      recordTurnBlobs: async () => {},
      // A store that never answers while the start waits (a dead PostgreSQL before its connect
      // time-out): answered only after the look-up gave up.
      findTurnBlob: () => new Promise((resolve) => (answer = resolve)),
      findTurnBlobsOf: async () => [],
    },
    log,
    lookUpTimeoutMs: 20,
  });
  assert.equal(await origins.find(blob("slow"), "conv"), null);
  assert.equal(lines.at(-1)?.level, "warn");
  assert.match(lines.at(-1)?.message ?? "", /took too long/);
  // The late answer is harmless.
  answer({ blobID: blob("slow"), conversationID: "conv", requestID: "r1" });
});

test("failed writes are said at warn once per interval, with how many failed since", async () => {
  const { counted, calls } = countingStore();
  const { log, lines } = createRecordingLog();
  let clock = 0;
  const origins = createTurnBlobOrigins({ store: counted, log, now: () => clock });
  calls.fail = true;
  const failOne = async (seed: string) => {
    origins.remember(blob(seed), "conv-1", `req-${seed}`);
    await origins.flush();
  };
  // Each failOne fails twice: its write, then `flush` trying the failed rows once more.
  await failOne("a");
  await failOne("b");
  clock += TURN_BLOB_WARN_INTERVAL_MS - 1;
  await failOne("c");
  assert.equal(lines.length, 1, "one line for the first failure only");
  clock += 1;
  await failOne("d");
  assert.deepEqual(
    lines.map((line) => [line.level, line.fields.batches, line.fields.rows, line.fields.waiting]),
    [
      ["warn", 1, 1, 1],
      // Batches since: a's retry, b's two, c's two, d's write; rows: b, c and d, each counted
      // once however often it went again; all four wait for the next write.
      ["warn", 6, 3, 4],
    ],
  );
});

test("a blob remembered again for another turn keeps its first turn, as the store does", async () => {
  const { log } = createRecordingLog();
  const store = createMemoryStore();
  const origins = createTurnBlobOrigins({ store, log });
  origins.remember(blob("same"), "conv-1", "req-1");
  origins.remember(blob("same"), "conv-1", "req-2");
  await origins.flush();
  assert.equal(await origins.find(blob("same"), "conv-1"), "req-1");
  assert.equal((await store.findTurnBlob(blob("same")))?.requestID, "req-1");
});

test("rows of a failed write go again with the next write: nothing lost once the store answers", async () => {
  const { store, counted, calls } = countingStore();
  const { log } = createRecordingLog();
  const origins = createTurnBlobOrigins({ store: counted, log });
  calls.fail = true;
  origins.remember(blob("a"), "conv-1", "req-1");
  await origins.flush();
  assert.equal(await store.findTurnBlob(blob("a")), null);
  calls.fail = false;
  origins.remember(blob("b"), "conv-1", "req-2");
  await origins.flush();
  assert.deepEqual(
    calls.record.map((batch) => batch.map((row) => row.blobID)),
    [[blob("a")], [blob("a")], [blob("a"), blob("b")]],
    "the failed row first, in one write with the new one",
  );
  assert.equal((await store.findTurnBlob(blob("a")))?.requestID, "req-1");
  assert.equal((await store.findTurnBlob(blob("b")))?.requestID, "req-2");
});

test("flush tries the rows of failed writes once more (before a leave or a shutdown)", async () => {
  const { store, counted, calls } = countingStore();
  const { log, lines } = createRecordingLog();
  const origins = createTurnBlobOrigins({ store: counted, log });
  calls.failWrites = 1;
  origins.remember(blob("a"), "conv-1", "req-1");
  await origins.flush();
  assert.equal(calls.record.length, 2);
  assert.equal((await store.findTurnBlob(blob("a")))?.requestID, "req-1");
  assert.equal(lines.length, 1, "the failure was said");
  await origins.flush();
  assert.equal(calls.record.length, 2, "nothing waits: no further write");
});

test("rows of failed writes are bounded: the oldest are dropped, and counted in the warn", async () => {
  const { store, counted, calls } = countingStore();
  const { log, lines } = createRecordingLog();
  const origins = createTurnBlobOrigins({ store: counted, log, retryRows: 3 });
  calls.fail = true;
  for (const seed of ["a", "b", "c", "d", "e"]) origins.remember(blob(seed), "conv-1", "req-1");
  await origins.flush();
  assert.deepEqual(
    lines.map((line) => [line.fields.rows, line.fields.waiting, line.fields.dropped]),
    [[5, 3, 2]],
  );
  calls.fail = false;
  await origins.flush();
  assert.deepEqual(
    calls.record.at(-1)?.map((row) => row.blobID),
    [blob("c"), blob("d"), blob("e")],
  );
  assert.equal(await store.findTurnBlob(blob("a")), null);
  assert.equal((await store.findTurnBlob(blob("e")))?.requestID, "req-1");
  // Still known in memory.
  assert.equal(await origins.find(blob("a"), "conv-1"), "req-1");
});

test("a batch the store refuses as invalid is not sent again", async () => {
  const { counted, calls } = countingStore();
  const { log, lines } = createRecordingLog();
  const origins = createTurnBlobOrigins({ store: counted, log });
  calls.failWrites = 1;
  calls.failWith = new StoreError("invalid_argument", "test", "no such row");
  origins.remember(blob("a"), "conv-1", "req-1");
  await origins.flush();
  origins.remember(blob("b"), "conv-1", "req-1");
  await origins.flush();
  assert.deepEqual(
    calls.record.map((batch) => batch.map((row) => row.blobID)),
    [[blob("a")], [blob("b")]],
  );
  assert.equal(lines[0]?.fields.waiting, 0);
});

test("the turn blobs written for a turn: the store's rows of the client's conversation, newest first; none when the store fails or is slow (warn)", async () => {
  const { store, counted, calls } = countingStore();
  const { log, lines } = createRecordingLog();
  const origins = createTurnBlobOrigins({ store: counted, log });
  await store.recordTurnBlobs([
    { blobID: blob("1"), conversationID: "conv-1", requestID: "req-1" },
    { blobID: blob("2"), conversationID: "conv-1", requestID: "req-1" },
    // The same request id on another conversation (a request id is the client's to choose).
    { blobID: blob("3"), conversationID: "conv-other", requestID: "req-1" },
  ]);
  assert.deepEqual(await origins.writtenFor("req-1", "conv-1"), [blob("2"), blob("1")]);
  assert.deepEqual(await origins.writtenFor("req-2", "conv-1"), []);
  calls.fail = true;
  assert.deepEqual(await origins.writtenFor("req-1", "conv-1"), []);
  assert.equal(lines.filter((line) => line.level === "warn").length, 1);
  const slow = createTurnBlobOrigins({
    store: { ...counted, findTurnBlobsOf: () => new Promise(() => {}) },
    log,
    lookUpTimeoutMs: 20,
  });
  assert.deepEqual(await slow.writtenFor("req-1", "conv-1"), []);
  assert.equal(lines.filter((line) => line.level === "warn").length, 2);
});
