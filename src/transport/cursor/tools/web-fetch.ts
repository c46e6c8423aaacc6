/**
 * web_fetch: the server fetches one public URL and hands the model its readable text (src/web:
 * public addresses only, redirects re-checked, size and time limits, HTML → Markdown). When the
 * turn asks for approval, the user is asked first (`web_fetch_request_query`); a refusal becomes
 * the tool result. The client shows the call as `web_fetch_tool_call` with the Markdown.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import type { FetchOutcome } from "../../../web/index.ts";
import {
  type WebFetchArgs,
  WebFetchArgsSchema,
  WebFetchRequestQuerySchema,
} from "../gen/agent/v1/interaction_query_pb.js";
import { WebFetchResultSchema, WebFetchToolCallSchema } from "../gen/agent/v1/tool_call_pb.js";
import { parseArgs } from "./args.ts";
import { toOutput, toUnexpectedReply } from "./output.ts";
import type { ParseResult, ToolEnv, ToolHandler, ToolOutput, ToolProgress } from "./types.ts";
import { toWebApproval } from "./web-approval.ts";

export interface WebFetchToolArgs {
  readonly url: string;
}

export const webFetch: ToolHandler<WebFetchToolArgs, null> = {
  name: "web_fetch",
  definition: {
    name: "web_fetch",
    description:
      'Fetch a web page (http or https, public addresses only) and return its main content as Markdown; plain text and JSON come back as they are, PDFs as text. Long pages are cut, and the result says where. Use it to read a page you found with web_search or that the user named; do not use it for files of the workspace (read_file) or for local servers. Example: {"url": "https://nodejs.org/api/fs.html"}.',
    parameters: {
      type: "object",
      properties: {
        url: { type: "string", description: "The full URL, starting with http:// or https://." },
      },
      required: ["url"],
    },
  },
  modes: ["agent", "ask", "plan", "debug"],
  parse: (args) => {
    const parsed = parseArgs(args, (read) => ({ url: read.string("url").trim() }));
    return parsed.ok ? checkUrl(parsed.args.url) : parsed;
  },
  preview: () => ({ case: "webFetchToolCall", value: create(WebFetchToolCallSchema) }),
  started: (args, env) => ({
    case: "webFetchToolCall",
    value: create(WebFetchToolCallSchema, { args: toUiArgs(args, env) }),
  }),
  start: (args, env) =>
    env.askWebApproval
      ? {
          type: "request",
          request: {
            type: "query",
            query: {
              case: "webFetchRequestQuery",
              value: create(WebFetchRequestQuerySchema, {
                args: toUiArgs(args, env),
                skipApproval: false,
              }),
            },
          },
          stage: "approval",
          data: null,
        }
      : toFetch(args),
  resume: (args, stage, _data, reply, env) => {
    if (stage === "approval") {
      const approval = toWebApproval(reply, "webFetchRequestResponse");
      if (approval.type === "unexpected") {
        return { type: "done", output: toFailure(args, env, toUnexpectedReply(reply)) };
      }
      if (approval.type === "approved") return toFetch(args);
      const reason = approval.reason;
      return {
        type: "done",
        output: toOutputWith(
          args,
          env,
          `The user declined fetching ${args.url}${reason === "" ? "." : `: ${reason}`}`,
          { case: "rejected", value: { reason } },
        ),
      };
    }
    if (reply.type !== "server" || reply.result.type !== "web_fetch") {
      return { type: "done", output: toFailure(args, env, toUnexpectedReply(reply)) };
    }
    return { type: "done", output: fromOutcome(args, env, reply.result.outcome) };
  },
  failed: (args, error, env) => toFailure(args, env, `Fetching ${args.url} failed: ${error}`),
};

function checkUrl(url: string): ParseResult<WebFetchToolArgs> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return {
      ok: false,
      error: '"url" is not a valid URL (give the full URL with http:// or https://)',
    };
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return { ok: false, error: '"url" must be an http or https URL' };
  }
  return { ok: true, args: { url } };
}

function toFetch(args: WebFetchToolArgs): ToolProgress<null> {
  return {
    type: "request",
    request: { type: "server", work: { type: "web_fetch", url: args.url } },
    stage: "run",
    data: null,
  };
}

function toUiArgs(args: WebFetchToolArgs, env: ToolEnv): WebFetchArgs {
  return create(WebFetchArgsSchema, { url: args.url, toolCallId: env.toolCallID });
}

function fromOutcome(args: WebFetchToolArgs, env: ToolEnv, outcome: FetchOutcome): ToolOutput {
  if (outcome.type === "error") {
    return toFailure(args, env, `Fetching ${args.url} failed: ${outcome.message}`);
  }
  const from =
    outcome.finalUrl === outcome.url
      ? outcome.url
      : `${outcome.url} (redirected to ${outcome.finalUrl})`;
  const header = [
    `Content of ${from}, ${outcome.contentType}${outcome.title === "" ? "" : `, title "${outcome.title}"`}:`,
  ];
  const footer = outcome.cut === null ? "" : `\n\n[Cut: ${outcome.cut}.]`;
  const text = `${header.join("\n")}\n\n${outcome.text === "" ? "(no readable text)" : outcome.text}${footer}`;
  return toOutputWith(
    args,
    env,
    text,
    { case: "success", value: { url: outcome.finalUrl, markdown: outcome.text } },
    false,
  );
}

function toFailure(args: WebFetchToolArgs, env: ToolEnv, message: string): ToolOutput {
  return toOutputWith(args, env, message, {
    case: "error",
    value: { url: args.url, error: message },
  });
}

function toOutputWith(
  args: WebFetchToolArgs,
  env: ToolEnv,
  text: string,
  result: MessageInitShape<typeof WebFetchResultSchema>["result"],
  isError = true,
): ToolOutput {
  return toOutput(
    text,
    {
      case: "webFetchToolCall",
      value: create(WebFetchToolCallSchema, {
        args: toUiArgs(args, env),
        result: create(WebFetchResultSchema, { result }),
      }),
    },
    { isError },
  );
}
