/**
 * WAL checkpoints off the commit path (the server's SQLite store; src/store/README.md "WAL
 * checkpoints").
 *
 * `node:sqlite` is synchronous, so whatever a commit does blocks the event loop of every stream in
 * the process. SQLite's automatic checkpoint (`wal_autocheckpoint`, every 1,000 WAL pages) runs
 * inside the commit that crosses the threshold: it copies the WAL into the database and fsyncs it,
 * tens of milliseconds with large run requests — on the turn-start commit that must be durable
 * before the model request is sent (docs/design.md §7). Here the store's connection does not
 * checkpoint by itself; a worker thread with its own connection to the same file runs
 * `pragma wal_checkpoint(PASSIVE)` after commits (at most once per `intervalMs`). PASSIVE never
 * takes the writer lock and never waits for readers, so it cannot block a commit (RESTART and
 * TRUNCATE take the writer lock, and the store's `begin immediate` would then wait for it in
 * SQLite's busy handler, synchronously). Durability is unchanged: every commit is still fsynced
 * into the WAL (`synchronous = FULL`), and a checkpoint only copies committed pages, whoever runs
 * it (SQLite's WAL supports any number of connections, in any thread or process).
 *
 * The WAL restarts from its beginning only at a write that begins when all of it is in the
 * database; a checkpoint running beside a steady stream of commits never leaves it so (the next
 * commit has always begun before it ends), and the file would grow without end. So once the
 * worker's last checkpoint saw `restartPages` (1,000, SQLite's threshold) or more, a commit runs a
 * PASSIVE checkpoint itself: it copies only what the worker has not (the commits since), and the
 * next write restarts the WAL. If the worker holds the checkpoint lock, it returns at once and the
 * next commit tries again.
 *
 * When the worker fails to start, throws or dies, the store's connection checkpoints on commit
 * again (`wal_autocheckpoint = 1000`: exactly the behaviour without a worker), and a
 * `worker_failed` warning says so. Readers holding an old snapshot stop any checkpoint at their
 * snapshot, SQLite's own included: past `maxWalBytes` a `wal_over_limit` warning says so;
 * `journal_size_limit` (a quarter of it) shrinks the file again once the WAL restarts.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { Worker } from "node:worker_threads";
import { errorMessage } from "../errors/error-message.ts";

/** What the checkpointer reports (for logs and tests). */
export type CheckpointEvent =
  | {
      /** The worker ran a checkpoint: the WAL's frames, those copied into the database. */
      readonly type: "checkpointed";
      readonly walFrames: number;
      readonly backfilledFrames: number;
      /** Another connection held the checkpoint lock: nothing was done this time. */
      readonly busy: boolean;
      readonly durationMs: number;
      /** The commits signalled before this checkpoint began (all of them are in its WAL). */
      readonly commits: number;
    }
  | {
      /** The worker could not run; the store's connection checkpoints on commit again. */
      readonly type: "worker_failed";
      readonly message: string;
    }
  | {
      /** The WAL passed `maxWalBytes`: commits checkpoint themselves until it is under again. */
      readonly type: "wal_over_limit";
      readonly walBytes: number;
    };

export interface BackgroundCheckpointOptions {
  /** The least time between the starts of two of the worker's checkpoints, in ms. Default 25. */
  readonly intervalMs?: number;
  /**
   * The WAL's size, in pages, from which a commit finishes the worker's checkpoint (see above).
   * Default 1,000, SQLite's automatic checkpoint.
   */
  readonly restartPages?: number;
  /** The WAL size past which a `wal_over_limit` warning is given. Default 64 MiB. */
  readonly maxWalBytes?: number;
  /** Called on the store's thread for each event (tests, diagnostics). */
  readonly onEvent?: (event: CheckpointEvent) => void;
  /** Told when the worker fails or falls behind. Default: a process warning. */
  readonly onWarning?: (message: string) => void;
  /** The worker's entry file (tests replace it with one that fails). */
  readonly workerURL?: URL;
}

export interface WalCheckpointer {
  /** Called after each committed write transaction, on the store's connection. Never throws. */
  afterCommit(): void;
  /** Stops the worker and resolves once its connection is closed. */
  stop(): Promise<void>;
}

/** Indexes into the shared Int32Array. */
export const COMMITS = 0;
export const STOP = 1;
/** The WAL's frames at the worker's last checkpoint (it stores them; a commit may reset them). */
export const WAL_FRAMES = 2;

/** What the worker gets as `workerData`. */
export interface CheckpointWorkerData {
  readonly location: string;
  readonly shared: SharedArrayBuffer;
  readonly intervalMs: number;
  readonly report: boolean;
}

/** What the worker posts to the store's thread: its checkpoints, as reported, or its failure. */
export type CheckpointWorkerMessage =
  | Extract<CheckpointEvent, { readonly type: "checkpointed" }>
  | { readonly type: "failed"; readonly message: string };

export const DEFAULT_INTERVAL_MS = 25;
export const DEFAULT_MAX_WAL_BYTES = 64 * 1024 * 1024;
/** SQLite's default `wal_autocheckpoint`, restored when the worker cannot run. */
const SQLITE_AUTOCHECKPOINT_PAGES = 1000;

/**
 * Turns the automatic checkpoint of `db` (the store's open connection to `location`, in WAL mode)
 * off and starts the worker that checkpoints instead.
 */
export function startWalCheckpointer(
  db: DatabaseSync,
  location: string,
  options: BackgroundCheckpointOptions = {},
): WalCheckpointer {
  const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
  const maxWalBytes = options.maxWalBytes ?? DEFAULT_MAX_WAL_BYTES;
  const warn =
    options.onWarning ??
    ((message: string) => process.emitWarning(message, { code: "CURSOR_BYOK_WAL_CHECKPOINT" }));
  const emit = (event: CheckpointEvent): void => {
    options.onEvent?.(event);
    if (event.type !== "checkpointed") warn(toWarning(location, event));
  };
  const restartPages = options.restartPages ?? SQLITE_AUTOCHECKPOINT_PAGES;
  const pageSize = Number(db.prepare("pragma page_size").get()?.page_size);
  const shared = new Int32Array(new SharedArrayBuffer(4 * Int32Array.BYTES_PER_ELEMENT));
  let checkpointHere: StatementSync | undefined;
  let mode: "worker" | "on_commit" = "worker";
  let stopping = false;
  let overLimit = false;
  let failure: string | undefined;

  db.exec(`pragma journal_size_limit = ${Math.floor(maxWalBytes / 4)}`);
  db.exec("pragma wal_autocheckpoint = 0");

  const fallBack = (message: string): void => {
    if (mode === "on_commit") return;
    mode = "on_commit";
    if (db.isOpen) db.exec(`pragma wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`);
    emit({ type: "worker_failed", message });
  };

  let exited: Promise<void>;
  let worker: Worker | undefined;
  try {
    const data: CheckpointWorkerData = {
      location,
      shared: shared.buffer as SharedArrayBuffer,
      intervalMs,
      report: options.onEvent !== undefined,
    };
    worker = new Worker(
      options.workerURL ?? new URL("./wal-checkpoint-worker.ts", import.meta.url),
      {
        workerData: data,
        stdout: false,
        stderr: false,
      },
    );
    const running = worker;
    running.on("message", (message: CheckpointWorkerMessage) => {
      if (message.type === "failed") failure = message.message;
      else emit(message);
    });
    running.on("error", (error) => {
      failure = errorMessage(error);
    });
    exited = new Promise((resolve) => {
      running.once("exit", (code) => {
        if (!stopping) {
          fallBack(
            `the WAL checkpoint worker stopped (${failure ?? `exit code ${code}`}); ` +
              "checkpoints run on commit again",
          );
        }
        resolve();
      });
    });
    // The worker must not keep the process alive on its own (a server exits when it is done).
    // After the listeners: adding a "message" listener refs the worker's port again.
    running.unref();
  } catch (error) {
    fallBack(
      `the WAL checkpoint worker could not start (${errorMessage(error)}); checkpoints run on commit`,
    );
    exited = Promise.resolve();
  }

  return {
    afterCommit() {
      if (mode !== "worker") return;
      try {
        Atomics.add(shared, COMMITS, 1);
        Atomics.notify(shared, COMMITS);
        // The WAL's size at the worker's last checkpoint, all of it backfilled but for what the
        // commits since then wrote.
        if (Atomics.load(shared, WAL_FRAMES) < restartPages) return;
        // Copy that remainder here so the next write restarts the WAL from its start: see above.
        checkpointHere ??= db.prepare("pragma wal_checkpoint(PASSIVE)");
        const row = checkpointHere.get();
        const walFrames = Number(row?.log);
        if (Number(row?.busy) !== 0) return; // the worker is checkpointing: the next commit
        if (Number(row?.checkpointed) === walFrames) {
          Atomics.store(shared, WAL_FRAMES, 0);
          overLimit = false;
        } else if (!overLimit && walFrames * (pageSize + 24) > maxWalBytes) {
          // Readers hold old snapshots: no checkpoint, SQLite's own included, can restart it.
          overLimit = true;
          emit({ type: "wal_over_limit", walBytes: walFrames * (pageSize + 24) });
        }
      } catch {
        // The commit stands (as with SQLite's automatic checkpoint); the next commit tries again.
      }
    },
    async stop() {
      if (stopping) return exited;
      stopping = true;
      worker?.ref();
      Atomics.store(shared, STOP, 1);
      // Changing COMMITS too wakes a worker about to wait on it (it waits on an unchanged value).
      Atomics.add(shared, COMMITS, 1);
      Atomics.notify(shared, COMMITS);
      Atomics.notify(shared, STOP);
      await exited;
    },
  };
}

function toWarning(location: string, event: CheckpointEvent): string {
  switch (event.type) {
    case "worker_failed":
      return `${location}: ${event.message}`;
    case "wal_over_limit":
      return (
        `${location}: the write-ahead log is ${event.walBytes} bytes, more than the background ` +
        "checkpoints keep up with; commits checkpoint it themselves until it is smaller"
      );
    case "checkpointed":
      return `${location}: checkpointed`;
  }
}
