/**
 * The worker side of convert-in-worker.ts: converts each body the parent posts with toReadable
 * and posts the result back, one job at a time. Any exception (a stack overflow included)
 * becomes an `unsupported` result, so the parent sees one message per job or the worker's death.
 */
import { parentPort } from "node:worker_threads";
import { errorMessage } from "../../errors/error-message.ts";
import { type Readable, toReadable } from "./to-readable.ts";

/** What the parent posts; `body` is transferred, not copied. */
export interface WorkerJob {
  readonly body: Uint8Array;
  readonly contentType: string;
  readonly url: string;
  readonly maxChars: number;
}

parentPort?.on("message", async (job: WorkerJob) => {
  let result: Readable;
  try {
    const body = Buffer.from(job.body.buffer, job.body.byteOffset, job.body.byteLength);
    result = await toReadable(body, job.contentType, job.url, job.maxChars);
  } catch (error) {
    const reason = errorMessage(error);
    result = { type: "unsupported", message: `the page could not be converted (${reason})` };
  }
  parentPort?.postMessage(result);
});
