/**
 * The worker side of convert-in-worker.ts: converts the one body in `workerData` with
 * toReadable and posts the result back. Any exception (a stack overflow included) becomes an
 * `unsupported` result, so the parent sees one message or the worker's death.
 */
import { parentPort, workerData } from "node:worker_threads";
import { type Readable, toReadable } from "./to-readable.ts";

/** What the parent sends; `body` is transferred, not copied. */
export interface WorkerJob {
  readonly body: Uint8Array;
  readonly contentType: string;
  readonly url: string;
  readonly maxChars: number;
}

const job = workerData as WorkerJob;
let result: Readable;
try {
  const body = Buffer.from(job.body.buffer, job.body.byteOffset, job.body.byteLength);
  result = await toReadable(body, job.contentType, job.url, job.maxChars);
} catch (error) {
  const reason = error instanceof Error ? error.message : String(error);
  result = { type: "unsupported", message: `the page could not be converted (${reason})` };
}
parentPort?.postMessage(result);
