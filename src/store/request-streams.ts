/**
 * Request-stream bindings: the conversation a client's agent stream (its protocol `request_id`)
 * belongs to, so that a stream reconnected after a restart reaches the same conversation. A
 * binding is written only inside a commit, so it exists exactly when that commit does, and it
 * never moves: binding again to the same conversation does nothing, binding to another one is
 * refused and the commit rolls back.
 *
 * The client state saved with a binding (for the Cursor transport, the run request, which carries
 * the IDE's whole conversation checkpoint, up to 512 KiB) is kept only for the conversation's
 * newest stream: the commit that binds a new request id also sets that of every other stream of
 * its conversation to null; the rows stay. The runner binds a stream in the commit that starts a
 * turn, and a conversation runs one turn at a time, so every earlier stream's turn has ended:
 * its saved state could only answer a reconnect after a restart with an old checkpoint, and kept
 * forever it made a conversation's rows grow as O(turns²) (issue #19; docs/architecture.md "The
 * Cursor transport"). Binding a request id again binds nothing new and releases nothing.
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
      clientState: clientState === undefined ? null : new Uint8Array(clientState),
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
