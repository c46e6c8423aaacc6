/** list_dir: lists a directory tree with the client's `ls_args` exec. */
import { create } from "@bufbuild/protobuf";
import type { LsResult } from "../gen/agent/v1/exec_files_pb.js";
import { LsArgsSchema, LsResultSchema } from "../gen/agent/v1/exec_files_pb.js";
import { LsToolCallSchema } from "../gen/agent/v1/tool_call_pb.js";
import { parseArgs } from "./args.ts";
import { toOutput } from "./output.ts";
import { resolvePath } from "./paths.ts";
import { singleExec } from "./single-exec.ts";
import { renderTree } from "./tree.ts";
import type { ToolEnv, ToolHandler, ToolOutput } from "./types.ts";

export interface ListDirArgs {
  readonly path: string;
  readonly ignore: readonly string[];
}

/** Entries shown; a larger listing is cut (stated). */
export const MAX_LIST_LINES = 500;

export const listDir: ToolHandler<ListDirArgs, null> = {
  name: "list_dir",
  definition: {
    name: "list_dir",
    description:
      'List a directory as an indented tree of files and subdirectories (directories end with "/"), up to 500 lines. Use it to get the shape of a project or folder; to find files by name pattern anywhere, glob is better, and to find contents, grep. Example: {"path": "src", "ignore": ["**/*.test.ts"]}.',
    parameters: {
      type: "object",
      properties: {
        path: {
          type: "string",
          description:
            "Directory, absolute or relative to the workspace root. Default: the workspace root.",
        },
        ignore: {
          type: "array",
          items: { type: "string" },
          description: "Glob patterns to leave out.",
        },
      },
    },
  },
  modes: ["agent", "ask", "plan", "debug"],
  parse: (args, env) =>
    parseArgs(args, (read) => ({
      path: resolvePath(env.workspaceRoot, read.optionalString("path") ?? ""),
      ignore: read.optionalStringArray("ignore") ?? [],
    })),
  preview: () => ({ case: "lsToolCall", value: create(LsToolCallSchema) }),
  started: (args, env) => ({
    case: "lsToolCall",
    value: create(LsToolCallSchema, { args: toExecArgs(args, env) }),
  }),
  ...singleExec({
    stage: "ls",
    exec: (args, env) => ({ case: "lsArgs", value: toExecArgs(args, env) }),
    result: "lsResult",
    fromResult: (args, result, env) => fromLsResult(args, env, result),
    toFailure: (args, message, env) => toFailure(args, env, message),
    couldNot: (args) => `The client could not list ${args.path}`,
  }),
};

function toExecArgs(args: ListDirArgs, env: ToolEnv) {
  return create(LsArgsSchema, {
    path: args.path,
    ignore: [...args.ignore],
    toolCallId: env.toolCallID,
  });
}

function fromLsResult(args: ListDirArgs, env: ToolEnv, result: LsResult): ToolOutput {
  const ui = {
    case: "lsToolCall" as const,
    value: create(LsToolCallSchema, { args: toExecArgs(args, env), result }),
  };
  const branch = result.result;
  switch (branch.case) {
    case "success": {
      const root = branch.value.directoryTreeRoot;
      if (root === undefined) return toOutput(`${args.path} is empty.`, ui);
      return toOutput(renderTree(root, MAX_LIST_LINES), ui);
    }
    case "timeout": {
      const root = branch.value.directoryTreeRoot;
      const partial = root === undefined ? "" : `${renderTree(root, MAX_LIST_LINES)}\n`;
      return toOutput(`${partial}[Listing ${args.path} timed out; the tree above is partial.]`, ui);
    }
    case "error":
      return toOutput(`Could not list ${args.path}: ${branch.value.error}`, ui, { isError: true });
    case "rejected":
      return toOutput(`Listing ${args.path} was rejected: ${branch.value.reason}`, ui, {
        isError: true,
      });
    case undefined:
      return toOutput(`The client sent an empty listing result for ${args.path}.`, ui, {
        isError: true,
      });
  }
}

function toFailure(args: ListDirArgs, env: ToolEnv, message: string): ToolOutput {
  const result = create(LsResultSchema, {
    result: { case: "error", value: { path: args.path, error: message } },
  });
  return toOutput(
    message,
    {
      case: "lsToolCall",
      value: create(LsToolCallSchema, { args: toExecArgs(args, env), result }),
    },
    { isError: true },
  );
}
