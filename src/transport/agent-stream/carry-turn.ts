/**
 * A stream that carries on a turn it did not start names it as the client knows it, and lists it
 * once in its checkpoints: by the request id that started it (`origin`, loop/turn-record.ts),
 * with the user message and the steps the client's checkpoint already held for it before this
 * stream's own (cursor/carried-turn.ts; docs/protocol.md "Resuming a turn").
 */
import {
  type LastClientTurn,
  type TurnState,
  toSentClientTurn,
  withCarriedTurn,
  withHandedTurn,
} from "../cursor/index.ts";
import type { StreamState } from "./stream-state.ts";

/** What a takeover reads of the stream it takes the turn from. */
export type HandingStream = Pick<StreamState, "turn"> & {
  readonly checkpoints: Pick<StreamState["checkpoints"], "sentTurnSteps">;
};

/**
 * Makes `stream`'s turn the one the client knows as `origin` (no turn: nothing to do). `from`:
 * on a takeover, the stream the turn is taken from: its steps since the client's last
 * checkpoint are carried on too (cursor/carried-turn.ts `withHandedTurn`), and a client turn
 * blob not sent back is read from the checkpoints it sent (`toSentClientTurn`).
 */
export function carryTurn(stream: StreamState, origin: string, from?: HandingStream): void {
  const turn = stream.turn;
  if (turn === null) return;
  const handing = from?.turn ?? null;
  const last = handing === null ? turn.lastClientTurn : sentBy(turn.lastClientTurn, from, handing);
  const carried: TurnState = {
    ...withCarriedTurn(
      { ...turn, ...(last === undefined ? {} : { lastClientTurn: last }) },
      origin,
    ),
    requestID: origin,
  };
  const handed = handing === null ? null : withHandedTurn(carried, handing, last);
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

/** `last`, read from the checkpoints `from` sent when it is a turn blob of theirs not sent back. */
function sentBy(
  last: LastClientTurn | undefined,
  from: HandingStream | undefined,
  handing: TurnState,
): LastClientTurn | undefined {
  if (last?.type !== "unresolved" || from === undefined) return last;
  return toSentClientTurn(handing, last.blob, from.checkpoints.sentTurnSteps()) ?? last;
}
