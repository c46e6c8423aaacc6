/**
 * A turn carried on by a stream that did not start it (a resume request after a restart or a
 * reconnect, a takeover, a stream picked up after a restart) is already in the client's
 * checkpoint: the resume request's `conversation_state` is the client's last checkpoint, whose
 * last turn is this turn as it was (its user message and the steps so far). The stream's own
 * checkpoints must hold the turn once, with that user message and all its steps in order: the
 * earlier ones as the client has them, then the stream's (docs/protocol.md "Resuming a turn").
 *
 * So the last turn of the request's checkpoint is read when the turn state is built (`toLastClientTurn`,
 * kept as `TurnState.lastClientTurn`), and once the runner names the turn the stream carries
 * (its record's `origin`, loop/turn-record.ts), `withCarriedTurn` takes it out of `previous`
 * and makes it the start of this turn (`TurnState.carried`) when it is that turn.
 *
 * Both forms of a client turn are read: inline (the turn's bytes, with its serialized user
 * message and steps) and blob (a 32-byte id; the turn blob found in `pre_fetched_blobs`, its user
 * message and steps ids reused as they are: the client has those blobs, so they are not written
 * again). A turn blob that did not come back cannot be read (`unresolved`): the turn then stays
 * in `previous` and the stream's checkpoints list it twice, as before (logged by the caller),
 * except on a takeover, where it is rebuilt from the turn of the stream taken over and the step
 * counts of the checkpoints that stream sent (`toSentClientTurn`).
 */
import { createHash } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { type BlobStore, toBlobStore } from "./blobs.ts";
import { toStepKeys, toTurnBlobKey, toTurnIds } from "./checkpoint-blobs.ts";
import { detachBytes } from "./detach-bytes.ts";
import {
  type ConversationStateStructure,
  ConversationTurnStructureSchema,
} from "./gen/agent/v1/conversation_state_pb.js";
import type { PreFetchedBlob } from "./gen/agent/v1/run_request_pb.js";
import { findTurnBlobOrigin } from "./turn-blob-origins.ts";
import type { CarriedTurn, LastClientTurn, TurnParts, TurnState } from "./turn-state.ts";

const BLOB_ID_BYTES = 32;

/**
 * The last turn of `state` (a run request's `conversation_state`), its bytes copied out of the
 * request (detach-bytes.ts): the stream keeps them for the rest of the turn. The parts decoded
 * from a turn are views into its (copied) bytes, so an inline turn is held once.
 */
export function toLastClientTurn(
  state: ConversationStateStructure | undefined,
  blobs: readonly PreFetchedBlob[],
): LastClientTurn {
  const last = state?.turns.at(-1);
  if (last === undefined) return { type: "none" };
  const store = blobs.length === 0 ? null : toBlobStore(blobs);
  const isBlob = last.length === BLOB_ID_BYTES;
  const found = isBlob ? lookUp(store, last) : last;
  if (found === undefined) {
    const blob = Buffer.from(last).toString("hex");
    const requestID = findTurnBlobOrigin(blob);
    return { type: "unresolved", blob, ...(requestID === undefined ? {} : { requestID }) };
  }
  const turnBytes = detachBytes(found);
  let decoded: ReturnType<typeof fromBinary<typeof ConversationTurnStructureSchema>>["turn"];
  try {
    decoded = fromBinary(ConversationTurnStructureSchema, turnBytes).turn;
  } catch {
    return { type: "none" };
  }
  if (decoded.case !== "agentConversationTurn") return { type: "none" };
  const { userMessage, steps, requestId } = decoded.value;
  const parts: TurnParts = { userMessage, steps };
  const requestID = requestId ?? "";
  if (!isBlob) {
    return { type: "read", turn: { requestID, entry: turnBytes, ids: null, bytes: parts } };
  }
  // A turn blob names its parts by id; an id that is not 32 bytes is no blob form we know.
  if (![userMessage, ...steps].every((id) => id.length === BLOB_ID_BYTES)) return { type: "none" };
  const user = lookUp(store, userMessage);
  const stepBytes = steps.map((id) => lookUp(store, id));
  const bytes =
    user === undefined || stepBytes.some((step) => step === undefined)
      ? null
      : detachBytes({ userMessage: user, steps: stepBytes as Uint8Array[] });
  return { type: "read", turn: { requestID, entry: detachBytes(last), ids: parts, bytes } };
}

/**
 * A client turn blob (hex id `blob`) read back from the client's store (`get_blob_args`,
 * agent-stream/carry-turn.ts), its bytes `data`: they must hash to `blob` and decode to an agent
 * turn whose parts are blob ids. The ids are reused as they are (the client has those blobs);
 * the parts' bytes are not read (as for a turn blob whose parts did not come back: the inline
 * form keeps the client's entry). Null: not such a turn.
 */
export function toReadBackTurn(blob: string, data: Uint8Array): CarriedTurn | null {
  if (createHash("sha256").update(data).digest("hex") !== blob) return null;
  let decoded: ReturnType<typeof fromBinary<typeof ConversationTurnStructureSchema>>["turn"];
  try {
    decoded = fromBinary(ConversationTurnStructureSchema, data).turn;
  } catch {
    return null;
  }
  if (decoded.case !== "agentConversationTurn") return null;
  const { userMessage, steps, requestId } = decoded.value;
  if (![userMessage, ...steps].every((id) => id.length === BLOB_ID_BYTES)) return null;
  return {
    requestID: requestId ?? "",
    entry: Uint8Array.from(Buffer.from(blob, "hex")),
    // Copied out of the client message they were decoded from.
    ids: detachBytes({ userMessage, steps }),
    bytes: null,
  };
}

/**
 * `state` once the client's turn blob of it, `turn` (`toReadBackTurn`), is read back while the
 * stream carries the turn: when it is this turn and nothing is carried yet, it becomes the start
 * of this turn's entry, before the steps the stream made meanwhile. When the client's checkpoint
 * still lists it (`previous` ends with it: a resume request that did not send it back), it leaves
 * `previous` as `withCarriedTurn` takes it. Otherwise `state` as it is.
 */
export function withReadBackTurn(state: TurnState, turn: CarriedTurn): TurnState {
  if (state.carried !== undefined || turn.requestID === "" || turn.requestID !== state.requestID) {
    return state;
  }
  const last = state.previous.turns.at(-1);
  if (last !== undefined && Buffer.from(last).equals(turn.entry)) {
    return withCarriedTurn({ ...state, lastClientTurn: { type: "read", turn } }, turn.requestID);
  }
  return { ...state, carried: turn };
}

/**
 * On a takeover, an `unresolved` client turn blob `blob`, read as the turn of the stream taken
 * over, `from`, with its user message and first n steps for one n of `counts` (tried last first;
 * agent-stream/checkpoint-writer.ts keeps how many steps the turn blobs of its last checkpoints
 * sent list): the turn blob those ids make must be `blob`, else null. The client holds a
 * checkpoint naming it, so it holds those blobs (a blob-form checkpoint goes out once its blobs
 * are confirmed). The parts' bytes are not taken (as for a turn blob whose parts did not come
 * back: the inline form keeps the client's entry).
 */
export function toSentClientTurn(
  from: TurnState,
  blob: string,
  counts: readonly number[],
): LastClientTurn | null {
  if (counts.length === 0) return null;
  const all = toTurnIds(from);
  for (let index = counts.length - 1; index >= 0; index--) {
    const count = counts[index] ?? 0;
    if (count > all.steps.length) continue;
    const ids = { userMessage: all.userMessage, steps: all.steps.slice(0, count) };
    if (toTurnBlobKey(ids, from.requestID) !== blob) continue;
    return {
      type: "read",
      turn: {
        requestID: from.requestID,
        entry: Uint8Array.from(Buffer.from(blob, "hex")),
        ids,
        bytes: null,
      },
    };
  }
  return null;
}

/**
 * `state` carrying on the turn the client knows as `origin`: when its `lastClientTurn` is that
 * turn, the turn leaves `previous` (and its share of `previousReferenced`) and becomes
 * `carried`, the start of this turn's entry. `lastClientTurn` is cleared either way.
 */
export function withCarriedTurn(state: TurnState, origin: string): TurnState {
  const last = state.lastClientTurn;
  if (last === undefined) return state;
  const { lastClientTurn: _read, ...rest } = state;
  if (last.type !== "read" || last.turn.requestID !== origin || origin === "") return rest;
  const { previous, previousReferenced } = state;
  return {
    ...rest,
    previous: withoutLastTurn(previous),
    ...(previousReferenced === undefined
      ? {}
      : { previousReferenced: previousReferenced.slice(0, previous.turns.length - 1) }),
    carried: last.turn,
  };
}

/**
 * On a takeover (the IDE re-attaching to a turn whose stream nobody reads, in this process):
 * `state` (after `withCarriedTurn`) continued from the stream it takes the turn over from,
 * `from`, whose memory holds the turn whole — also the steps it made after the client's last
 * checkpoint reached the client (its RunSSE had dropped). The client's checkpoint is kept for the
 * part it has (its blobs are not written again) when it is a prefix of `from`'s turn; `from`'s
 * whole turn replaces it when the client shows less than `from` carried itself, or could not be
 * read but names this turn (`last`, a turn blob this process wrote), or does not hold the turn
 * yet (its last turn is another one, read or known by its origin). Null: `from` is not the same
 * turn, the client's turn is not a prefix of it, or its last turn blob is unread and of unknown
 * origin (then the client's view is kept).
 */
export function withHandedTurn(
  state: TurnState,
  from: TurnState,
  last: LastClientTurn | undefined,
): TurnState | null {
  if (from.requestID !== state.requestID) return null;
  const handed = toStepKeys(from);
  const fromCarried = handed.length - from.steps.length;
  const { carried } = state;
  if (carried !== undefined) {
    const client = toStepKeys({ ...state, steps: [] });
    if (client.length > handed.length || client.some((key, index) => key !== handed[index])) {
      return null;
    }
    if (client.length >= fromCarried) {
      return { ...state, steps: from.steps.slice(client.length - fromCarried) };
    }
    // The client shows less of the turn than `from` had from the client before it.
    return withTurnOf(state, from);
  }
  if (last?.type === "unresolved" && last.requestID === state.requestID) {
    // The client's entry is an earlier checkpoint of this turn (written here): `from` has it all.
    return withTurnOf({ ...state, previous: withoutLastTurn(state.previous) }, from);
  }
  // The client's checkpoint does not hold the turn yet (none of it reached the client): its
  // last turn is another one, read or known by its blob's origin (turn-blob-origins.ts).
  if (
    last?.type === "read" ||
    last?.type === "none" ||
    last === undefined ||
    (last.requestID !== undefined && last.requestID !== state.requestID)
  ) {
    return withTurnOf(state, from);
  }
  return null;
}

/** `state` with `from`'s turn: its carried part, user message and steps. */
function withTurnOf(state: TurnState, from: TurnState): TurnState {
  const { carried: _client, ...rest } = state;
  return {
    ...rest,
    userMessage: from.userMessage,
    steps: from.steps,
    ...(from.carried === undefined ? {} : { carried: from.carried }),
  };
}

/** A shallow copy (its prototype kept, as checkpoint.ts copies) without the last turn. */
function withoutLastTurn(previous: ConversationStateStructure): ConversationStateStructure {
  const copy = Object.assign(
    Object.create(Object.getPrototypeOf(previous)) as ConversationStateStructure,
    previous,
  );
  copy.turns = previous.turns.slice(0, -1);
  return copy;
}

function lookUp(store: BlobStore | null, id: Uint8Array): Uint8Array | undefined {
  return store?.get(Buffer.from(id).toString("hex"));
}
