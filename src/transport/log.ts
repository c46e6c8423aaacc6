/**
 * The logging surface the transport writes to: a subset of pino's, so the composition root passes
 * a pino logger and tests pass `silentLog` or a recorder. Fields never carry keys or message
 * bodies.
 */
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
