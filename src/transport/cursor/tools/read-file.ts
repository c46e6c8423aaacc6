/**
 * read_file: reads a whole file through the client's `read_args` exec and shows the model the
 * requested line range with line numbers. The range is applied here, not by the client, so the
 * numbering never depends on how a client interprets offset/limit.
 */
import { create } from "@bufbuild/protobuf";
import type { ImageContent } from "../../../llm/types.ts";
import type { ReadResult } from "../gen/agent/v1/exec_files_pb.js";
import { ReadArgsSchema } from "../gen/agent/v1/exec_files_pb.js";
import {
  ReadToolArgsSchema,
  ReadToolCallSchema,
  ReadToolResultSchema,
} from "../gen/agent/v1/tool_call_pb.js";
import { sniffImageType } from "../user-message.ts";
import { parseArgs } from "./args.ts";
import { toOutput } from "./output.ts";
import { resolvePath } from "./paths.ts";
import { singleExec } from "./single-exec.ts";
import { toLines } from "./text.ts";
import type { ToolHandler, ToolOutput, UiTool } from "./types.ts";

export interface ReadFileArgs {
  readonly path: string;
  /** 1-based first line. */
  readonly offset: number;
  readonly limit: number;
}

/** Lines shown when the model gives no limit. */
export const DEFAULT_READ_LINES = 2000;
/** Longest line shown; longer lines are cut (stated on the line). */
export const MAX_LINE_CHARS = 2000;
/** Most characters shown per call; the range is cut at a line boundary (stated). */
export const MAX_READ_CHARS = 100_000;

const IMAGE_EXTENSIONS = /\.(png|jpe?g|gif|webp)$/i;

export const readFile: ToolHandler<ReadFileArgs, null> = {
  name: "read_file",
  definition: {
    name: "read_file",
    description:
      'Read a file of the workspace. Text comes back with each line as "<line number>|<text>" (the prefix is not part of the file: never copy it into an edit); images (png, jpg, gif, webp) come back as images. Shows up to 2000 lines from offset, at most 100,000 characters, and cuts lines longer than 2000 characters; the result says when it stopped early, so read the rest with offset and limit. Several read_file calls in one response run in parallel: read all the files you need at once. To find where something is, use grep or glob first rather than reading whole files. Example: {"path": "src/app.ts", "offset": 120, "limit": 80}.',
    parameters: {
      type: "object",
      properties: {
        path: {
          type: "string",
          description: "File path, absolute or relative to the workspace root.",
        },
        offset: {
          type: "integer",
          minimum: 1,
          description: "First line to show (1-based). Default 1.",
        },
        limit: {
          type: "integer",
          minimum: 1,
          description: "Number of lines to show. Default 2000.",
        },
      },
      required: ["path"],
    },
  },
  modes: ["agent", "ask", "plan", "debug"],
  parse: (args, env) =>
    parseArgs(args, (read) => ({
      path: resolvePath(env.workspaceRoot, read.string("path")),
      offset: read.optionalInteger("offset", { min: 1, max: 100_000_000 }) ?? 1,
      limit: read.optionalInteger("limit", { min: 1, max: 100_000_000 }) ?? DEFAULT_READ_LINES,
    })),
  preview: () => ({ case: "readToolCall", value: create(ReadToolCallSchema) }),
  started: (args) => ({
    case: "readToolCall",
    value: create(ReadToolCallSchema, { args: toUiArgs(args) }),
  }),
  ...singleExec({
    stage: "read",
    exec: (args, env) => ({
      case: "readArgs",
      value: create(ReadArgsSchema, { path: args.path, toolCallId: env.toolCallID }),
    }),
    result: "readResult",
    fromResult: fromReadResult,
    toFailure,
    couldNot: (args) => `The client could not read ${args.path}`,
  }),
};

function toUiArgs(args: ReadFileArgs) {
  return create(ReadToolArgsSchema, {
    path: args.path,
    offset: args.offset,
    limit: args.limit,
    includeLineNumbers: true,
  });
}

export function fromReadResult(args: ReadFileArgs, result: ReadResult): ToolOutput {
  const branch = result.result;
  switch (branch.case) {
    case "success": {
      const success = branch.value;
      if (success.output.case === "data") return fromBinary(args, success.output.value);
      return fromContent(args, success.output.value ?? "", success.truncated);
    }
    case "fileNotFound":
      return toFailure(args, `File not found: ${args.path}`);
    case "permissionDenied":
      return toFailure(args, `Permission denied: ${args.path}`);
    case "invalidFile":
      return toFailure(args, `Cannot read ${args.path}: ${branch.value.reason}`);
    case "rejected":
      return toFailure(args, `Reading ${args.path} was rejected: ${branch.value.reason}`);
    case "error":
      return toFailure(args, `Could not read ${args.path}: ${branch.value.error}`);
    case undefined:
      return toFailure(args, `The client sent an empty read result for ${args.path}.`);
  }
}

/** Renders lines [offset, offset+limit) with numbers; every cut is stated. */
export function renderLines(
  content: string,
  offset: number,
  limit: number,
): {
  text: string;
  shown: string;
  first: number;
  last: number;
  total: number;
} {
  const lines = toLines(content);
  const total = lines.length;
  const first = Math.min(offset, total + 1);
  const out: string[] = [];
  const shown: string[] = [];
  const width = String(Math.min(total, offset + limit - 1)).length;
  let chars = 0;
  let last = first - 1;
  for (let index = first - 1; index < total && index < offset - 1 + limit; index += 1) {
    const line = lines[index] ?? "";
    const cut = line.length > MAX_LINE_CHARS;
    const body = cut
      ? `${line.slice(0, MAX_LINE_CHARS)} [… line cut, ${line.length} characters]`
      : line;
    const rendered = `${String(index + 1).padStart(width)}|${body}`;
    if (chars + rendered.length > MAX_READ_CHARS && out.length > 0) break;
    out.push(rendered);
    shown.push(line);
    chars += rendered.length + 1;
    last = index + 1;
  }
  return { text: out.join("\n"), shown: shown.join("\n"), first, last, total };
}

function fromContent(args: ReadFileArgs, content: string, clientTruncated: boolean): ToolOutput {
  const view = renderLines(content, args.offset, args.limit);
  const notes: string[] = [];
  if (view.total === 0) notes.push(`${args.path} is empty.`);
  else if (view.last < view.first) {
    notes.push(`${args.path} has ${view.total} lines; offset ${args.offset} is past the end.`);
  } else if (view.first > 1 || view.last < view.total) {
    notes.push(
      `[Showing lines ${view.first}-${view.last} of ${view.total}. Use offset and limit to read other lines.]`,
    );
  }
  if (clientTruncated)
    notes.push("[The client returned only part of this file: it is larger than it allows.]");
  const text = [view.text, ...notes].filter((part) => part !== "").join("\n");
  const ui = create(ReadToolCallSchema, {
    args: toUiArgs(args),
    result: create(ReadToolResultSchema, {
      result: {
        case: "success",
        value: {
          path: args.path,
          output: { case: "content", value: view.shown },
          isEmpty: view.total === 0,
          exceededLimit: view.last < view.total,
          totalLines: view.total,
          fileSize: Buffer.byteLength(content),
          includeLineNumbers: true,
          ...(view.last >= view.first
            ? { readRange: { startLine: view.first, endLine: view.last } }
            : {}),
        },
      },
    }),
  });
  return toOutput(text, { case: "readToolCall", value: ui });
}

function fromBinary(args: ReadFileArgs, data: Uint8Array): ToolOutput {
  const success = create(ReadToolResultSchema, {
    result: {
      case: "success",
      value: { path: args.path, output: { case: "data", value: data }, fileSize: data.length },
    },
  });
  const ui: UiTool = {
    case: "readToolCall",
    value: create(ReadToolCallSchema, { args: toUiArgs(args), result: success }),
  };
  if (IMAGE_EXTENSIONS.test(args.path) && data.length > 0) {
    const image: ImageContent = {
      type: "image",
      data: Buffer.from(data).toString("base64"),
      mimeType: sniffImageType(data),
    };
    return toOutput(`Image file ${args.path} (${data.length} bytes).`, ui, { images: [image] });
  }
  return toOutput(
    `${args.path} is a binary file (${data.length} bytes); its content is not shown.`,
    ui,
  );
}

function toFailure(args: ReadFileArgs, message: string): ToolOutput {
  const ui = create(ReadToolCallSchema, {
    args: toUiArgs(args),
    result: create(ReadToolResultSchema, {
      result: { case: "error", value: { errorMessage: message } },
    }),
  });
  return toOutput(message, { case: "readToolCall", value: ui }, { isError: true });
}
