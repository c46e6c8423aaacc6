/**
 * Tool de-duplication (docs/design.md §8): a client operation that completed returns its saved
 * result, one that is running in this process is awaited, and one never run is run once.
 *
 * The order of writes follows docs/design.md §7: the operation is saved (`planned`) and marked
 * `sent` before `run` is called, and its result is saved (`completed`) before it is returned.
 *
 * After a crash, an operation found `planned` has never been sent and is simply run. One found
 * `sent` has no runner in the new process and its outcome is unknown (the client may have run
 * it): `run` is called with `outcomeUnknown: true`, and the caller must not blindly send it again
 * — it may accept a late result, send it again only if that is harmless, or produce a result
 * saying the outcome is unknown (the Cursor transport does all three, by tool). Only the first
 * saved result is ever returned, and history gets it once. If `run` throws, the operation stays
 * `sent`, every waiter gets the error, and a later `runOnce` calls `run` again (outcome unknown).
 */
import type { ClientOperationInput, ClientOperationRecord, Store } from "./types.ts";

/** An operation to run; its status is managed by the runner. */
export type OperationToRun = Omit<ClientOperationInput, "status" | "result">;

/** How this attempt at an operation relates to earlier ones. */
export interface OperationAttempt {
  /**
   * The operation was marked `sent` before, by an attempt that is gone (a crashed process, or a
   * `run` that threw) and saved no result: it may have run, or may still be running.
   */
  readonly outcomeUnknown: boolean;
}

/**
 * Runs the operation against the client. It receives the saved record, whose `request` is the
 * one to send (the first one saved for this operation id), and returns the result (plain JSON).
 */
export type RunOperation = (
  operation: ClientOperationRecord,
  attempt: OperationAttempt,
) => Promise<unknown>;

export interface OperationRunner {
  /**
   * The operation's final record: `completed` with its result, or `canceled` if the operation was
   * canceled (then `run` is not called, or its result is not saved).
   */
  runOnce(operation: OperationToRun, run: RunOperation): Promise<ClientOperationRecord>;
}

/** One runner per store per process: "running" means running through this runner. */
export function createOperationRunner(store: Store): OperationRunner {
  const running = new Map<string, Promise<ClientOperationRecord>>();

  async function runFromStore(
    operation: OperationToRun,
    run: RunOperation,
  ): Promise<ClientOperationRecord> {
    const saved = await store.saveClientOperation({ ...operation, status: "planned" });
    if (saved.status === "completed" || saved.status === "canceled") return saved;
    const outcomeUnknown = saved.status === "sent";
    const sent = await store.setClientOperationStatus(operation.operationID, "sent");
    if (sent.status !== "sent") return sent;
    const result = await run(sent, { outcomeUnknown });
    return store.setClientOperationStatus(operation.operationID, "completed", result);
  }

  return {
    runOnce(operation, run) {
      const current = running.get(operation.operationID);
      if (current !== undefined) return current;
      const promise = runFromStore(operation, run).finally(() => {
        running.delete(operation.operationID);
      });
      running.set(operation.operationID, promise);
      return promise;
    },
  };
}
