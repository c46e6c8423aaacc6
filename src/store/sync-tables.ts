/**
 * Lifts a synchronous backend (SQLite through `node:sqlite`, the in-memory maps) to the
 * promise-returning `Tables` the store logic calls, and runs its transactions one at a time: the
 * logic awaits between table operations, so without the queue a second transaction could begin
 * on the same connection while the first is still open.
 */
import type { SyncTables, Tables } from "./tables.ts";

export function toAsyncTables(tables: SyncTables): Tables {
  const lifted: Record<string, unknown> = {};
  for (const name of Object.keys(tables) as (keyof SyncTables)[]) {
    const operation = tables[name] as (...args: unknown[]) => unknown;
    lifted[name] = (...args: unknown[]) => {
      try {
        return Promise.resolve(operation.apply(tables, args));
      } catch (error) {
        return Promise.reject(error);
      }
    };
  }
  return lifted as Tables;
}

/** Runs the functions given to it one after another, each after the previous one settled. */
export function createSerialQueue(): <T>(task: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(task: () => Promise<T>): Promise<T> => {
    const run = tail.then(task, task);
    tail = run.catch(() => undefined);
    return run;
  };
}
