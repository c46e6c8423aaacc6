/**
 * The loop's only decision function (docs/design.md §4.4): `transition(state, input)` returns the
 * next state, the native events to publish and one command for the runner.
 *
 * It is pure: no clock, no randomness, no I/O, and it never mutates its arguments. The same
 * state and input give byte-identical results. It never throws for an input that does not fit
 * the state: such an input is returned as `rejected` with the state unchanged. The behaviour for
 * every (status, input) pair is the table in README.md.
 */
import { applyCancel } from "./cancel.ts";
import { applyCompact } from "./compact-input.ts";
import { applyLLMEvent } from "./llm-event.ts";
import { applyStart, applyUserMessage } from "./start-turn.ts";
import { toRejected } from "./state.ts";
import { applyToolResult } from "./tool-result.ts";
import { withTurnEnd } from "./turn-record.ts";
import type { Input, RuntimeState, Transition } from "./types.ts";

export function transition(state: RuntimeState, input: Input): Transition {
  // A step that ends the turn keeps how on the turn's record (turn-record.ts).
  return withTurnEnd(apply(state, input));
}

function apply(state: RuntimeState, input: Input): Transition {
  switch (input.type) {
    case "start":
      return applyStart(state, input);
    case "user_message":
      return applyUserMessage(state, input);
    case "llm_event":
      return applyLLMEvent(state, input);
    case "tool_result":
      return applyToolResult(state, input);
    case "cancel":
      return applyCancel(state, input);
    case "compact":
      return applyCompact(state, input);
    default: {
      const unknown: never = input;
      return toRejected(
        state,
        "out_of_order",
        `unknown input ${(unknown as { type: unknown }).type}`,
      );
    }
  }
}
