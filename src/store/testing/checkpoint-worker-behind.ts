/**
 * A stand-in for the WAL checkpoint worker (wal-checkpoint-worker.ts) that is always behind: it
 * reports a WAL of 1,000,000 frames and never checkpoints, until told to stop. For the tests of
 * the commits' own checkpoint (wal-checkpointer.ts `restartPages`). It posts one `busy` event
 * once it runs, so that a test can wait for it.
 */
import { parentPort, workerData } from "node:worker_threads";
import {
  type CheckpointWorkerData,
  type CheckpointWorkerMessage,
  STOP,
  WAL_FRAMES,
} from "../wal-checkpointer.ts";

const shared = new Int32Array((workerData as CheckpointWorkerData).shared);
Atomics.store(shared, WAL_FRAMES, 1_000_000);
const started: CheckpointWorkerMessage = {
  type: "checkpointed",
  busy: true,
  walFrames: -1,
  backfilledFrames: -1,
  durationMs: 0,
  commits: 0,
};
parentPort?.postMessage(started);
while (Atomics.load(shared, STOP) === 0) {
  Atomics.store(shared, WAL_FRAMES, 1_000_000);
  Atomics.wait(shared, STOP, 0, 5);
}
