/**
 * write_shell_stdin: types into a background shell (`write_shell_stdin_args`, exec 23), e.g. to
 * answer a prompt or send a key to a watcher. The reaction lands in the shell's terminal file.
 */
import { create } from "@bufbuild/protobuf";
import {
  type WriteShellStdinArgs,
  WriteShellStdinArgsSchema,
  type WriteShellStdinResult,
  WriteShellStdinResultSchema,
} from "../gen/agent/v1/exec_shell_pb.js";
import { WriteShellStdinToolCallSchema } from "../gen/agent/v1/tool_call_pb.js";
import { parseArgs } from "./args.ts";
import { toOutput } from "./output.ts";
import { singleExec } from "./single-exec.ts";
import type { ToolEnv, ToolHandler, ToolOutput } from "./types.ts";

export interface WriteShellStdinToolArgs {
  readonly shellId: number;
  readonly chars: string;
}

const MAX_SHELL_ID = 2 ** 32 - 1;

export const writeShellStdin: ToolHandler<WriteShellStdinToolArgs, null> = {
  name: "write_shell_stdin",
  definition: {
    name: "write_shell_stdin",
    description:
      'Type characters into a shell that runs in the background (started with run_in_background, or moved there when it outlived its timeout_ms), for example to answer a prompt or to stop a server with Ctrl-C ("\\u0003"). Include "\\n" to press Enter. The shell\'s reaction appears in its terminal file: read that file afterwards. Example: {"shell_id": 3, "chars": "y\\n"}.',
    parameters: {
      type: "object",
      properties: {
        shell_id: { type: "integer", minimum: 0, description: "The background shell's id." },
        chars: { type: "string", description: "The characters to type." },
      },
      required: ["shell_id", "chars"],
    },
  },
  modes: ["agent", "debug"],
  parse: (args) =>
    parseArgs(args, (read) => ({
      shellId: read.integer("shell_id", { min: 0, max: MAX_SHELL_ID }),
      chars: read.string("chars", { allowEmpty: true }),
    })),
  preview: () => ({
    case: "writeShellStdinToolCall",
    value: create(WriteShellStdinToolCallSchema),
  }),
  started: (args) => ({
    case: "writeShellStdinToolCall",
    value: create(WriteShellStdinToolCallSchema, { args: toExecArgs(args) }),
  }),
  ...singleExec({
    stage: "write",
    exec: (args) => ({ case: "writeShellStdinArgs", value: toExecArgs(args) }),
    result: "writeShellStdinResult",
    fromResult,
    toFailure,
    couldNot: () => "The input could not be written",
  }),
};

function toExecArgs(args: WriteShellStdinToolArgs): WriteShellStdinArgs {
  return create(WriteShellStdinArgsSchema, { shellId: args.shellId, chars: args.chars });
}

function fromResult(
  args: WriteShellStdinToolArgs,
  result: WriteShellStdinResult,
  env: ToolEnv,
): ToolOutput {
  const branch = result.result;
  if (branch.case !== "success") {
    const reason = branch.case === "error" ? branch.value.error : "the client sent no result";
    return toOutput(`Could not write to shell ${args.shellId}: ${reason}`, toUi(args, result), {
      isError: true,
    });
  }
  const file =
    env.terminalsFolder === ""
      ? "its terminal"
      : `${env.terminalsFolder.replace(/\/+$/, "")}/${args.shellId}.txt from offset ${branch.value.terminalFileLengthBeforeInputWritten}`;
  return toOutput(
    `Wrote ${args.chars.length} characters to shell ${args.shellId}. Its reaction is in ${file}.`,
    toUi(args, result),
  );
}

function toUi(args: WriteShellStdinToolArgs, result?: WriteShellStdinResult) {
  return {
    case: "writeShellStdinToolCall" as const,
    value: create(WriteShellStdinToolCallSchema, { args: toExecArgs(args), result }),
  };
}

function toFailure(args: WriteShellStdinToolArgs, error: string): ToolOutput {
  return toOutput(
    error,
    toUi(
      args,
      create(WriteShellStdinResultSchema, { result: { case: "error", value: { error } } }),
    ),
    { isError: true },
  );
}
