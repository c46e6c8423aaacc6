/**
 * Work a tool asks the server itself to do (the web tools, docs/design.md §5: tools the server
 * answers itself). The dialect only describes it as plain data; the transport runs it (it does I/O)
 * and hands the result back as the tool's next reply, so handlers stay pure.
 */
import type { FetchOutcome, SearchOutcome } from "../../../web/index.ts";

export type ServerWork =
  | { readonly type: "web_search"; readonly query: string; readonly count: number }
  | { readonly type: "web_fetch"; readonly url: string }
  | {
      /** Run a subagent (task.ts): a child conversation whose final answer is the result. */
      readonly type: "subagent";
      readonly description: string;
      readonly prompt: string;
      /** `explore`, `general`, or a custom subagent's name. */
      readonly subagentType: string;
      /** The model the parent's model asked for; "" none. */
      readonly model: string;
      /** The agent id (conversation id) of an earlier subagent to continue; "" none. */
      readonly resume: string;
    };

/** How a subagent ended. */
export type SubagentOutcome =
  | {
      readonly type: "completed";
      /** The child's final answer. */
      readonly text: string;
      /** The child's conversation id. */
      readonly agentID: string;
      readonly durationMs: number;
    }
  | { readonly type: "error"; readonly message: string; readonly agentID: string };

export type ServerWorkResult =
  | { readonly type: "web_search"; readonly outcome: SearchOutcome }
  | { readonly type: "web_fetch"; readonly outcome: FetchOutcome }
  | { readonly type: "subagent"; readonly outcome: SubagentOutcome };

/** Which web tools this turn offers, and whether each call asks the user first. */
export interface WebOffer {
  readonly search: boolean;
  readonly fetch: boolean;
  /** Ask through `web_search_request_query` / `web_fetch_request_query` before running. */
  readonly askApproval: boolean;
}

export const NO_WEB: WebOffer = {
  search: false,
  fetch: false,
  askApproval: true,
};
