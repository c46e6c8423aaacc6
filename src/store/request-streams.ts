/**
 * Request-stream bindings: the conversation a client's agent stream (its protocol `request_id`)
 * belongs to, so that a stream reconnected after a restart reaches the same conversation. A
 * binding is written inside a commit (a `request_stream` record), or by `bindRequestStream` while
 * the conversation is at the version its caller loaded (a stream that takes over the running
 * turn: a resume changes no state, so no commit carries it). It exists exactly when that write
 * does, and it never moves: binding again to the same conversation does nothing, binding to
 * another one is refused and the transaction rolls back.
 *
 * The client state saved with a binding (for the Cursor transport, the run or resume request,
 * which carries the IDE's whole conversation checkpoint, up to 512 KiB) is kept only for the
 * conversation's newest stream: binding a new request id also sets that of every other stream of
 * its conversation to null; the rows stay. Why that loses nothing a client can still use: the
 * runner binds a stream either in the commit that starts a turn (a conversation runs one turn
 * at a time, so every earlier stream's turn has ended) or when the stream takes over the running
 * turn (a resume, accepted only when no other stream carries the turn, docs/architecture.md
 * "The Cursor transport"), so every other stream's turn has ended or is now carried by the new
 * one. Kept forever, the saved states made a conversation's rows grow as O(turns²) (issue #19).
 * Binding a request id again binds nothing new and releases nothing.
 */
import { StoreError } from "./errors.ts";
import type { RequestStreamRow, Tables, WriteContext } from "./tables.ts";
import type { RequestStream } from "./types.ts";

/** Binds `requestID` to the conversation of the commit in `context`. */
export async function bindRequestStreamRow(
  tables: Tables,
  requestID: string,
  saved: { readonly turnID?: string | undefined; readonly clientState?: Uint8Array | undefined },
  context: WriteContext,
): Promise<void> {
  const { turnID, clientState } = saved;
  const { conversationID, location } = context;
  if (conversationID === null) {
    throw new StoreError(
      "invalid_argument",
      location,
      `A request stream is bound only inside a commit (${location}); nothing was written.`,
    );
  }
  if (clientState !== undefined && !(clientState instanceof Uint8Array)) {
    throw new StoreError(
      "invalid_argument",
      location,
      `A request stream's clientState must be bytes (${location}); nothing was written.`,
    );
  }
  if (turnID !== undefined && typeof turnID !== "string") {
    throw new StoreError(
      "invalid_argument",
      location,
      `A request stream's turnID must be text (${location}); nothing was written.`,
    );
  }
  if (typeof requestID !== "string" || requestID === "") {
    throw new StoreError(
      "invalid_argument",
      location,
      `A request stream's requestID must be a non-empty string (${location}); nothing was ` +
        "written.",
    );
  }
  const existing = await tables.readRequestStream(requestID);
  if (existing === null) {
    await tables.insertRequestStream({
      requestID,
      conversationID,
      turnID: turnID ?? null,
      // Not copied here: each table copies what it keeps (tables.ts `insertRequestStream`); the
      // SQLite one writes the bytes into the commit, and a run request's state is the client's
      // checkpoint, up to 512 KiB, at every turn start (issue #19).
      clientState: clientState ?? null,
      createdAt: context.now,
    });
    await tables.releaseRequestStreams(conversationID, requestID);
    return;
  }
  if (existing.conversationID === conversationID) return;
  throw new StoreError(
    "request_bound_elsewhere",
    location,
    `Request ${requestID} is bound to conversation ${existing.conversationID} in ${location}, ` +
      `so it cannot be bound to conversation ${conversationID}: a client bug or a reused ` +
      "request id. Nothing of this commit was written; a new stream needs a new request id.",
  );
}

export function toRequestStream(row: RequestStreamRow): RequestStream {
  return {
    conversationID: row.conversationID,
    turnID: row.turnID,
    clientState: row.clientState === null ? null : new Uint8Array(row.clientState),
    createdAt: row.createdAt,
  };
}
