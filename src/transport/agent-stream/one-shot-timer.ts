/**
 * A timer that is either idle or armed, never twice: the agent stream's reconnect grace and the
 * late-result wait are each one of these. It never keeps the process alive (`unref`).
 */
import { withGetters } from "../../llm/index.ts";

export interface OneShotTimer {
  readonly armed: boolean;
  /** Arms the timer; `fire` runs after `ms` unless `clear` comes first. Re-arming replaces. */
  arm(ms: number, fire: () => void): void;
  clear(): void;
}

export function createOneShotTimer(): OneShotTimer {
  let timer: NodeJS.Timeout | null = null;
  const clear = (): void => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
  const members: Omit<OneShotTimer, "armed"> = {
    arm(ms, fire) {
      clear();
      timer = setTimeout(() => {
        timer = null;
        fire();
      }, ms);
      timer.unref?.();
    },
    clear,
  };
  // Not a literal `get`: that would make each timer a dictionary-mode object (issue #19).
  return withGetters(members, { armed: () => timer !== null });
}
