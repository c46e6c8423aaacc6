/**
 * Runs the costly conversions of toReadable (HTML → Markdown, PDF → text) in a worker thread,
 * so a page crafted to be slow or huge to convert (deep nesting, content streams that inflate to
 * gigabytes) cannot block the server's event loop or exhaust its memory. Workers have a heap cap
 * (`resourceLimits`) and each conversion a wall-clock deadline; the worker is terminated on the
 * deadline, when it runs out of memory and when the caller's signal aborts. At most
 * `concurrency` conversions run at once, the others wait their turn (the deadline starts when
 * the job is handed to a worker). A worker that finished its job is kept for the next one (a
 * fresh one takes about 0.3 s to load the libraries) until it has been idle for `IDLE_MS`.
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
/** How long an idle worker is kept for the next conversion. */
const IDLE_MS = 30_000;

export function createConverter(limits: ConvertLimits): Convert {
  let running = 0;
  const waiting: (() => void)[] = [];
  const idle: { worker: Worker; timer: NodeJS.Timeout; gone: () => void }[] = [];

  const take = (): Worker => {
    const kept = idle.pop();
    if (kept === undefined) return spawn(limits);
    clearTimeout(kept.timer);
    kept.worker.off("exit", kept.gone);
    kept.worker.ref();
    return kept.worker;
  };
  const keep = (worker: Worker): void => {
    // An idle worker must not keep the process alive.
    worker.unref();
    const gone = (): void => {
      const index = idle.findIndex((entry) => entry.worker === worker);
      if (index >= 0) idle.splice(index, 1);
    };
    const timer = setTimeout(() => {
      gone();
      void worker.terminate();
    }, IDLE_MS);
    timer.unref();
    worker.once("exit", gone);
    idle.push({ worker, timer, gone });
  };

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
      const worker = take();
      const { result, reusable } = await runJob(worker, job, limits, signal);
      if (reusable) keep(worker);
      else await worker.terminate().catch(() => 0);
      return result;
    } finally {
      release();
    }
  };
}

const CANCELED: Readable = { type: "unsupported", message: "the fetch was canceled" };

function spawn(limits: ConvertLimits): Worker {
  // Not `stdout: true`: a piped output stream keeps the process alive even when unref'd
  // (Node 24.21); what the worker prints goes to this process's output, as before.
  const worker = new Worker(WORKER_URL, {
    resourceLimits: { maxOldGenerationSizeMb: limits.heapMb },
  });
  // An 'error' between two jobs' listeners (e.g. after a deadline, before the termination)
  // must not become an uncaught exception of the server; runJob reports errors during a job.
  worker.on("error", () => {});
  return worker;
}

/**
 * One conversion on `worker`. `reusable`: the worker answered and may take another job;
 * otherwise (deadline, cancel, out of memory, death) the caller terminates it.
 */
function runJob(
  worker: Worker,
  job: ConvertJob,
  limits: ConvertLimits,
  signal: AbortSignal | undefined,
): Promise<{ result: Readable; reusable: boolean }> {
  const body = new Uint8Array(job.body);
  const data: WorkerJob = {
    body,
    contentType: job.contentType,
    url: job.url,
    maxChars: job.maxChars,
  };
  return new Promise((resolve) => {
    const finish = (result: Readable, reusable: boolean): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      worker.off("message", onMessage);
      worker.off("error", onError);
      worker.off("exit", onExit);
      resolve({ result, reusable });
    };
    const onAbort = (): void => finish(CANCELED, false);
    const onMessage = (result: Readable): void => finish(result, true);
    const onError = (error: NodeJS.ErrnoException): void =>
      finish(
        error.code === "ERR_WORKER_OUT_OF_MEMORY"
          ? {
              type: "unsupported",
              message: `the page took too much memory to convert (more than ${limits.heapMb} MiB); it was not read`,
            }
          : { type: "unsupported", message: `the page could not be converted (${error.message})` },
        false,
      );
    const onExit = (): void =>
      finish(
        { type: "unsupported", message: "the page could not be converted (the converter stopped)" },
        false,
      );
    const timer = setTimeout(
      () =>
        finish(
          {
            type: "unsupported",
            message: `the page took too long to convert (more than ${Number((limits.timeoutMs / 1000).toFixed(1))} s); it was not read`,
          },
          false,
        ),
      limits.timeoutMs,
    );
    signal?.addEventListener("abort", onAbort, { once: true });
    worker.on("message", onMessage);
    worker.on("error", onError);
    worker.on("exit", onExit);
    worker.postMessage(data, [body.buffer]);
  });
}
