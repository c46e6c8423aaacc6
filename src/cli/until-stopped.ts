/** Waiting for the signal that stops a long-running command (`serve`, a team client). */
import type { Logger } from "pino";

/** Resolves at the first SIGINT or SIGTERM; a second one ends the process at once. */
export function untilStopped(log: Logger): Promise<void> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      log.info({ signal }, "shutting down");
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      const force = (again: NodeJS.Signals) => {
        log.warn({ signal: again }, "second signal: exiting without waiting for the shutdown");
        process.exit(1);
      };
      process.once("SIGINT", force);
      process.once("SIGTERM", force);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
