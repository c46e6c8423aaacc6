/** Small helpers for waiting on work that an `AbortSignal` may cut short. */

/** The error a fetch-style API rejects with when `signal` aborted. */
export function toAbortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === "AbortError") return reason;
  return new DOMException("The operation was aborted.", "AbortError");
}

/**
 * A signal that aborts when `a` or `b` does, with that one's reason: `AbortSignal.any` for a
 * signal that lives as long as a model stream, at less than half its memory (two listeners, where
 * `AbortSignal.any` keeps weak references and finalization records in both sources and on
 * itself: ≈ 0.7 KiB against ≈ 1.7 KiB once a listener is on it, issue #19). Unlike
 * `AbortSignal.any`'s, it is kept alive by its sources until one aborts: for sources that end
 * with the same call.
 */
export function toEitherSignal(a: AbortSignal, b: AbortSignal): AbortSignal {
  if (a === b || a.aborted) return a;
  if (b.aborted) return b;
  const either = new AbortController();
  // The reason is that of the first source to abort: when one aborts the other from a listener
  // of its own (an SDK's signal following the caller's, with a reason of its own), the other's
  // listener here runs first, while the first is already aborted.
  const onA = () => {
    b.removeEventListener("abort", onB);
    either.abort(b.aborted ? b.reason : a.reason);
  };
  const onB = () => {
    a.removeEventListener("abort", onA);
    either.abort(a.aborted ? a.reason : b.reason);
  };
  a.addEventListener("abort", onA, { once: true });
  b.addEventListener("abort", onB, { once: true });
  return either.signal;
}

/** `promise`'s outcome, or an abort error as soon as `signal` aborts (the work is not stopped). */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(toAbortError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(toAbortError(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/** A readable description of a thrown value, with the system error code when there is one. */
export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    const code =
      typeof cause === "object" && cause !== null ? (cause as { code?: unknown }).code : undefined;
    return typeof code === "string" ? `${error.message} (${code})` : error.message;
  }
  return String(error);
}
