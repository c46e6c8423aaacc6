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
import { withMethods } from "../llm/index.ts";

/**
 * Its members are methods shared by every instance: call them on the object, never pass them on
 * (bind or wrap in an arrow).
 */
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

/**
 * One request id's sequencer: a plain record of its state, whose prototype is `sequencerMethods`,
 * shared by every sequencer (issue #19: a factory of closures made ≈ 7 closures and their
 * context per open stream). `next` is its own data member.
 */
interface Sequencer {
  next: number;
  synced: boolean;
  inFlight: number | null;
  /** Appends that came ahead of their turn; made on first use (issue #19, heap per stream). */
  waiting: Map<number, Waiter> | undefined;
  /** The outcomes of the last `remembered` appends, by seqno, oldest first. */
  readonly outcomes: Map<number, Promise<void>>;
  readonly remembered: number;
  readonly gapTimeoutMs: number;
  readonly maxAhead: number;
}

interface Waiter {
  readonly resolve: (value: "apply") => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

export function createAppendSequencer(options: AppendSequencerOptions): AppendSequencer {
  const sequencer: Sequencer = {
    next: 0,
    synced: true,
    inFlight: null,
    waiting: undefined,
    outcomes: new Map(),
    remembered: options.remembered ?? 64,
    gapTimeoutMs: options.gapTimeoutMs,
    maxAhead: options.maxAhead,
  };
  return withMethods(sequencer, sequencerMethods);
}

/** The public methods, shared by every sequencer (`this` is the sequencer's record). */
const sequencerMethods: Omit<AppendSequencer, "next"> & ThisType<Sequencer & AppendSequencer> = {
  run(seqno, apply, enterFailed) {
    const outcomes = this.outcomes;
    const known = outcomes.get(seqno);
    if (known !== undefined) return known;
    const outcome = runInTurn(this, seqno, apply, enterFailed);
    outcomes.set(seqno, outcome);
    outcome.catch(() => {});
    if (outcomes.size > this.remembered) {
      const oldest = outcomes.keys().next().value;
      if (oldest !== undefined) outcomes.delete(oldest);
    }
    return outcome;
  },
  enter(seqno) {
    const next = this.next;
    if (!Number.isSafeInteger(seqno) || seqno < 0) {
      return Promise.reject(new SequenceGapError(seqno, next, "not a valid seqno"));
    }
    if (!this.synced && this.inFlight === null && (this.waiting?.size ?? 0) === 0) {
      this.synced = true;
      this.next = seqno;
    }
    if (seqno < this.next || seqno === this.inFlight || this.waiting?.has(seqno) === true) {
      return Promise.resolve("stale");
    }
    if (seqno === this.next && this.inFlight === null) {
      this.inFlight = seqno;
      return Promise.resolve("apply");
    }
    if (seqno - this.next > this.maxAhead) {
      return Promise.reject(
        new SequenceGapError(seqno, this.next, `more than ${this.maxAhead} ahead`),
      );
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting?.delete(seqno);
        reject(
          new SequenceGapError(
            seqno,
            this.next,
            `the appends before it did not arrive within ${this.gapTimeoutMs} ms`,
          ),
        );
      }, this.gapTimeoutMs);
      timer.unref?.();
      this.waiting ??= new Map();
      this.waiting.set(seqno, { resolve, reject, timer });
    });
  },
  leave(seqno) {
    if (seqno !== this.inFlight) return;
    this.inFlight = null;
    this.next = seqno + 1;
    admit(this, this.next);
  },
  resync() {
    this.synced = false;
  },
  close(reason) {
    for (const [seqno, waiter] of this.waiting ?? []) {
      clearTimeout(waiter.timer);
      waiter.reject(new SequenceGapError(seqno, this.next, reason));
    }
    this.waiting?.clear();
  },
};

/** `run`'s outcome for a seqno it has not seen: `enter`, `apply` in its turn, `leave`. */
async function runInTurn(
  sequencer: Sequencer & AppendSequencer,
  seqno: number,
  apply: () => Promise<void>,
  enterFailed: (error: unknown) => unknown,
): Promise<void> {
  let verdict: "apply" | "stale";
  try {
    verdict = await sequencer.enter(seqno);
  } catch (error) {
    throw enterFailed(error);
  }
  if (verdict === "stale") return;
  try {
    await apply();
  } finally {
    sequencer.leave(seqno);
  }
}

function admit(sequencer: Sequencer, seqno: number): void {
  const waiter = sequencer.waiting?.get(seqno);
  if (waiter === undefined) return;
  sequencer.waiting?.delete(seqno);
  clearTimeout(waiter.timer);
  sequencer.inFlight = seqno;
  waiter.resolve("apply");
}
