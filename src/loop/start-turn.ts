import type { UserMessage } from "../llm/types.ts";
import { append } from "./append.ts";
import { withContext } from "./context-message.ts";
import { appendHashes } from "./history-hash.ts";
import { toTurnID } from "./ids.ts";
import { startModelCall } from "./request.ts";
import { withTurnStart } from "./rewind.ts";
import { isIdle, toApplied, toRejected } from "./state.ts";
import type {
  ContextSupplement,
  ConversationState,
  RuntimeState,
  StartInput,
  Transition,
  TurnSettings,
  UserMessageInput,
} from "./types.ts";

export function applyStart(state: RuntimeState, input: StartInput): Transition {
  if (!isIdle(state.committed.status)) {
    return toRejected(state, "turn_in_progress", `a turn is ${state.committed.status}`);
  }
  // The link to a parent conversation is set once, by the child's first turn (subagent.ts).
  const committed =
    input.parent === undefined || state.committed.parent !== undefined
      ? state.committed
      : { ...state.committed, parent: input.parent };
  return beginTurn(committed, input.inputID, input.settings, input.userMessage, input.context, {
    origin: input.origin,
    messageID: input.messageID,
  });
}

export function applyUserMessage(state: RuntimeState, input: UserMessageInput): Transition {
  const { status, settings } = state.committed;
  if (!isIdle(status)) return toRejected(state, "turn_in_progress", `a turn is ${status}`);
  if (settings === null) {
    return toRejected(state, "no_settings", "a user message needs a previous turn's settings");
  }
  return beginTurn(state.committed, input.inputID, settings, input.message, [], {});
}

/**
 * Appends the turn's user message (with changed context) and calls the model; the turn's start is
 * recorded with the client's ids for it (rewind.ts).
 */
function beginTurn(
  committed: ConversationState,
  inputID: string,
  settings: TurnSettings,
  userMessage: UserMessage,
  context: readonly ContextSupplement[],
  ids: { readonly origin?: string | undefined; readonly messageID?: string | undefined },
): Transition {
  const { message, seen } = withContext(userMessage, context, committed.context);
  const turnCount = committed.turnCount + 1;
  const { state, command } = startModelCall({
    ...committed,
    turnCount,
    turnID: toTurnID(turnCount),
    settings,
    messages: append(committed.messages, [message]),
    hashes: appendHashes(committed.hashes, [message]),
    stepCount: 0,
    context: seen,
    failure: null,
    lastCommitID: inputID,
    turnStarts: withTurnStart(committed, ids),
  });
  return toApplied({ committed: state, pending: null }, command);
}
