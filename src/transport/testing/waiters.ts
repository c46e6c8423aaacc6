/**
 * Event-driven waiting: a waiter re-checks its probe whenever the owner reports a change, and
 * fails with a message naming what it waited for when it times out or the source ends.
 */
export interface Waiters {
  /** Resolves with the first non-undefined value of `probe`, checked now and on every change. */
  until<T>(probe: () => T | undefined, what: string, timeoutMs: number): Promise<T>;
  /** Re-checks every waiter. */
  changed(): void;
  /** Re-checks once more, then fails every waiter left with `reason`. */
  end(reason: (what: string) => Error): void;
}

interface Waiter {
  readonly check: () => boolean;
  readonly fail: (error: Error) => void;
  readonly what: string;
}

export function createWaiters(): Waiters {
  const waiters = new Set<Waiter>();
  let ended: ((what: string) => Error) | null = null;

  const changed = (): void => {
    for (const waiter of [...waiters]) {
      if (waiter.check()) waiters.delete(waiter);
    }
  };

  return {
    until<T>(probe: () => T | undefined, what: string, timeoutMs: number): Promise<T> {
      const first = probe();
      if (first !== undefined) return Promise.resolve(first);
      if (ended !== null) return Promise.reject(ended(what));
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
        }, timeoutMs);
        const waiter: Waiter = {
          what,
          check: () => {
            const value = probe();
            if (value === undefined) return false;
            clearTimeout(timer);
            resolve(value);
            return true;
          },
          fail: (error) => {
            clearTimeout(timer);
            reject(error);
          },
        };
        waiters.add(waiter);
      });
    },
    changed,
    end(reason) {
      changed();
      ended = reason;
      for (const waiter of [...waiters]) {
        waiters.delete(waiter);
        waiter.fail(reason(waiter.what));
      }
    },
  };
}
