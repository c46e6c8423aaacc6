/**
 * Several instances (docs/team.md "Several instances"): the RunSSE and BidiAppend handlers serve
 * the request id in the body, while cluster.ts routes by the `x-request-id` header. This check
 * ties the two together, so the id that is served is the id that was claimed:
 *
 * - a header that is there and differs from the body's id is refused (`request_id_mismatch`):
 *   routing claimed another stream (a decoy), not the one that would be served;
 * - a header equal to the body's id was routed: this instance holds the stream (its claim said
 *   `mine`, or the request came with a marker naming this instance);
 * - no routable header (none, empty, longer than 128): nothing was claimed, so the body's id is
 *   claimed here and the request served only when the answer is `mine`; otherwise it is refused
 *   (`served_elsewhere`): the body has been read, so it can no longer be forwarded.
 *
 * Without it, a non-owner would restore a live stream from the store and replay its running model
 * call: two instances running one turn, and the replay never admitted against a budget.
 */
import type { ClusterDirectory } from "../store/index.ts";
import { toRoutedRequestID } from "./cluster.ts";
import { toProtocolError } from "./cursor/index.ts";

/** Resolves when `bodyID` may be served here; throws the wire error to answer otherwise. */
export type CheckServedHere = (bodyID: string, header: string | null) => Promise<void>;

export function createServedHereCheck(directory: Pick<ClusterDirectory, "claim">): CheckServedHere {
  return async (bodyID, header) => {
    if (header !== null && header !== bodyID) {
      throw toProtocolError({ type: "request_id_mismatch" });
    }
    if (toRoutedRequestID(header ?? undefined) !== undefined) return;
    // The directory not answering is this instance's failure: retry, as when routing fails.
    const owner = await directory.claim(bodyID).catch(() => {
      throw toProtocolError({ type: "instance_unreachable" });
    });
    if (owner.type !== "mine") throw toProtocolError({ type: "served_elsewhere" });
  };
}
