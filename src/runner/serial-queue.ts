/**
 * Runs tasks one at a time per key, in submission order; different keys run concurrently.
 * The runner uses one key per conversation, so that inputs of a conversation enter `transition`
 * strictly one at a time (docs/design.md §5). A failing task does not stop the tasks queued after
 * it.
 *
 * `idle(key)` tells a caller that nothing of `key` is queued or running, so that synchronous work
 * it does now cannot come between two tasks of `key` (model-call.ts applies a streamed delta that
 * way, without a trip through the queue, issue #19). A key counts as busy until a few microtasks
 * after its last task settled: erring that way only sends work through the queue.
 */
export interface SerialQueue {
  run<T>(key: string, task: () => Promise<T>): Promise<T>;
  /** True when no task of `key` is queued or running. */
  idle(key: string): boolean;
  /** Number of keys with queued or running tasks. */
  readonly size: number;
}

export function createSerialQueue(): SerialQueue {
  const tails = new Map<string, Promise<unknown>>();
  return {
    run<T>(key: string, task: () => Promise<T>): Promise<T> {
      const previous = tails.get(key) ?? Promise.resolve();
      const result = previous.then(task, task);
      const tail = result.then(
        () => undefined,
        () => undefined,
      );
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return result;
    },
    idle(key: string): boolean {
      return !tails.has(key);
    },
    get size() {
      return tails.size;
    },
  };
}
