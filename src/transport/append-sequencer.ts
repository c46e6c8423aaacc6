/**
 * Orders the BidiAppends of one request id by `append_seqno` (docs/protocol.md §1.4): seqnos
 * start at 0 and grow by one; appends are applied strictly in that order, one at a time.
 *
 * - An append whose seqno is next is applied at once.
 * - One that arrives early waits for the gap to fill, for at most `gapTimeoutMs`, and is refused
 *   at once if it is more than `maxAhead` ahead (a bound on memory).
 * - One whose seqno was already applied, is being applied, or is already waiting is a repeat
 *   (`stale`): the caller acknowledges it without applying it again.
 */
import { withGetters } from "../llm/index.ts";

export interface AppendSequencer {
  /**
   * Resolves `apply` when it is this append's turn (the caller must then call `leave(seqno)`,
   * whatever happens), or `stale` for a repeat. Rejects with `SequenceGapError`.
   */
  enter(seqno: number): Promise<"apply" | "stale">;
  leave(seqno: number): void;
  /** The next seqno expected. */
  readonly next: number;
  /**
   * `enter`, `apply` in this append's turn (nothing for a repeat), `leave`; and the outcome of the
   * last `remembered` appends is kept, so a repeat of a recent append gets the original's outcome
   * (not an early "ok"). A rejection of `enter` becomes `enterFailed(error)`.
   */
  run(
    seqno: number,
    apply: () => Promise<void>,
    enterFailed: (error: unknown) => unknown,
  ): Promise<void>;
  /** Rejects every waiting append (e.g. when the request is discarded). */
  close(reason: string): void;
  /**
   * Forgets the expected seqno: the next append to arrive sets it. For a stream picked up after a
   * restart, whose earlier appends went to the previous process.
   */
  resync(): void;
}

export class SequenceGapError extends Error {
  override readonly name = "SequenceGapError";
  readonly seqno: number;
  readonly expected: number;
  constructor(seqno: number, expected: number, detail: string) {
    super(`append_seqno ${seqno} cannot be applied: ${detail} (next expected: ${expected})`);
    this.seqno = seqno;
    this.expected = expected;
  }
}

export interface AppendSequencerOptions {
  readonly gapTimeoutMs: number;
  readonly maxAhead: number;
  /** How many recent appends keep their outcome for repeats (`run`); default 64. */
  readonly remembered?: number;
}

export function createAppendSequencer(options: AppendSequencerOptions): AppendSequencer {
  let next = 0;
  let synced = true;
  let inFlight: number | null = null;
  /** Appends that came ahead of their turn; made on first use (issue #19, heap per stream). */
  let waiting:
    | Map<
        number,
        { resolve: (value: "apply") => void; reject: (error: Error) => void; timer: NodeJS.Timeout }
      >
    | undefined;

  const outcomes = new Map<number, Promise<void>>();
  const remembered = options.remembered ?? 64;

  const admit = (seqno: number): void => {
    const waiter = waiting?.get(seqno);
    if (waiter === undefined) return;
    waiting?.delete(seqno);
    clearTimeout(waiter.timer);
    inFlight = seqno;
    waiter.resolve("apply");
  };

  const members: Omit<AppendSequencer, "next"> = {
    run(seqno, apply, enterFailed) {
      const known = outcomes.get(seqno);
      if (known !== undefined) return known;
      const outcome = (async () => {
        let verdict: "apply" | "stale";
        try {
          verdict = await members.enter(seqno);
        } catch (error) {
          throw enterFailed(error);
        }
        if (verdict === "stale") return;
        try {
          await apply();
        } finally {
          members.leave(seqno);
        }
      })();
      outcomes.set(seqno, outcome);
      outcome.catch(() => {});
      if (outcomes.size > remembered) {
        const oldest = outcomes.keys().next().value;
        if (oldest !== undefined) outcomes.delete(oldest);
      }
      return outcome;
    },
    enter(seqno) {
      if (!Number.isSafeInteger(seqno) || seqno < 0) {
        return Promise.reject(new SequenceGapError(seqno, next, "not a valid seqno"));
      }
      if (!synced && inFlight === null && (waiting?.size ?? 0) === 0) {
        synced = true;
        next = seqno;
      }
      if (seqno < next || seqno === inFlight || waiting?.has(seqno) === true) {
        return Promise.resolve("stale");
      }
      if (seqno === next && inFlight === null) {
        inFlight = seqno;
        return Promise.resolve("apply");
      }
      if (seqno - next > options.maxAhead) {
        return Promise.reject(
          new SequenceGapError(seqno, next, `more than ${options.maxAhead} ahead`),
        );
      }
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting?.delete(seqno);
          reject(
            new SequenceGapError(
              seqno,
              next,
              `the appends before it did not arrive within ${options.gapTimeoutMs} ms`,
            ),
          );
        }, options.gapTimeoutMs);
        timer.unref?.();
        waiting ??= new Map();
        waiting.set(seqno, { resolve, reject, timer });
      });
    },
    leave(seqno) {
      if (seqno !== inFlight) return;
      inFlight = null;
      next = seqno + 1;
      admit(next);
    },
    resync() {
      synced = false;
    },
    close(reason) {
      for (const [seqno, waiter] of waiting ?? []) {
        clearTimeout(waiter.timer);
        waiter.reject(new SequenceGapError(seqno, next, reason));
      }
      waiting?.clear();
    },
  };
  // Not a literal `get`: that would make each sequencer a dictionary-mode object (issue #19).
  return withGetters(members, { next: () => next });
}
