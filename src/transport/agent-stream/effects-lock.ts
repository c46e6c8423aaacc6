/**
 * One at a time for the subagents' tool calls with effects on one stream (README "Subagents",
 * docs/design.md §5 "writes never race"). Within one conversation the loop never lets a call with
 * effects run beside another (src/loop/tool-batch.ts); sibling subagents are separate
 * conversations, so the rule across them is kept here, where their calls meet: the parent's
 * stream. A call with effects (write, edit, delete, shell, an MCP tool) waits until no other
 * subagent's call with effects is open; reads do not take the lock and run in parallel.
 *
 * Waiters are served in arrival order. A waiter can be dropped before its turn (its subagent was
 * canceled): it is never started.
 */
export interface EffectsLock {
  /**
   * Resolves when `operationID` holds the lock (at once when nobody does); rejects when the
   * waiter was dropped. `onWait` is called once when the call has to wait.
   */
  acquire(operationID: string, onWait: (holder: string) => void): Promise<void>;
  /** The holder lets go (the next waiter gets the lock), or a waiter is dropped with `reason`. */
  release(operationID: string, reason: string): void;
}

interface Waiter {
  readonly operationID: string;
  resolve(): void;
  reject(error: Error): void;
}

export function createEffectsLock(): EffectsLock {
  let holder: string | null = null;
  const queue: Waiter[] = [];
  return {
    acquire(operationID, onWait) {
      if (holder === null || holder === operationID) {
        holder = operationID;
        return Promise.resolve();
      }
      onWait(holder);
      return new Promise((resolve, reject) => {
        queue.push({ operationID, resolve, reject });
      });
    },
    release(operationID, reason) {
      if (holder !== operationID) {
        const at = queue.findIndex((waiter) => waiter.operationID === operationID);
        if (at >= 0) queue.splice(at, 1)[0]?.reject(new Error(reason));
        return;
      }
      const next = queue.shift();
      holder = next?.operationID ?? null;
      next?.resolve();
    },
  };
}
