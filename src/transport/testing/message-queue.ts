/**
 * An async iterable fed by `push`, for the request side of the HTTP/2 bidi `Run`: each push
 * resolves once the transport has taken the message; `close` ends the iteration and fails the
 * pushes not taken yet.
 */
export interface MessageQueue<T> extends AsyncIterable<T> {
  push(item: T): Promise<void>;
  close(): void;
}

interface Pending<T> {
  readonly item: T;
  readonly taken: () => void;
  readonly failed: (error: Error) => void;
}

export function createMessageQueue<T>(): MessageQueue<T> {
  const pending: Pending<T>[] = [];
  let closed = false;
  let wake: (() => void) | null = null;

  const notify = (): void => {
    const resume = wake;
    wake = null;
    resume?.();
  };

  return {
    push(item: T): Promise<void> {
      if (closed) return Promise.reject(new Error("the request stream is closed"));
      return new Promise<void>((taken, failed) => {
        pending.push({ item, taken, failed });
        notify();
      });
    },
    close(): void {
      if (closed) return;
      closed = true;
      for (const entry of pending.splice(0)) entry.failed(new Error("the request stream closed"));
      notify();
    },
    async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
      try {
        while (true) {
          const next = pending.shift();
          if (next !== undefined) {
            next.taken();
            yield next.item;
            continue;
          }
          if (closed) return;
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
      } finally {
        closed = true;
        for (const entry of pending.splice(0)) {
          entry.failed(new Error("the request stream closed"));
        }
      }
    },
  };
}
