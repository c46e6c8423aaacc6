/** delete_file: deletes one file with the client's `delete_args` exec. */
import { create } from "@bufbuild/protobuf";
import type { DeleteResult } from "../gen/agent/v1/exec_files_pb.js";
import { DeleteArgsSchema, DeleteResultSchema } from "../gen/agent/v1/exec_files_pb.js";
import { DeleteToolCallSchema } from "../gen/agent/v1/tool_call_pb.js";
import { parseArgs } from "./args.ts";
import { toOutput } from "./output.ts";
import { resolvePath } from "./paths.ts";
import { singleExec } from "./single-exec.ts";
import type { ToolEnv, ToolHandler, ToolOutput } from "./types.ts";

export interface DeleteFileArgs {
  readonly path: string;
}

export const deleteFile: ToolHandler<DeleteFileArgs, null> = {
  name: "delete_file",
  definition: {
    name: "delete_file",
    description:
      'Delete one file of the workspace. It cannot be undone from here: delete only files the task requires, and ask the user first for anything outside the task or the workspace. Example: {"path": "src/old-helper.ts"}.',
    parameters: {
      type: "object",
      properties: {
        path: {
          type: "string",
          description: "File path, absolute or relative to the workspace root.",
        },
      },
      required: ["path"],
    },
  },
  modes: ["agent", "debug"],
  parse: (args, env) =>
    parseArgs(args, (read) => ({ path: resolvePath(env.workspaceRoot, read.string("path")) })),
  preview: () => ({ case: "deleteToolCall", value: create(DeleteToolCallSchema) }),
  started: (args, env) => ({
    case: "deleteToolCall",
    value: create(DeleteToolCallSchema, { args: toExecArgs(args, env) }),
  }),
  ...singleExec({
    stage: "delete",
    exec: (args, env) => ({ case: "deleteArgs", value: toExecArgs(args, env) }),
    result: "deleteResult",
    fromResult: (args, result, env) => fromDeleteResult(args, env, result),
    toFailure: (args, message, env) => toFailure(args, env, message),
    couldNot: (args) => `The client could not delete ${args.path}`,
  }),
};

function toExecArgs(args: DeleteFileArgs, env: ToolEnv) {
  return create(DeleteArgsSchema, { path: args.path, toolCallId: env.toolCallID });
}

function fromDeleteResult(args: DeleteFileArgs, env: ToolEnv, result: DeleteResult): ToolOutput {
  const ui = create(DeleteToolCallSchema, { args: toExecArgs(args, env), result });
  const branch = result.result;
  const fail = (message: string) =>
    toOutput(message, { case: "deleteToolCall", value: ui }, { isError: true });
  switch (branch.case) {
    case "success":
      return toOutput(`Deleted ${args.path} (${branch.value.fileSize} bytes).`, {
        case: "deleteToolCall",
        value: ui,
      });
    case "fileNotFound":
      return fail(`File not found: ${args.path}`);
    case "notFile":
      return fail(
        `${args.path} is not a file (it is a ${branch.value.actualType || "different kind of entry"}); delete_file only deletes files.`,
      );
    case "permissionDenied":
      return fail(
        `Permission denied deleting ${args.path}${branch.value.clientVisibleError ? `: ${branch.value.clientVisibleError}` : ""}`,
      );
    case "fileBusy":
      return fail(`${args.path} is in use and cannot be deleted.`);
    case "rejected":
      return fail(`Deleting ${args.path} was rejected: ${branch.value.reason}`);
    case "error":
      return fail(`Could not delete ${args.path}: ${branch.value.error}`);
    case undefined:
      return fail(`The client sent an empty delete result for ${args.path}.`);
  }
}

function toFailure(args: DeleteFileArgs, env: ToolEnv, message: string): ToolOutput {
  const result = create(DeleteResultSchema, {
    result: { case: "error", value: { path: args.path, error: message } },
  });
  const ui = create(DeleteToolCallSchema, { args: toExecArgs(args, env), result });
  return toOutput(message, { case: "deleteToolCall", value: ui }, { isError: true });
}
