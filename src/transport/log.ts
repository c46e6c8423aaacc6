/**
 * The logging surface the transport writes to: a subset of pino's, so the composition root passes
 * a pino logger and tests pass `silentLog` or a recorder. Fields never carry keys or message
 * bodies.
 */
import { errorMessage } from "../errors/error-message.ts";
import type { ModelSwitch } from "../runner/types.ts";

export interface Log {
  debug(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

export const silentLog: Log = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};

/** One line a recording log kept. */
export interface LogLine {
  readonly level: string;
  readonly message: string;
  readonly fields: Record<string, unknown>;
}

/** A log that keeps every line in `lines` (for tests and diagnostics). */
export function createRecordingLog(): {
  readonly log: Log;
  readonly lines: LogLine[];
  /** Resolves once a line with `message` has been recorded (at once if one was). */
  until(message: string): Promise<void>;
} {
  const lines: LogLine[] = [];
  const waiters: { readonly message: string; readonly resolve: () => void }[] = [];
  const record =
    (level: string) =>
    (fields: Record<string, unknown>, message: string): void => {
      lines.push({ level, message, fields });
      for (let i = waiters.length - 1; i >= 0; i -= 1) {
        const waiter = waiters[i];
        if (waiter?.message !== message) continue;
        waiters.splice(i, 1);
        waiter.resolve();
      }
    };
  return {
    lines,
    until(message) {
      if (lines.some((line) => line.message === message)) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ message, resolve }));
    },
    log: {
      debug: record("debug"),
      info: record("info"),
      warn: record("warn"),
      error: record("error"),
    },
  };
}

/** The runner's `onError`, written to `log` (what the runner could not hand to anyone). */
export function logRunnerErrors(
  log: Log,
): (error: unknown, context: { conversationID: string; what: string }) => void {
  return (error, context) => log.error({ ...context, error: errorMessage(error) }, "runner");
}

/** Logs each model failover (runner `onModelSwitch`) as a warning with its reason. */
export function logModelSwitches(log: Log): (info: ModelSwitch) => void {
  return (info) =>
    log.warn(
      {
        conversation: info.conversationID,
        turn: info.turnID,
        failedCall: info.failedCallID,
        call: info.callID,
        from: info.from,
        to: info.to,
        kind: info.kind,
        reason: info.reason,
      },
      "model switched: the call failed before its first token",
    );
}
