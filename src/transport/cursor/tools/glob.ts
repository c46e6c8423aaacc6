/**
 * glob: finds files by name. Cursor has no glob exec; the client's grep exec lists the files that
 * match a glob when given an empty pattern in files_with_matches mode (as Cursor's server does).
 * A consequence: empty files do not appear (an empty pattern matches every line, and they have
 * none).
 */
import { create } from "@bufbuild/protobuf";
import type { GrepResult } from "../gen/agent/v1/exec_files_pb.js";
import { GrepArgsSchema } from "../gen/agent/v1/exec_files_pb.js";
import {
  GlobToolArgsSchema,
  GlobToolCallSchema,
  GlobToolResultSchema,
} from "../gen/agent/v1/tool_call_pb.js";
import { parseArgs } from "./args.ts";
import { toUnionResults } from "./grep.ts";
import { toOutput } from "./output.ts";
import { resolveOptionalPath } from "./paths.ts";
import { singleExec } from "./single-exec.ts";
import type { ToolHandler, ToolOutput } from "./types.ts";

export interface GlobArgs {
  readonly pattern: string;
  readonly path: string | undefined;
}

/** Files listed; more are counted but not shown (stated). */
export const MAX_GLOB_FILES = 500;

export const glob: ToolHandler<GlobArgs, null> = {
  name: "glob",
  definition: {
    name: "glob",
    description:
      'Find files whose path matches a glob pattern, searched from path (default: the workspace); returns at most 500 paths, sorted by path. Use it to locate files by name or extension; use grep to search their contents and list_dir to see a folder\'s layout. Example: {"pattern": "**/*.test.ts", "path": "src"}.',
    parameters: {
      type: "object",
      properties: {
        pattern: { type: "string", description: "Glob pattern." },
        path: { type: "string", description: "Directory to search. Default: the workspace." },
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
      };
    }),
  preview: () => ({ case: "globToolCall", value: create(GlobToolCallSchema) }),
  started: (args) => ({
    case: "globToolCall",
    value: create(GlobToolCallSchema, { args: toUiArgs(args) }),
  }),
  ...singleExec({
    stage: "glob",
    exec: (args, env) => ({
      case: "grepArgs",
      value: create(GrepArgsSchema, {
        pattern: "",
        glob: args.pattern,
        path: args.path,
        outputMode: "files_with_matches",
        toolCallId: env.toolCallID,
      }),
    }),
    result: "grepResult",
    fromResult: fromGrepResult,
    toFailure,
    couldNot: () => "The client could not search for files",
  }),
};

function toUiArgs(args: GlobArgs) {
  return create(GlobToolArgsSchema, { globPattern: args.pattern, targetDirectory: args.path });
}

function fromGrepResult(args: GlobArgs, result: GrepResult): ToolOutput {
  const branch = result.result;
  if (branch.case !== "success") {
    const message =
      branch.case === "error"
        ? `File search failed: ${branch.value.error}`
        : "The client sent an empty search result.";
    return toFailure(args, message);
  }
  const files = new Set<string>();
  let truncated = false;
  let total = 0;
  for (const union of toUnionResults(branch.value)) {
    const entry = union.result;
    if (entry.case === "files") {
      for (const file of entry.value.files) files.add(file);
      truncated ||= entry.value.clientTruncated || entry.value.ripgrepTruncated;
      total += entry.value.totalFiles;
    } else if (entry.case === "content") {
      for (const match of entry.value.matches) files.add(match.file);
    } else if (entry.case === "count") {
      for (const count of entry.value.counts) files.add(count.file);
    }
  }
  const sorted = [...files].sort();
  const shown = sorted.slice(0, MAX_GLOB_FILES);
  const notes: string[] = [];
  if (sorted.length > shown.length)
    notes.push(`[${sorted.length - shown.length} more files not shown; use a narrower pattern.]`);
  if (truncated)
    notes.push(
      `[The client cut the search at ${sorted.length} of ${Math.max(total, sorted.length)} files.]`,
    );
  const text =
    sorted.length === 0
      ? `No files match ${args.pattern}.`
      : [shown.join("\n"), ...notes].join("\n");
  const ui = create(GlobToolCallSchema, {
    args: toUiArgs(args),
    result: create(GlobToolResultSchema, {
      result: {
        case: "success",
        value: {
          pattern: args.pattern,
          path: args.path ?? "",
          files: sorted,
          totalFiles: Math.max(total, sorted.length),
          clientTruncated: truncated,
        },
      },
    }),
  });
  return toOutput(text, { case: "globToolCall", value: ui });
}

function toFailure(args: GlobArgs, message: string): ToolOutput {
  const ui = create(GlobToolCallSchema, {
    args: toUiArgs(args),
    result: create(GlobToolResultSchema, { result: { case: "error", value: { error: message } } }),
  });
  return toOutput(message, { case: "globToolCall", value: ui }, { isError: true });
}
