/**
 * The `compact` input (the client's `summarize` action, README.md rows L30–L33): a turn of its own
 * whose only model call is a summary call. Its `done` appends the compaction record and ends the
 * turn (summary-call.ts).
 */
import { toTurnID } from "./ids.ts";
import { startSummaryCall } from "./request.ts";
import { withTurnStart } from "./rewind.ts";
import { isIdle, toApplied, toRejected } from "./state.ts";
import type { CompactInput, RuntimeState, Transition } from "./types.ts";

export function applyCompact(state: RuntimeState, input: CompactInput): Transition {
  const { committed } = state;
  if (!isIdle(committed.status)) {
    return toRejected(state, "turn_in_progress", `a turn is ${committed.status}`);
  }
  if (committed.settings === null) {
    return toRejected(state, "no_settings", "nothing to compact before the first turn");
  }
  const turnCount = committed.turnCount + 1;
  const started = startSummaryCall(
    {
      ...committed,
      turnCount,
      turnID: toTurnID(turnCount),
      stepCount: 0,
      failure: null,
      lastCommitID: input.inputID,
      turnStarts: withTurnStart(committed, { origin: input.origin }),
    },
    "request",
  );
  if (started === null) {
    return toRejected(state, "nothing_to_compact", "no messages since the last compaction");
  }
  return toApplied({ committed: started.state, pending: null }, started.command);
}
