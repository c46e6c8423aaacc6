/** read_lints: the editor's diagnostics for a file, via the client's `diagnostics_args` exec. */
import { create } from "@bufbuild/protobuf";
import {
  type Diagnostic,
  DiagnosticSeverity,
  DiagnosticsArgsSchema,
  type DiagnosticsResult,
} from "../gen/agent/v1/exec_files_pb.js";
import {
  ReadLintsToolArgsSchema,
  ReadLintsToolCallSchema,
  ReadLintsToolResultSchema,
} from "../gen/agent/v1/tool_call_pb.js";
import { parseArgs } from "./args.ts";
import { toOutput } from "./output.ts";
import { resolvePath } from "./paths.ts";
import { singleExec } from "./single-exec.ts";
import { plural } from "./text.ts";
import type { ToolHandler, ToolOutput } from "./types.ts";

export interface ReadLintsArgs {
  readonly path: string;
}

/** Diagnostics listed; more are counted (stated). */
export const MAX_DIAGNOSTICS = 200;

export const readLints: ToolHandler<ReadLintsArgs, null> = {
  name: "read_lints",
  definition: {
    name: "read_lints",
    description:
      'Get the editor\'s current diagnostics for a file: type errors, lint warnings and other problems, with line and column as the editor reports them (at most 200). Call it after editing a file to catch what your change broke, and fix the problems you introduced; diagnostics that were there before are not yours to fix unless asked. Example: {"path": "src/app.ts"}.',
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
  modes: ["agent", "ask", "plan", "debug"],
  parse: (args, env) =>
    parseArgs(args, (read) => ({ path: resolvePath(env.workspaceRoot, read.string("path")) })),
  preview: () => ({ case: "readLintsToolCall", value: create(ReadLintsToolCallSchema) }),
  started: (args) => ({
    case: "readLintsToolCall",
    value: create(ReadLintsToolCallSchema, {
      args: create(ReadLintsToolArgsSchema, { paths: [args.path] }),
    }),
  }),
  ...singleExec({
    stage: "diagnostics",
    exec: (args, env) => ({
      case: "diagnosticsArgs",
      value: create(DiagnosticsArgsSchema, { path: args.path, toolCallId: env.toolCallID }),
    }),
    result: "diagnosticsResult",
    fromResult: fromDiagnosticsResult,
    toFailure,
    couldNot: (args) => `The client could not get diagnostics for ${args.path}`,
  }),
};

const SEVERITY: Record<number, string> = {
  [DiagnosticSeverity.ERROR]: "error",
  [DiagnosticSeverity.WARNING]: "warning",
  [DiagnosticSeverity.INFORMATION]: "info",
  [DiagnosticSeverity.HINT]: "hint",
};

export function renderDiagnostic(path: string, diagnostic: Diagnostic): string {
  const start = diagnostic.range?.start;
  const position = start === undefined ? "" : `:${start.line}:${start.column}`;
  const severity = SEVERITY[diagnostic.severity] ?? "diagnostic";
  const origin = [diagnostic.source, diagnostic.code].filter((part) => part !== "").join(" ");
  const stale = diagnostic.isStale ? " (may be stale)" : "";
  return `${path}${position}: ${severity}: ${diagnostic.message}${origin === "" ? "" : ` [${origin}]`}${stale}`;
}

function fromDiagnosticsResult(args: ReadLintsArgs, result: DiagnosticsResult): ToolOutput {
  const branch = result.result;
  switch (branch.case) {
    case "success": {
      const diagnostics = branch.value.diagnostics;
      const total = Math.max(branch.value.totalDiagnostics, diagnostics.length);
      const ui = create(ReadLintsToolCallSchema, {
        args: create(ReadLintsToolArgsSchema, { paths: [args.path] }),
        result: create(ReadLintsToolResultSchema, {
          result: {
            case: "success",
            value: {
              fileDiagnostics: [
                {
                  path: args.path,
                  diagnosticsCount: total,
                  diagnostics: diagnostics.map((diagnostic) => ({
                    severity: diagnostic.severity,
                    range: { start: diagnostic.range?.start, end: diagnostic.range?.end },
                    message: diagnostic.message,
                    source: diagnostic.source,
                    code: diagnostic.code,
                    isStale: diagnostic.isStale,
                  })),
                },
              ],
              totalFiles: 1,
              totalDiagnostics: total,
            },
          },
        }),
      });
      if (diagnostics.length === 0) {
        return toOutput(`No diagnostics for ${args.path}.`, {
          case: "readLintsToolCall",
          value: ui,
        });
      }
      const shown = diagnostics
        .slice(0, MAX_DIAGNOSTICS)
        .map((diagnostic) => renderDiagnostic(args.path, diagnostic));
      const more = total - shown.length;
      const text = [
        `${plural(total, "diagnostic")}:`,
        ...shown,
        ...(more > 0 ? [`[… ${more} more not shown]`] : []),
      ];
      return toOutput(text.join("\n"), { case: "readLintsToolCall", value: ui });
    }
    case "error":
      return toFailure(args, `Could not get diagnostics for ${args.path}: ${branch.value.error}`);
    case "rejected":
      return toFailure(
        args,
        `Getting diagnostics for ${args.path} was rejected: ${branch.value.reason}`,
      );
    case "fileNotFound":
      return toFailure(args, `File not found: ${args.path}`);
    case "permissionDenied":
      return toFailure(args, `Permission denied: ${args.path}`);
    case undefined:
      return toFailure(args, `The client sent an empty diagnostics result for ${args.path}.`);
  }
}

function toFailure(args: ReadLintsArgs, message: string): ToolOutput {
  const ui = create(ReadLintsToolCallSchema, {
    args: create(ReadLintsToolArgsSchema, { paths: [args.path] }),
    result: create(ReadLintsToolResultSchema, {
      result: { case: "error", value: { errorMessage: message } },
    }),
  });
  return toOutput(message, { case: "readLintsToolCall", value: ui }, { isError: true });
}
