/**
 * web_search: the server searches through the configured provider (src/web). When the turn asks
 * for approval, the user is asked first (`web_search_request_query`); a refusal becomes the
 * tool result. The client shows the call as `web_search_tool_call` with the references found.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import type { SearchOutcome } from "../../../web/index.ts";
import {
  type WebSearchArgs,
  WebSearchArgsSchema,
  WebSearchRequestQuerySchema,
} from "../gen/agent/v1/interaction_query_pb.js";
import { WebSearchResultSchema, WebSearchToolCallSchema } from "../gen/agent/v1/tool_call_pb.js";
import { parseArgs } from "./args.ts";
import { toOutput, toUnexpectedReply } from "./output.ts";
import type { ToolEnv, ToolHandler, ToolOutput, ToolProgress } from "./types.ts";
import { toWebApproval } from "./web-approval.ts";

export interface WebSearchToolArgs {
  readonly query: string;
  readonly count: number;
}

const DEFAULT_COUNT = 8;
const MAX_QUERY = 400;

export const webSearch: ToolHandler<WebSearchToolArgs, null> = {
  name: "web_search",
  definition: {
    name: "web_search",
    description:
      'Search the web. Returns ranked results with title, URL, a snippet and the date when known (the query is cut at 400 characters). Use it for current information, library documentation and error messages you do not know; then read the useful results in full with web_fetch. Put versions and exact error text in the query. Example: {"query": "node 24 fetch ECONNRESET undici keepAlive", "count": 5}.',
    parameters: {
      type: "object",
      properties: {
        query: { type: "string", description: "What to search for, as you would type it." },
        count: {
          type: "integer",
          minimum: 1,
          maximum: 20,
          description: `How many results (default ${DEFAULT_COUNT}).`,
        },
      },
      required: ["query"],
    },
  },
  modes: ["agent", "ask", "plan", "debug"],
  parse: (args) =>
    parseArgs(args, (read) => ({
      query: read.string("query").trim().slice(0, MAX_QUERY),
      count: read.optionalInteger("count", { min: 1, max: 20 }) ?? DEFAULT_COUNT,
    })),
  preview: () => ({ case: "webSearchToolCall", value: create(WebSearchToolCallSchema) }),
  started: (args, env) => ({
    case: "webSearchToolCall",
    value: create(WebSearchToolCallSchema, { args: toUiArgs(args, env) }),
  }),
  start: (args, env) =>
    env.askWebApproval
      ? {
          type: "request",
          request: {
            type: "query",
            query: {
              case: "webSearchRequestQuery",
              value: create(WebSearchRequestQuerySchema, { args: toUiArgs(args, env) }),
            },
          },
          stage: "approval",
          data: null,
        }
      : toSearch(args),
  resume: (args, stage, _data, reply, env) => {
    if (stage === "approval") {
      const approval = toWebApproval(reply, "webSearchRequestResponse");
      if (approval.type === "unexpected") {
        return { type: "done", output: toFailure(args, env, toUnexpectedReply(reply)) };
      }
      if (approval.type === "approved") return toSearch(args);
      const reason = approval.reason;
      return {
        type: "done",
        output: toOutputWith(
          args,
          env,
          `The user declined this web search${reason === "" ? "." : `: ${reason}`}`,
          { case: "rejected", value: { reason } },
        ),
      };
    }
    if (reply.type !== "server" || reply.result.type !== "web_search") {
      return { type: "done", output: toFailure(args, env, toUnexpectedReply(reply)) };
    }
    return { type: "done", output: fromOutcome(args, env, reply.result.outcome) };
  },
  failed: (args, error, env) => toFailure(args, env, `The web search failed: ${error}`),
};

function toSearch(args: WebSearchToolArgs): ToolProgress<null> {
  return {
    type: "request",
    request: { type: "server", work: { type: "web_search", query: args.query, count: args.count } },
    stage: "run",
    data: null,
  };
}

function toUiArgs(args: WebSearchToolArgs, env: ToolEnv): WebSearchArgs {
  return create(WebSearchArgsSchema, { searchTerm: args.query, toolCallId: env.toolCallID });
}

function fromOutcome(args: WebSearchToolArgs, env: ToolEnv, outcome: SearchOutcome): ToolOutput {
  if (outcome.type === "error")
    return toFailure(args, env, `The web search failed: ${outcome.message}`);
  const references = outcome.hits.map((hit) => ({
    title: hit.title,
    url: hit.url,
    chunk: hit.snippet,
  }));
  const ui = { case: "success" as const, value: { references } };
  if (outcome.hits.length === 0) {
    return toOutputWith(args, env, `No web results for "${args.query}".`, ui, false);
  }
  const lines = outcome.hits.map((hit, index) =>
    [
      `${index + 1}. ${hit.title}`,
      `   ${hit.url}`,
      ...(hit.date === undefined ? [] : [`   Date: ${hit.date}`]),
      ...(hit.snippet === "" ? [] : [`   ${hit.snippet}`]),
    ].join("\n"),
  );
  const count = `${outcome.hits.length} result${outcome.hits.length === 1 ? "" : "s"}`;
  return toOutputWith(
    args,
    env,
    `Web search results for "${args.query}" (${outcome.provider}, ${count}):\n\n${lines.join("\n\n")}`,
    ui,
    false,
  );
}

function toFailure(args: WebSearchToolArgs, env: ToolEnv, message: string): ToolOutput {
  return toOutputWith(args, env, message, { case: "error", value: { error: message } });
}

function toOutputWith(
  args: WebSearchToolArgs,
  env: ToolEnv,
  text: string,
  result: MessageInitShape<typeof WebSearchResultSchema>["result"],
  isError = true,
): ToolOutput {
  return toOutput(
    text,
    {
      case: "webSearchToolCall",
      value: create(WebSearchToolCallSchema, {
        args: toUiArgs(args, env),
        result: create(WebSearchResultSchema, { result }),
      }),
    },
    { isError },
  );
}
