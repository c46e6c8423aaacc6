/**
 * write_file: creates or overwrites a file with the client's `write_args` exec. The client shows
 * it as an edit of the file (EditToolCall), as Cursor's own agent does.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import type { WriteResult } from "../gen/agent/v1/exec_files_pb.js";
import { WriteArgsSchema } from "../gen/agent/v1/exec_files_pb.js";
import {
  EditArgsSchema,
  EditResultSchema,
  EditToolCallSchema,
} from "../gen/agent/v1/tool_call_pb.js";
import { parseArgs } from "./args.ts";
import { toOutput } from "./output.ts";
import { resolvePath } from "./paths.ts";
import { singleExec } from "./single-exec.ts";
import { plural, toLines } from "./text.ts";
import type { ToolHandler, ToolOutput } from "./types.ts";

export interface WriteFileArgs {
  readonly path: string;
  readonly content: string;
}

export const writeFile: ToolHandler<WriteFileArgs, null> = {
  name: "write_file",
  definition: {
    name: "write_file",
    description:
      'Create a file, or replace the whole content of an existing one. The content is written exactly as given. For a change to part of an existing file, edit_file is safer and shorter: it cannot drop the lines you did not repeat. Example: {"path": "scripts/check.sh", "content": "#!/bin/sh\\nnpm test\\n"}.',
    parameters: {
      type: "object",
      properties: {
        path: {
          type: "string",
          description: "File path, absolute or relative to the workspace root.",
        },
        content: { type: "string", description: "The complete new content of the file." },
      },
      required: ["path", "content"],
    },
  },
  modes: ["agent", "debug"],
  parse: (args, env) =>
    parseArgs(args, (read) => ({
      path: resolvePath(env.workspaceRoot, read.string("path")),
      content: read.string("content", { allowEmpty: true }),
    })),
  preview: () => ({ case: "editToolCall", value: create(EditToolCallSchema) }),
  started: (args) => ({
    case: "editToolCall",
    value: create(EditToolCallSchema, { args: toUiArgs(args) }),
  }),
  ...singleExec({
    stage: "write",
    exec: (args, env) => ({
      case: "writeArgs",
      value: create(WriteArgsSchema, {
        path: args.path,
        fileText: args.content,
        toolCallId: env.toolCallID,
      }),
    }),
    result: "writeResult",
    fromResult: fromWriteResult,
    toFailure: (args, message) => toEditFailure(args.path, args.content, message),
    couldNot: (args) => `The client could not write ${args.path}`,
  }),
};

function toUiArgs(args: WriteFileArgs) {
  return create(EditArgsSchema, { path: args.path, streamContent: args.content });
}

function fromWriteResult(args: WriteFileArgs, result: WriteResult): ToolOutput {
  const failure = toWriteFailure(args.path, result);
  if (failure !== null)
    return toEditFailure(args.path, args.content, failure.message, failure.kind);
  const lines = toLines(args.content).length;
  const bytes = Buffer.byteLength(args.content);
  const ui = create(EditToolCallSchema, {
    args: toUiArgs(args),
    result: create(EditResultSchema, {
      result: {
        case: "success",
        value: { path: args.path, linesAdded: lines, afterFullFileContent: args.content },
      },
    }),
  });
  return toOutput(`Wrote ${plural(lines, "line")} (${plural(bytes, "byte")}) to ${args.path}.`, {
    case: "editToolCall",
    value: ui,
  });
}

export type WriteFailureKind = "permission_denied" | "rejected" | "error";

/** The failure described by a write result, or null on success. */
export function toWriteFailure(
  path: string,
  result: WriteResult,
): { message: string; kind: WriteFailureKind; readonly?: boolean } | null {
  const branch = result.result;
  switch (branch.case) {
    case "success":
      return null;
    case "permissionDenied":
      return {
        message: `Permission denied writing ${path}${branch.value.error ? `: ${branch.value.error}` : ""}`,
        kind: "permission_denied",
        readonly: branch.value.isReadonly,
      };
    case "noSpace":
      return { message: `No space left on the device to write ${path}.`, kind: "error" };
    case "rejected":
      return { message: `Writing ${path} was rejected: ${branch.value.reason}`, kind: "rejected" };
    case "error":
      return { message: `Could not write ${path}: ${branch.value.error}`, kind: "error" };
    case undefined:
      return { message: `The client sent an empty write result for ${path}.`, kind: "error" };
  }
}

/** An EditToolCall that failed, in the UI's own failure shapes, and the same text for the model. */
export function toEditFailure(
  path: string,
  streamContent: string | undefined,
  message: string,
  kind: WriteFailureKind | "not_found" | "read_denied" = "error",
): ToolOutput {
  const result = create(EditResultSchema, { result: toEditFailureResult(path, message, kind) });
  const ui = create(EditToolCallSchema, {
    args: create(EditArgsSchema, {
      path,
      ...(streamContent === undefined ? {} : { streamContent }),
    }),
    result,
  });
  return toOutput(message, { case: "editToolCall", value: ui }, { isError: true });
}

function toEditFailureResult(
  path: string,
  message: string,
  kind: WriteFailureKind | "not_found" | "read_denied",
): MessageInitShape<typeof EditResultSchema>["result"] {
  switch (kind) {
    case "not_found":
      return { case: "fileNotFound", value: { path } };
    case "read_denied":
      return { case: "readPermissionDenied", value: { path } };
    case "permission_denied":
      return { case: "writePermissionDenied", value: { path, error: message } };
    case "rejected":
      return { case: "rejected", value: { path, reason: message } };
    case "error":
      return { case: "error", value: { path, error: message, modelVisibleError: message } };
  }
}
