/** grep: searches file contents with the client's `grep_args` exec (ripgrep on the client). */
import { create } from "@bufbuild/protobuf";
import type { GrepResult, GrepSuccess, GrepUnionResult } from "../gen/agent/v1/exec_files_pb.js";
import { GrepArgsSchema, GrepResultSchema } from "../gen/agent/v1/exec_files_pb.js";
import { GrepToolCallSchema } from "../gen/agent/v1/tool_call_pb.js";
import { parseArgs } from "./args.ts";
import { toOutput } from "./output.ts";
import { resolveOptionalPath } from "./paths.ts";
import { singleExec } from "./single-exec.ts";
import { truncateEnd } from "./text.ts";
import type { ToolEnv, ToolHandler, ToolOutput } from "./types.ts";

const OUTPUT_MODES = ["content", "files_with_matches", "count"] as const;

export interface GrepToolArgs {
  readonly pattern: string;
  readonly path: string | undefined;
  readonly glob: string | undefined;
  readonly outputMode: (typeof OUTPUT_MODES)[number];
  readonly caseInsensitive: boolean | undefined;
  readonly context: number | undefined;
  readonly headLimit: number | undefined;
  readonly type: string | undefined;
  readonly multiline: boolean | undefined;
}

/** Most characters of search output shown; more is cut (stated). */
export const MAX_GREP_CHARS = 50_000;

export const grep: ToolHandler<GrepToolArgs, null> = {
  name: "grep",
  definition: {
    name: "grep",
    description:
      'Search file contents with a regular expression (ripgrep syntax: escape literal braces and parentheses, e.g. "interface\\\\{\\\\}"). output_mode "content" (the default) returns matching lines with their paths and line numbers, "files_with_matches" only the paths, "count" the matches per file. Results are capped at 50,000 characters: narrow with path, glob or type, or use head_limit, when you expect many. Prefer it to running grep or rg in the shell. Several grep calls in one response run in parallel. Example: {"pattern": "createServer\\\\(", "type": "ts", "output_mode": "files_with_matches"}.',
    parameters: {
      type: "object",
      properties: {
        pattern: { type: "string", description: "Regular expression to search for." },
        path: {
          type: "string",
          description: "File or directory to search. Default: the workspace.",
        },
        glob: {
          type: "string",
          description: 'Only search files matching this glob, e.g. "*.ts" or "src/**/*.py".',
        },
        output_mode: {
          type: "string",
          enum: [...OUTPUT_MODES],
          description:
            "content: matching lines with path and line number (default); files_with_matches: paths only; count: matches per file.",
        },
        case_insensitive: { type: "boolean", description: "Ignore case. Default false." },
        context: {
          type: "integer",
          minimum: 0,
          description: "Lines of context around each match (content mode).",
        },
        head_limit: {
          type: "integer",
          minimum: 1,
          description: "Return at most this many lines, paths or counts.",
        },
        type: { type: "string", description: 'File type filter, e.g. "ts", "py", "rust".' },
        multiline: { type: "boolean", description: "Let the pattern span lines." },
      },
      required: ["pattern"],
    },
  },
  modes: ["agent", "ask", "plan", "debug"],
  parse: (args, env) =>
    parseArgs(args, (read) => {
      const path = read.optionalString("path");
      return {
        pattern: read.string("pattern"),
        path: resolveOptionalPath(env.workspaceRoot, path),
        glob: read.optionalString("glob"),
        outputMode: read.optionalEnum("output_mode", OUTPUT_MODES) ?? "content",
        caseInsensitive: read.optionalBoolean("case_insensitive"),
        context: read.optionalInteger("context", { min: 0, max: 100 }),
        headLimit: read.optionalInteger("head_limit", { min: 1, max: 100_000 }),
        type: read.optionalString("type"),
        multiline: read.optionalBoolean("multiline"),
      };
    }),
  preview: () => ({ case: "grepToolCall", value: create(GrepToolCallSchema) }),
  started: (args, env) => ({
    case: "grepToolCall",
    value: create(GrepToolCallSchema, { args: toExecArgs(args, env) }),
  }),
  ...singleExec({
    stage: "grep",
    exec: (args, env) => ({ case: "grepArgs", value: toExecArgs(args, env) }),
    result: "grepResult",
    fromResult: (args, result, env) => fromGrepResult(args, env, result),
    toFailure: (args, message, env) => toFailure(args, env, message),
    couldNot: () => "The client could not run the search",
  }),
};

function toExecArgs(args: GrepToolArgs, env: ToolEnv) {
  return create(GrepArgsSchema, {
    pattern: args.pattern,
    path: args.path,
    glob: args.glob,
    outputMode: args.outputMode,
    caseInsensitive: args.caseInsensitive,
    context: args.context,
    headLimit: args.headLimit,
    type: args.type,
    multiline: args.multiline,
    toolCallId: env.toolCallID,
  });
}

function fromGrepResult(args: GrepToolArgs, env: ToolEnv, result: GrepResult): ToolOutput {
  const ui = {
    case: "grepToolCall" as const,
    value: create(GrepToolCallSchema, { args: toExecArgs(args, env), result }),
  };
  const branch = result.result;
  switch (branch.case) {
    case "success": {
      const rendered = renderGrepSuccess(branch.value);
      return toOutput(rendered === "" ? "No matches." : rendered, ui);
    }
    case "error":
      return toOutput(`Search failed: ${branch.value.error}`, ui, { isError: true });
    case undefined:
      return toOutput("The client sent an empty search result.", ui, { isError: true });
  }
}

/** All results of a search, workspace roots in sorted order, then the active editor's. */
export function toUnionResults(success: GrepSuccess): GrepUnionResult[] {
  const roots = Object.keys(success.workspaceResults).sort();
  const results = roots.flatMap((root) => {
    const result = success.workspaceResults[root];
    return result === undefined ? [] : [result];
  });
  if (success.activeEditorResult !== undefined) results.push(success.activeEditorResult);
  return results;
}

export function renderGrepSuccess(success: GrepSuccess): string {
  const blocks: string[] = [];
  const notes: string[] = [];
  for (const union of toUnionResults(success)) {
    const result = union.result;
    switch (result.case) {
      case "files":
        blocks.push(...result.value.files);
        if (result.value.clientTruncated || result.value.ripgrepTruncated) {
          notes.push(
            `[The file list was cut at ${result.value.files.length} of ${result.value.totalFiles} files.]`,
          );
        }
        break;
      case "count":
        for (const entry of result.value.counts) blocks.push(`${entry.file}: ${entry.count}`);
        if (result.value.clientTruncated || result.value.ripgrepTruncated) {
          notes.push(
            `[The counts were cut; ${result.value.totalMatches} matches in ${result.value.totalFiles} files in total.]`,
          );
        }
        break;
      case "content":
        for (const file of result.value.matches) {
          const lines = file.matches.map((match) => {
            const separator = match.isContextLine ? "-" : ":";
            const cut = match.contentTruncated ? " [… line cut]" : "";
            return `${match.lineNumber}${separator}${match.content}${cut}`;
          });
          blocks.push(`${file.file}\n${lines.join("\n")}`);
        }
        if (result.value.clientTruncated || result.value.ripgrepTruncated) {
          notes.push(
            `[The results were cut; ${result.value.totalMatchedLines} matching lines in total.]`,
          );
        }
        break;
      case undefined:
        break;
    }
  }
  const body = blocks.join("\n");
  const cut = truncateEnd(body, MAX_GREP_CHARS);
  if (cut.cut > 0)
    notes.push(`[… ${cut.cut} more characters of results not shown; narrow the search.]`);
  return [cut.text, ...notes].filter((part) => part !== "").join("\n");
}

function toFailure(args: GrepToolArgs, env: ToolEnv, message: string): ToolOutput {
  const result = create(GrepResultSchema, { result: { case: "error", value: { error: message } } });
  return toOutput(
    message,
    {
      case: "grepToolCall",
      value: create(GrepToolCallSchema, { args: toExecArgs(args, env), result }),
    },
    { isError: true },
  );
}
