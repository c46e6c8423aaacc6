/**
 * One BidiAppend (docs/protocol.md §1.4): the one place for what both ways of answering it do —
 * the direct responder for the common request (bidi-append-response.ts) and Connect's handler for
 * the rest (routes.ts) — in this order:
 *
 * 1. the request is decoded (cursor/bidi-append.ts): a bad one is `bad_input`;
 * 2. several instances: the body's request id is the one routing claimed (served-here.ts);
 * 3. team users: the stream is the caller's (user-access.ts);
 * 4. the stream is found, or created for a run request (stream-registry.ts);
 * 5. team users: a run request's conversation is the caller's (else the stream is ended too);
 * 6. the message is appended at its seqno (agent-stream.ts).
 *
 * Every refusal is a `ConnectError`, and is logged: clients often ignore the answer to an append.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { BidiAppendRequest } from "./cursor/gen/aiserver/v1/bidi_pb.js";
import type { AgentClientMessage } from "./cursor/index.ts";
import { fromBidiAppendRequest, toConnectError } from "./cursor/index.ts";
import type { Log } from "./log.ts";
import type { CheckServedHere } from "./served-here.ts";
import type { StreamRegistry } from "./stream-registry.ts";
import type { CheckAccess } from "./user-access.ts";

/**
 * Appends `request`'s message; `header` is the request's `x-request-id`, if any; `hex`: its
 * `data` already decoded (cursor/bidi-append-reader.ts), `data` then empty.
 */
export type ApplyBidiAppend = (
  request: BidiAppendRequest,
  header: string | null,
  hex?: Uint8Array,
) => Promise<void>;

export interface BidiAppendChecks {
  /** Team users: refuses a stream or conversation of another user. */
  readonly access?: CheckAccess;
  /** Several instances: refuses a stream this instance does not hold. */
  readonly servedHere?: CheckServedHere;
}

export function createBidiAppendApply(
  streams: Pick<StreamRegistry, "open">,
  checks: BidiAppendChecks,
  log: Log,
): ApplyBidiAppend {
  // Absent checks are skipped, not awaited as resolved promises: each `await` is a trip through
  // the microtask queue on the way to the turn start (issue #19).
  const { access, servedHere } = checks;
  return async (request, header, hex) => {
    const requestID = request.requestId?.requestId.slice(0, 64) ?? "";
    const decoded = fromBidiAppendRequest(request, undefined, hex);
    if (!decoded.ok) {
      log.warn(
        { request: requestID, reason: decoded.error.reason, error: decoded.error.message },
        "append rejected",
      );
      throw toConnectError({ kind: "bad_input", detail: decoded.error.message });
    }
    const { appendSeqno, message, salvaged } = decoded.value;
    if (salvaged !== undefined) {
      log.warn(
        { request: requestID, seqno: appendSeqno, error: salvaged },
        "exec result could not be decoded; failing that tool call",
      );
    }
    try {
      if (servedHere !== undefined) await servedHere(decoded.value.requestID, header);
      if (access !== undefined) await access({ requestID: decoded.value.requestID });
      const stream = await streams.open(decoded.value.requestID, {
        create: message.message.case === "runRequest",
      });
      // A run request on another user's conversation also ends this (the user's own) stream,
      // so its RunSSE reader is not left waiting for a turn that never starts.
      if (access !== undefined) {
        await access({ conversationID: conversationOf(message) }).catch(async (error) => {
          await stream.abandon(ConnectError.from(error));
          throw error;
        });
      }
      await stream.append(appendSeqno, message);
    } catch (error) {
      const rejected = ConnectError.from(error);
      log.warn(
        {
          request: requestID,
          seqno: appendSeqno,
          code: Code[rejected.code],
          error: rejected.rawMessage,
        },
        "append rejected",
      );
      throw rejected;
    }
  };
}

/** The conversation a client message names (a run request's), checked with its stream. */
export function conversationOf(message: AgentClientMessage): string | undefined {
  return message.message.case === "runRequest" ? message.message.value.conversationId : undefined;
}
