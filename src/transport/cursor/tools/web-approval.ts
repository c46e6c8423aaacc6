/**
 * The user's answer to a web tool's approval query (`web_search_request_query` /
 * `web_fetch_request_query`): both answer with `approved` or `rejected { reason }`.
 */
import type { ClientReply } from "./types.ts";

export type WebApproval =
  | { readonly type: "approved" }
  | { readonly type: "declined"; readonly reason: string }
  | { readonly type: "unexpected" };

export function toWebApproval(
  reply: ClientReply,
  responseCase: "webSearchRequestResponse" | "webFetchRequestResponse",
): WebApproval {
  if (reply.type !== "query" || reply.result.case !== responseCase) return { type: "unexpected" };
  const answer = reply.result.value.result;
  if (answer.case === "approved") return { type: "approved" };
  return { type: "declined", reason: answer.case === "rejected" ? answer.value.reason.trim() : "" };
}
