/**
 * Runs the costly conversions of toReadable (HTML → Markdown, PDF → text) in a worker thread,
 * so a page crafted to be slow or huge to convert (deep nesting, content streams that inflate to
 * gigabytes) cannot block the server's event loop or exhaust its memory. Each conversion gets a
 * fresh worker with a heap cap (`resourceLimits`) and a wall-clock deadline; the worker is
 * terminated on the deadline and when the caller's signal aborts. At most `concurrency`
 * conversions run at once, the others wait their turn (the deadline starts with the worker).
 * Cheap types (text, JSON) are converted on the calling thread. Never throws.
 */
import { Worker } from "node:worker_threads";
import type { WorkerJob } from "./readable-worker.ts";
import { isCostlyType, type Readable, toMediaType, toReadable } from "./to-readable.ts";

export interface ConvertLimits {
  /** Wall-clock time one conversion may take. */
  readonly timeoutMs: number;
  /** The worker's JavaScript heap cap (V8's old generation), in MiB. */
  readonly heapMb: number;
  /** How many conversions may run at once. */
  readonly concurrency: number;
}

export interface ConvertJob {
  readonly body: Buffer;
  readonly contentType: string;
  readonly url: string;
  readonly maxChars: number;
}

export type Convert = (job: ConvertJob, signal?: AbortSignal) => Promise<Readable>;

const WORKER_URL = new URL("./readable-worker.ts", import.meta.url);

export function createConverter(limits: ConvertLimits): Convert {
  let running = 0;
  const waiting: (() => void)[] = [];

  /** Whether a slot was taken (false: the signal aborted while waiting). */
  const acquire = (signal: AbortSignal | undefined): Promise<boolean> => {
    if (running < limits.concurrency) {
      running += 1;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const go = (): void => {
        signal?.removeEventListener("abort", quit);
        running += 1;
        resolve(true);
      };
      const quit = (): void => {
        const index = waiting.indexOf(go);
        if (index >= 0) waiting.splice(index, 1);
        resolve(false);
      };
      waiting.push(go);
      signal?.addEventListener("abort", quit, { once: true });
    });
  };
  const release = (): void => {
    running -= 1;
    waiting.shift()?.();
  };

  return async (job, signal) => {
    const mediaType = toMediaType(job.body, job.contentType);
    if (!isCostlyType(mediaType)) {
      return toReadable(job.body, job.contentType, job.url, job.maxChars);
    }
    const aborted = (): boolean => signal?.aborted === true;
    if (aborted() || !(await acquire(signal))) return CANCELED;
    try {
      // The signal may have aborted while the slot was being handed over.
      if (aborted()) return CANCELED;
      return await runWorker(job, limits, signal);
    } finally {
      release();
    }
  };
}

const CANCELED: Readable = { type: "unsupported", message: "the fetch was canceled" };

/** One conversion in a fresh worker; resolves once the worker has exited. */
function runWorker(
  job: ConvertJob,
  limits: ConvertLimits,
  signal: AbortSignal | undefined,
): Promise<Readable> {
  const body = new Uint8Array(job.body);
  const data: WorkerJob = {
    body,
    contentType: job.contentType,
    url: job.url,
    maxChars: job.maxChars,
  };
  const worker = new Worker(WORKER_URL, {
    workerData: data,
    transferList: [body.buffer],
    resourceLimits: { maxOldGenerationSizeMb: limits.heapMb },
    // pdf.js prints warnings about malformed files; they are dropped, not the server's output.
    stdout: true,
    stderr: true,
  });
  worker.stdout.resume();
  worker.stderr.resume();
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: Readable): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      worker.terminate().then(
        () => resolve(result),
        () => resolve(result),
      );
    };
    const onAbort = (): void => finish(CANCELED);
    const timer = setTimeout(
      () =>
        finish({
          type: "unsupported",
          message: `the page took too long to convert (more than ${Number((limits.timeoutMs / 1000).toFixed(1))} s); it was not read`,
        }),
      limits.timeoutMs,
    );
    signal?.addEventListener("abort", onAbort, { once: true });
    worker.once("message", (result: Readable) => finish(result));
    worker.once("error", (error: NodeJS.ErrnoException) =>
      finish(
        error.code === "ERR_WORKER_OUT_OF_MEMORY"
          ? {
              type: "unsupported",
              message: `the page took too much memory to convert (more than ${limits.heapMb} MiB); it was not read`,
            }
          : { type: "unsupported", message: `the page could not be converted (${error.message})` },
      ),
    );
    worker.once("exit", () =>
      finish({
        type: "unsupported",
        message: "the page could not be converted (the converter stopped)",
      }),
    );
  });
}
