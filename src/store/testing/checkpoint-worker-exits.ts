/**
 * A stand-in for the WAL checkpoint worker (wal-checkpoint-worker.ts) that dies: it waits for the
 * store's first commit signal, then exits with code 3. For the tests of the store's fallback.
 */
import { workerData } from "node:worker_threads";
import { type CheckpointWorkerData, COMMITS } from "../wal-checkpointer.ts";

const data = workerData as CheckpointWorkerData;
Atomics.wait(new Int32Array(data.shared), COMMITS, 0);
process.exit(3);
