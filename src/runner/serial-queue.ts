/**
 * Runs tasks one at a time per key, in submission order; different keys run concurrently.
 * The runner uses one key per conversation, so that inputs of a conversation enter `transition`
 * strictly one at a time (docs/design.md §5). A failing task does not stop the tasks queued after
 * it.
 */
export interface SerialQueue {
  run<T>(key: string, task: () => Promise<T>): Promise<T>;
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
    get size() {
      return tails.size;
    },
  };
}
