/**
 * The WAL checkpoint worker (wal-checkpointer.ts): its own connection to the store's file, and a
 * blocking loop — this thread has nothing else to do — that waits for commits signalled through
 * shared memory and runs `pragma wal_checkpoint(PASSIVE)`, at most once per `intervalMs`, until
 * told to stop. Any error ends it: the store's connection then checkpoints on commit again.
 */
import { DatabaseSync } from "node:sqlite";
import { parentPort, workerData } from "node:worker_threads";
import { errorMessage } from "../errors/error-message.ts";
import {
  type CheckpointWorkerData,
  type CheckpointWorkerMessage,
  COMMITS,
  STOP,
  WAL_FRAMES,
} from "./wal-checkpointer.ts";

/** How long to wait before trying again when another connection held the checkpoint lock. */
const BUSY_RETRY_MS = 5;
const data = workerData as CheckpointWorkerData;
const shared = new Int32Array(data.shared);
const post = (message: CheckpointWorkerMessage): void => parentPort?.postMessage(message);

let db: DatabaseSync | undefined;
try {
  // Not read-only: a checkpoint writes the database file. It never writes a transaction.
  db = new DatabaseSync(data.location, {
    timeout: 5000,
    enableDoubleQuotedStringLiterals: false,
    defensive: true,
  });
  // A checkpoint fsyncs the WAL before copying it and the database after (not with `off`).
  db.exec("pragma synchronous = full");
  db.exec("pragma wal_autocheckpoint = 0");
  const checkpoint = db.prepare("pragma wal_checkpoint(PASSIVE)");
  let seen = 0;
  // The first checkpoint comes no sooner than one interval after the start, like every next one.
  let lastStart = performance.now();
  while (Atomics.load(shared, STOP) === 0) {
    const commits = Atomics.load(shared, COMMITS);
    if (commits === seen) {
      Atomics.wait(shared, COMMITS, commits);
      continue;
    }
    const due = lastStart + data.intervalMs - performance.now();
    if (due > 0) {
      Atomics.wait(shared, STOP, 0, due);
      continue;
    }
    lastStart = performance.now();
    const row = checkpoint.get();
    const durationMs = performance.now() - lastStart;
    const busy = Number(row?.busy) !== 0;
    if (data.report) {
      post({
        type: "checkpointed",
        busy,
        walFrames: Number(row?.log),
        backfilledFrames: Number(row?.checkpointed),
        durationMs,
        commits,
      });
    }
    if (busy) {
      // The store's connection is finishing a checkpoint (wal-checkpointer.ts): try again soon,
      // as the commits it covered may not all be in the database yet.
      Atomics.wait(shared, STOP, 0, Math.max(data.intervalMs, BUSY_RETRY_MS));
    } else {
      seen = commits;
      Atomics.store(shared, WAL_FRAMES, Number(row?.log));
    }
  }
} catch (error) {
  post({ type: "failed", message: errorMessage(error) });
} finally {
  // The store's connection is still open, so this close does not checkpoint or remove the WAL.
  try {
    db?.close();
  } catch {
    // Nothing more to release.
  }
}
