/**
 * A stream that carries on a turn it did not start names it as the client knows it, and lists it
 * once in its checkpoints: by the request id that started it (`origin`, loop/turn-record.ts),
 * with the user message and the steps the client's checkpoint already held for it before this
 * stream's own (cursor/carried-turn.ts; docs/protocol.md "Resuming a turn").
 */
import {
  type LastClientTurn,
  type TurnState,
  toCheckpointMessage,
  toReadBackTurn,
  toSentClientTurn,
  withCarriedTurn,
  withHandedTurn,
  withReadBackTurn,
} from "../cursor/index.ts";
import { type StreamState, send } from "./stream-state.ts";

/** What a takeover reads of the stream it takes the turn from. */
export type HandingStream = Pick<StreamState, "turn"> & {
  readonly checkpoints: Pick<StreamState["checkpoints"], "sentTurnSteps">;
};

/**
 * Makes `stream`'s turn the one the client knows as `origin` (no turn: nothing to do). `from`:
 * on a takeover, the stream the turn is taken from: its steps since the client's last
 * checkpoint are carried on too (cursor/carried-turn.ts `withHandedTurn`), and a client turn
 * blob not sent back is read from the checkpoints it sent (`toSentClientTurn`); else from the
 * client's store (`readBack`), unless `options.readBack` is false (a stream that ends at once).
 */
export function carryTurn(
  stream: StreamState,
  origin: string,
  from?: HandingStream,
  options: { readonly readBack: boolean } = { readBack: true },
): void {
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
  stream.turn = carried;
  if (!options.readBack) return;
  const turnBlobs = stream.deps.turnBlobs;
  if (origin === stream.requestID && handing === null) {
    // The turn's own stream, picked up after a restart: the request it saved was sent before
    // the turn began, so its checkpoint's last turn is an earlier one, never this turn (not
    // read back, even unresolved); its client holds the last checkpoint of this turn that went
    // out before the restart, named by one of the turn blobs recorded for it.
    if (turnBlobs === undefined) return;
    const keys = turnBlobs.writtenFor(origin, carried.conversationID);
    readBack(stream, keys, origin, UNRECOVERED, {});
    return;
  }
  if (last?.type === "unresolved" && (last.requestID === undefined || last.requestID === origin)) {
    // Unread, the client's entry for the turn stays in `previous` (its steps so far; this
    // stream's would follow as a second entry) until the client's store gives the blob back.
    readBack(stream, [last.blob], origin, UNREAD, { blob: last.blob });
  }
}

const UNREAD =
  "the client's checkpoint ends with a turn blob it did not send back nor give when asked; a resumed turn is listed twice in this stream's checkpoints";
const UNRECOVERED =
  "the turn's last checkpoint before the restart could not be read back from the client; its checkpoints list only the steps made since";

/**
 * Reads the client's turn blob back from its store (`get_blob_args`): the first of `keys` it has
 * (checkpoint-writer.ts `read`). Once it comes, the turn is carried from it
 * (cursor/carried-turn.ts `withReadBackTurn`): the stream's checkpoints list the turn once, the
 * client's part of it first; none goes out before the answer (a round trip). Not found, `why` is
 * logged at info and the checkpoints go on without it. Whether the IDE answers `get_blob_args`
 * is unverified (Cursor's own server reads the client's blobs so: docs/protocol.md §2.9).
 */
function readBack(
  stream: StreamState,
  keys: readonly string[] | Promise<readonly string[]>,
  origin: string,
  why: string,
  fields: Record<string, unknown>,
): void {
  stream.checkpoints.read(keys, (found, checkpointed) => {
    const turn = stream.turn;
    const read = found === null ? null : toReadBackTurn(found.key, found.data);
    if (turn !== null && read !== null && read.requestID === origin) {
      stream.turn = withReadBackTurn(turn, read);
    } else {
      stream.deps.log.info(
        {
          conversation: stream.conversationID,
          request: stream.requestID,
          origin,
          ...fields,
          ...(found === null ? {} : { blob: found.key, read: "not this turn" }),
        },
        why,
      );
    }
    // The checkpoint held meanwhile, as the turn is now.
    if (checkpointed && stream.turn !== null) send(stream, [toCheckpointMessage(stream.turn)]);
  });
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
