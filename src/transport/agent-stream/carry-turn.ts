/**
 * A stream that carries on a turn it did not start names it as the client knows it, and lists it
 * once in its checkpoints: by the request id that started it (`origin`, loop/turn-record.ts),
 * with the user message and the steps the client's checkpoint already held for it before this
 * stream's own (cursor/carried-turn.ts; docs/protocol.md "Resuming a turn").
 */
import { type TurnState, withCarriedTurn, withHandedTurn } from "../cursor/index.ts";
import type { StreamState } from "./stream-state.ts";

/**
 * Makes `stream`'s turn the one the client knows as `origin` (no turn: nothing to do). `from`:
 * on a takeover, the turn state of the stream the turn is taken from (its steps since the
 * client's last checkpoint are carried on too: cursor/carried-turn.ts `withHandedTurn`).
 */
export function carryTurn(stream: StreamState, origin: string, from?: TurnState | null): void {
  const turn = stream.turn;
  if (turn === null) return;
  const last = turn.lastClientTurn;
  const carried: TurnState = { ...withCarriedTurn(turn, origin), requestID: origin };
  const handed = from === undefined || from === null ? null : withHandedTurn(carried, from, last);
  if (handed !== null) {
    stream.turn = handed;
    return;
  }
  if (last?.type === "unresolved") {
    // Unread, the client's entry for the turn stays in `previous`: the checkpoints then list the
    // turn twice (its steps so far, then this stream's), as before this was read. Whether the
    // IDE sends a turn blob back is unverified (docs/protocol.md "Rewinds").
    if (last.requestID === undefined || last.requestID === origin) {
      stream.deps.log.info(
        {
          conversation: stream.conversationID,
          request: stream.requestID,
          origin,
          blob: last.blob,
        },
        "the client's checkpoint ends with a turn blob it did not send back; a resumed turn is listed twice in this stream's checkpoints",
      );
    }
  }
  stream.turn = carried;
}
