/**
 * edit_file: exact string replacement as one client operation with two round trips — read the
 * file (`read_args`), replace on the server, write the result back (`write_args`). The client
 * shows it as one EditToolCall with the before/after content and a diff.
 *
 * Safety: a file the client returned truncated, as binary or as a partial range is never
 * written back, and `old_string` must occur exactly once unless `replace_all` is set.
 */
import { create } from "@bufbuild/protobuf";
import { ReadArgsSchema, WriteArgsSchema } from "../gen/agent/v1/exec_files_pb.js";
import {
  EditArgsSchema,
  EditResultSchema,
  EditToolCallSchema,
} from "../gen/agent/v1/tool_call_pb.js";
import { parseArgs } from "./args.ts";
import { diffLines } from "./diff.ts";
import { toOutput, toUnexpectedReply } from "./output.ts";
import { resolvePath } from "./paths.ts";
import { toExecResult } from "./single-exec.ts";
import { plural } from "./text.ts";
import type { ToolHandler, ToolOutput, ToolProgress } from "./types.ts";
import { toEditFailure, toWriteFailure } from "./write-file.ts";

export interface EditFileArgs {
  readonly path: string;
  readonly oldString: string;
  readonly newString: string;
  readonly replaceAll: boolean;
}

/** Between the read and the write: the file before and after the replacement. */
export interface EditData {
  readonly before: string;
  readonly after: string;
  readonly count: number;
}

export const editFile: ToolHandler<EditFileArgs, EditData | null> = {
  name: "edit_file",
  definition: {
    name: "edit_file",
    description:
      'Change part of an existing file by replacing exact text. old_string must match the file byte for byte, including whitespace and indentation, and must occur exactly once (add surrounding lines to make it unique) unless replace_all is true; new_string replaces it. Read the file first, and do not include the line-number prefixes read_file shows. To create a file or rewrite most of one, use write_file. Example: {"path": "src/app.ts", "old_string": "const port = 3000;", "new_string": "const port = Number(process.env.PORT ?? 3000);"}.',
    parameters: {
      type: "object",
      properties: {
        path: {
          type: "string",
          description: "File path, absolute or relative to the workspace root.",
        },
        old_string: { type: "string", description: "The exact text to replace." },
        new_string: { type: "string", description: "The replacement text." },
        replace_all: { type: "boolean", description: "Replace every occurrence. Default false." },
      },
      required: ["path", "old_string", "new_string"],
    },
  },
  modes: ["agent", "debug"],
  parse: (args, env) =>
    parseArgs(args, (read) => {
      const parsed = {
        path: resolvePath(env.workspaceRoot, read.string("path")),
        oldString: read.string("old_string", { allowEmpty: true }),
        newString: read.string("new_string", { allowEmpty: true }),
        replaceAll: read.optionalBoolean("replace_all") ?? false,
      };
      return parsed;
    }),
  preview: () => ({ case: "editToolCall", value: create(EditToolCallSchema) }),
  started: (args) => ({
    case: "editToolCall",
    value: create(EditToolCallSchema, { args: create(EditArgsSchema, { path: args.path }) }),
  }),
  start: (args, env) => {
    if (args.oldString === "") {
      return done(
        toEditFailure(
          args.path,
          undefined,
          "old_string is empty; use write_file to create a file or replace its whole content.",
        ),
      );
    }
    if (args.oldString === args.newString) {
      return done(
        toEditFailure(
          args.path,
          undefined,
          "old_string and new_string are identical; nothing to change.",
        ),
      );
    }
    return {
      type: "request",
      stage: "read",
      data: null,
      request: {
        type: "exec",
        exec: {
          case: "readArgs",
          value: create(ReadArgsSchema, { path: args.path, toolCallId: env.toolCallID }),
        },
      },
    };
  },
  resume: (args, stage, data, reply, env) => {
    if (stage === "read") {
      const readResult = toExecResult(reply, "readResult");
      if (readResult === null) {
        return done(toEditFailure(args.path, undefined, toUnexpectedReply(reply)));
      }
      const read = readResult.result;
      switch (read.case) {
        case "success": {
          const success = read.value;
          if (success.output.case !== "content") {
            return done(
              toEditFailure(
                args.path,
                undefined,
                `${args.path} is a binary file; edit_file only edits text files.`,
              ),
            );
          }
          if (success.truncated || success.rangeApplied) {
            return done(
              toEditFailure(
                args.path,
                undefined,
                `${args.path} is too large for the client to return in full, so it cannot be edited safely with edit_file.`,
              ),
            );
          }
          const replaced = replaceText(success.output.value, args);
          if (!replaced.ok) return done(toEditFailure(args.path, undefined, replaced.error));
          return {
            type: "request",
            stage: "write",
            data: { before: success.output.value, after: replaced.text, count: replaced.count },
            request: {
              type: "exec",
              exec: {
                case: "writeArgs",
                value: create(WriteArgsSchema, {
                  path: args.path,
                  fileText: replaced.text,
                  toolCallId: env.toolCallID,
                }),
              },
            },
          };
        }
        case "fileNotFound":
          return done(
            toEditFailure(
              args.path,
              undefined,
              `File not found: ${args.path}. Use write_file to create a new file.`,
              "not_found",
            ),
          );
        case "permissionDenied":
          return done(
            toEditFailure(
              args.path,
              undefined,
              `Permission denied reading ${args.path}`,
              "read_denied",
            ),
          );
        case "invalidFile":
          return done(
            toEditFailure(args.path, undefined, `Cannot edit ${args.path}: ${read.value.reason}`),
          );
        case "rejected":
          return done(
            toEditFailure(
              args.path,
              undefined,
              `Reading ${args.path} was rejected: ${read.value.reason}`,
              "rejected",
            ),
          );
        case "error":
          return done(
            toEditFailure(args.path, undefined, `Could not read ${args.path}: ${read.value.error}`),
          );
        case undefined:
          return done(
            toEditFailure(
              args.path,
              undefined,
              `The client sent an empty read result for ${args.path}.`,
            ),
          );
      }
    }
    const written = toExecResult(reply, "writeResult");
    if (written === null || data === null) {
      return done(toEditFailure(args.path, undefined, toUnexpectedReply(reply)));
    }
    const failure = toWriteFailure(args.path, written);
    if (failure !== null)
      return done(toEditFailure(args.path, undefined, failure.message, failure.kind));
    return done(toEdited(args, data));
  },
  failed: (args, error) =>
    toEditFailure(args.path, undefined, `The client could not edit ${args.path}: ${error}`),
};

function done(output: ToolOutput): ToolProgress<EditData | null> {
  return { type: "done", output };
}

function toEdited(args: EditFileArgs, data: EditData): ToolOutput {
  const diff = diffLines(args.path, data.before, data.after);
  const ui = create(EditToolCallSchema, {
    args: create(EditArgsSchema, { path: args.path }),
    result: create(EditResultSchema, {
      result: {
        case: "success",
        value: {
          path: args.path,
          linesAdded: diff.added,
          linesRemoved: diff.removed,
          diffString: diff.diff,
          beforeFullFileContent: data.before,
          afterFullFileContent: data.after,
        },
      },
    }),
  });
  const text = `Edited ${args.path}: replaced ${plural(data.count, "occurrence")} (+${diff.added} -${diff.removed} lines).`;
  return toOutput(text, { case: "editToolCall", value: ui });
}

export type Replacement = { ok: true; text: string; count: number } | { ok: false; error: string };

/**
 * Replaces `oldString` with `newString` (literally: no `$` patterns). If the text is not found
 * and the file uses CRLF line ends while the arguments use LF, the arguments are converted.
 */
export function replaceText(
  content: string,
  args: Omit<EditFileArgs, "path"> & { path: string },
): Replacement {
  let oldString = args.oldString;
  let newString = args.newString;
  let count = countOccurrences(content, oldString);
  if (
    count === 0 &&
    content.includes("\r\n") &&
    oldString.includes("\n") &&
    !oldString.includes("\r\n")
  ) {
    oldString = oldString.replaceAll("\n", "\r\n");
    newString = newString.replaceAll("\r\n", "\n").replaceAll("\n", "\r\n");
    count = countOccurrences(content, oldString);
  }
  if (count === 0) {
    return {
      ok: false,
      error: `old_string was not found in ${args.path}. It must match the file exactly, including whitespace; read the file again to get the current text.`,
    };
  }
  if (count > 1 && !args.replaceAll) {
    return {
      ok: false,
      error: `old_string occurs ${count} times in ${args.path}. Include more surrounding lines to make it unique, or set replace_all to true.`,
    };
  }
  return { ok: true, text: content.split(oldString).join(newString), count };
}

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (
    let index = text.indexOf(needle);
    index !== -1;
    index = text.indexOf(needle, index + needle.length)
  ) {
    count += 1;
  }
  return count;
}
