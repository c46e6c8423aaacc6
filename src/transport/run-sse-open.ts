/**
 * Opening a RunSSE subscription (docs/protocol.md §1.3–1.4): the one place for the checks both
 * ways of serving RunSSE make — the direct responder for the common request
 * (run-sse-response.ts) and Connect's handler for the rest (routes.ts) — in this order:
 *
 * 1. several instances: the body's request id is the one routing claimed, or is claimed here
 *    (served-here.ts);
 * 2. team users: the stream is the caller's (user-access.ts);
 * 3. the stream is opened or found (stream-registry.ts: may refuse at the stream cap).
 *
 * Each failure is a `ConnectError` for the end-of-stream message.
 */
import type { AgentStream } from "./agent-stream.ts";
import type { CheckServedHere } from "./served-here.ts";
import type { StreamRegistry } from "./stream-registry.ts";
import type { CheckAccess } from "./user-access.ts";

/** What a RunSSE reads of its agent stream: its outbound messages, as generator or reader. */
export type RunSseStream = Pick<AgentStream, "subscribe" | "read">;

/** The agent stream a RunSSE for `requestID` reads; `header` is its `x-request-id`, if any. */
export type OpenRunSse = (requestID: string, header: string | null) => Promise<RunSseStream>;

export interface RunSseChecks {
  /** Team users: refuses a stream of another user. */
  readonly access?: CheckAccess;
  /** Several instances: refuses a stream this instance does not hold. */
  readonly servedHere?: CheckServedHere;
}

export function createRunSseOpen(
  streams: Pick<StreamRegistry, "open">,
  checks: RunSseChecks,
): OpenRunSse {
  const { access, servedHere } = checks;
  return async (requestID, header) => {
    if (servedHere !== undefined) await servedHere(requestID, header);
    if (access !== undefined) await access({ requestID });
    return streams.open(requestID);
  };
}
