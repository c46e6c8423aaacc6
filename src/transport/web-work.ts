/**
 * Runs the work the web tools hand out (docs/design.md §5: tools the server answers itself): a
 * search through the configured provider or a guarded fetch (src/web). Never throws: whatever goes
 * wrong becomes an `error` outcome the tool turns into a one-line result for the model.
 */

import { errorMessage } from "../errors/error-message.ts";
import type { WebFetch, WebSearch } from "../web/index.ts";
import type { ServerWork, ServerWorkResult, WebOffer } from "./cursor/index.ts";

/** The web tools of this server, built from the configuration by the composition root. */
export interface WebTools {
  /** null: no search provider is configured, so `web_search` is not offered. */
  readonly search: WebSearch | null;
  /** null: fetching is turned off, so `web_fetch` is not offered. */
  readonly fetch: WebFetch | null;
  /** Ask the user (through the client) before each search or fetch. */
  readonly askApproval: boolean;
}

export function toWebOffer(web: WebTools | undefined): WebOffer {
  return {
    search: web?.search != null,
    fetch: web?.fetch != null,
    askApproval: web?.askApproval ?? true,
  };
}

export async function runServerWork(
  web: WebTools | undefined,
  work: ServerWork,
  signal: AbortSignal,
): Promise<ServerWorkResult> {
  switch (work.type) {
    case "web_search": {
      const search = web?.search;
      if (search == null) {
        return {
          type: "web_search",
          outcome: { type: "error", message: "no search provider is configured" },
        };
      }
      try {
        return {
          type: "web_search",
          outcome: await search.search(work.query, { count: work.count, signal }),
        };
      } catch (error) {
        return { type: "web_search", outcome: { type: "error", message: errorMessage(error) } };
      }
    }
    case "subagent":
      // Subagents are run by the agent stream (agent-stream/subagents.ts), never here.
      return {
        type: "subagent",
        outcome: { type: "error", message: "subagents are not run as web work", agentID: "" },
      };
    case "web_fetch": {
      const fetcher = web?.fetch;
      if (fetcher == null) {
        return {
          type: "web_fetch",
          outcome: { type: "error", url: work.url, message: "fetching is turned off" },
        };
      }
      try {
        return { type: "web_fetch", outcome: await fetcher.fetch(work.url, { signal }) };
      } catch (error) {
        return {
          type: "web_fetch",
          outcome: { type: "error", url: work.url, message: errorMessage(error) },
        };
      }
    }
  }
}
