/**
 * shell: runs a command in the user's terminal with the client's streamed `shell_stream_args`
 * exec. stdout/stderr events are shown live as `shell_output_delta` updates and accumulated
 * (bounded, see capped-text.ts) for the result the model sees: exit code and both streams, cuts
 * stated. A one-shot `shell_result` reply is accepted too.
 *
 * Long-running commands are never killed for running long: at the time-out the client moves
 * them to the background (`timeout_behavior = BACKGROUND`), and `run_in_background` starts one
 * there at once (`background_shell_spawn_args`). Either way the model learns the shell id, the
 * pid and the terminal file the output goes to, to read it later, type into it
 * (write_shell_stdin) or stop it.
 *
 * Why one file of about 450 lines: one tool with three ways to run (streamed, a one-shot result,
 * spawned in the background) that share the arguments, the rendering of the result and the
 * background hint.
 */
import { create } from "@bufbuild/protobuf";
import {
  type BackgroundShellSpawnArgs,
  BackgroundShellSpawnArgsSchema,
  type BackgroundShellSpawnResult,
  ShellAbortReason,
  type ShellArgs,
  ShellArgsSchema,
  type ShellResult,
  ShellResultSchema,
  type ShellStreamExit,
  TimeoutBehavior,
} from "../gen/agent/v1/exec_shell_pb.js";
import {
  type ShellOutputDeltaUpdate,
  ShellOutputDeltaUpdateSchema,
} from "../gen/agent/v1/interaction_update_pb.js";
import { ShellToolCallSchema } from "../gen/agent/v1/tool_call_pb.js";
import { parseArgs } from "./args.ts";
import { appendCapped, type CappedText, EMPTY_CAPPED_TEXT, renderCapped } from "./capped-text.ts";
import { toOutput, toUnexpectedReply } from "./output.ts";
import { resolvePath } from "./paths.ts";
import { parseCommand } from "./shell-parse.ts";
import { truncateMiddle } from "./text.ts";
import type { ToolEnv, ToolHandler, ToolOutput, ToolProgress, UiUpdate } from "./types.ts";

export interface ShellToolArgs {
  readonly command: string;
  readonly workingDirectory: string;
  readonly timeoutMs: number;
  readonly description: string | undefined;
  readonly background: boolean;
}

export interface ShellData {
  readonly stdout: CappedText;
  readonly stderr: CappedText;
}

export const DEFAULT_SHELL_TIMEOUT_MS = 120_000;
export const MAX_SHELL_TIMEOUT_MS = 600_000;
/** Most characters of each stream the model sees; more is cut in the middle (stated). */
export const MAX_STREAM_CHARS = 30_000;

export const shell: ToolHandler<ShellToolArgs, ShellData> = {
  name: "shell",
  definition: {
    name: "shell",
    description:
      'Run a shell command in the user\'s terminal, in working_directory (default: the workspace root), and return its exit code, stdout and stderr (each cut in the middle beyond 30,000 characters). Commands run without a terminal to type into (stdin is closed): pass flags that avoid prompts and pagers, and never start editors or interactive programs. A command still running after timeout_ms (default 120000, at most 600000) is moved to the background, not stopped: its output then continues in a terminal file you can read. Start servers, watchers and other commands that do not exit on their own with run_in_background. For searching files use grep and glob, and for reading them read_file, rather than grep, find or cat. Commands with effects (installs, deletions, git commits or pushes) change the user\'s machine: ask first when they are destructive or were not requested. Example: {"command": "npm test -- --runInBand", "description": "Run the test suite"}.',
    parameters: {
      type: "object",
      properties: {
        command: { type: "string", description: "The command line to run." },
        working_directory: {
          type: "string",
          description: "Directory to run in. Default: the workspace root.",
        },
        timeout_ms: {
          type: "integer",
          minimum: 1000,
          maximum: MAX_SHELL_TIMEOUT_MS,
          description: `How long to wait for the command, in milliseconds; after that it moves to the background and keeps running. Default ${DEFAULT_SHELL_TIMEOUT_MS}.`,
        },
        description: {
          type: "string",
          description: "A few words on what the command does, shown to the user.",
        },
        run_in_background: {
          type: "boolean",
          description:
            "Start the command in the background and return at once (dev servers, watchers). Default false.",
        },
      },
      required: ["command"],
    },
  },
  modes: ["agent", "debug"],
  parse: (args, env) =>
    parseArgs(args, (read) => ({
      command: read.string("command"),
      workingDirectory: resolvePath(
        env.workspaceRoot,
        read.optionalString("working_directory") ?? "",
      ),
      timeoutMs:
        read.optionalInteger("timeout_ms", { min: 1000, max: MAX_SHELL_TIMEOUT_MS }) ??
        DEFAULT_SHELL_TIMEOUT_MS,
      description: read.optionalString("description"),
      background: read.optionalBoolean("run_in_background") ?? false,
    })),
  preview: () => ({ case: "shellToolCall", value: create(ShellToolCallSchema) }),
  started: (args, env) => ({
    case: "shellToolCall",
    value: create(ShellToolCallSchema, {
      args: toShellArgs(args, env),
      description: args.description,
    }),
  }),
  start: (args, env) => ({
    type: "request",
    stage: args.background ? "spawn" : "run",
    data: { stdout: EMPTY_CAPPED_TEXT, stderr: EMPTY_CAPPED_TEXT },
    request: {
      type: "exec",
      exec: args.background
        ? { case: "backgroundShellSpawnArgs", value: toSpawnArgs(args, env) }
        : { case: "shellStreamArgs", value: toShellArgs(args, env) },
    },
  }),
  resume: (args, _stage, data, reply, env) => {
    if (reply.type !== "exec") return done(toFailure(args, env, toUnexpectedReply(reply)));
    const result = reply.result;
    if (result.case === "shellResult") return done(fromShellResult(args, env, result.value, []));
    if (result.case === "backgroundShellSpawnResult") {
      return done(fromSpawnResult(args, env, result.value));
    }
    if (result.case !== "shellStream") return done(toFailure(args, env, toUnexpectedReply(reply)));
    const event = result.value.event;
    switch (event.case) {
      case "start":
        return wait(data, [toDelta({ case: "start", value: event.value })]);
      case "stdout":
        return wait({ ...data, stdout: appendCapped(data.stdout, event.value.data) }, [
          toDelta({ case: "stdout", value: event.value }),
        ]);
      case "stderr":
        return wait({ ...data, stderr: appendCapped(data.stderr, event.value.data) }, [
          toDelta({ case: "stderr", value: event.value }),
        ]);
      case "exit":
        return done(
          fromShellResult(args, env, toShellResult(args, data, event.value), [
            toDelta({ case: "exit", value: event.value }),
          ]),
        );
      case "rejected":
        return done(
          fromShellResult(
            args,
            env,
            create(ShellResultSchema, { result: { case: "rejected", value: event.value } }),
            [],
          ),
        );
      case "permissionDenied":
        return done(
          fromShellResult(
            args,
            env,
            create(ShellResultSchema, { result: { case: "permissionDenied", value: event.value } }),
            [],
          ),
        );
      case "backgrounded": {
        const { shellId, pid } = event.value;
        const note = `The command is still running, now in the background as shell ${shellId}${pid === undefined ? "" : ` (pid ${pid})`}. ${toBackgroundHint(env, shellId, pid, false)}`;
        const result = toShellResult(args, data, null, { shellId, pid });
        return done(toOutputWithStreams(args, env, note, data, false, result));
      }
      case "sandboxUnsupported":
        return done(
          toFailure(
            args,
            env,
            `The command could not run: the sandbox is not supported here (${event.value.reason || event.value.sandboxPolicyType}).`,
          ),
        );
      case "hookContext":
      case undefined:
        return wait(data, []);
    }
  },
  failed: (args, error, env) =>
    toFailure(args, env, `The client could not run the command: ${error}`),
};

function toDelta(event: ShellOutputDeltaUpdate["event"]): UiUpdate {
  return { case: "shellOutputDelta", value: create(ShellOutputDeltaUpdateSchema, { event }) };
}

function done(output: ToolOutput): ToolProgress<ShellData> {
  return { type: "done", output };
}

function wait(data: ShellData, updates: UiUpdate[]): ToolProgress<ShellData> {
  return { type: "wait", data, updates };
}

function toShellArgs(args: ShellToolArgs, env: ToolEnv): ShellArgs {
  const parsed = parseCommand(args.command);
  return create(ShellArgsSchema, {
    command: args.command,
    workingDirectory: args.workingDirectory,
    timeout: args.timeoutMs,
    toolCallId: env.toolCallID,
    simpleCommands: parsed.simpleCommands,
    hasInputRedirect: parsed.hasInputRedirect,
    hasOutputRedirect: parsed.hasOutputRedirect,
    parsingResult: parsed.parsing,
    timeoutBehavior: TimeoutBehavior.BACKGROUND,
    description: args.description,
    closeStdin: true,
    isBackground: args.background,
  });
}

function toSpawnArgs(args: ShellToolArgs, env: ToolEnv): BackgroundShellSpawnArgs {
  return create(BackgroundShellSpawnArgsSchema, {
    command: args.command,
    workingDirectory: args.workingDirectory,
    toolCallId: env.toolCallID,
    parsingResult: parseCommand(args.command).parsing,
    enableWriteShellStdinTool: true,
    description: args.description,
  });
}

/** Where a background shell's output is and how to stop it, for the model. */
function toBackgroundHint(
  env: ToolEnv,
  shellId: number,
  pid: number | undefined,
  stdin: boolean,
): string {
  const file =
    env.terminalsFolder === ""
      ? "Its output is in the user's terminal (the client did not say where terminal files are)."
      : `Its output is written to ${env.terminalsFolder.replace(/\/+$/, "")}/${shellId}.txt: read it with read_file to check on it.`;
  const input = stdin ? ` Type into it with write_shell_stdin (shell_id ${shellId}).` : "";
  const stop =
    pid === undefined ? "" : ` Stop it with \`kill ${pid}\` when it is no longer needed.`;
  return `${file}${input}${stop}`;
}

function fromSpawnResult(
  args: ShellToolArgs,
  env: ToolEnv,
  spawned: BackgroundShellSpawnResult,
): ToolOutput {
  const branch = spawned.result;
  if (branch.case === "success") {
    const { shellId, pid } = branch.value;
    const text = `Started in the background as shell ${shellId}${pid === undefined ? "" : ` (pid ${pid})`}; it keeps running after this call. ${toBackgroundHint(env, shellId, pid, true)}`;
    const result = create(ShellResultSchema, {
      isBackground: true,
      ...(pid === undefined ? {} : { pid }),
      result: {
        case: "success",
        value: {
          command: args.command,
          workingDirectory: branch.value.workingDirectory || args.workingDirectory,
          shellId,
          ...(pid === undefined ? {} : { pid }),
        },
      },
    });
    return fromShellResultWith(args, env, result, text);
  }
  switch (branch.case) {
    case "error":
      return toFailure(args, env, `The command could not be started: ${branch.value.error}`);
    case "rejected":
      return fromShellResult(
        args,
        env,
        create(ShellResultSchema, { result: { case: "rejected", value: branch.value } }),
        [],
      );
    case "permissionDenied":
      return fromShellResult(
        args,
        env,
        create(ShellResultSchema, { result: { case: "permissionDenied", value: branch.value } }),
        [],
      );
    case "sandboxUnsupported":
      return toFailure(
        args,
        env,
        `The command could not run: the sandbox is not supported here (${branch.value.reason || branch.value.sandboxPolicyType}).`,
      );
    case undefined:
      return toFailure(args, env, "The client sent an empty background-shell result.");
  }
}

function fromShellResultWith(
  args: ShellToolArgs,
  env: ToolEnv,
  result: ShellResult,
  text: string,
): ToolOutput {
  const ui = create(ShellToolCallSchema, {
    args: toShellArgs(args, env),
    result,
    description: args.description,
  });
  return toOutput(text, { case: "shellToolCall", value: ui });
}

/** The one-shot result equivalent to a finished stream, for the UI. */
function toShellResult(
  args: ShellToolArgs,
  data: ShellData,
  exit: ShellStreamExit | null,
  background?: { readonly shellId: number; readonly pid: number | undefined },
): ShellResult {
  const common = {
    command: args.command,
    workingDirectory: exit?.cwd || args.workingDirectory,
    stdout: renderCapped(data.stdout),
    stderr: renderCapped(data.stderr),
  };
  if (exit !== null && exit.code === 0 && !exit.aborted) {
    return create(ShellResultSchema, {
      result: { case: "success", value: { ...common, exitCode: 0 } },
    });
  }
  if (background !== undefined) {
    const pid = background.pid === undefined ? {} : { pid: background.pid };
    return create(ShellResultSchema, {
      isBackground: true,
      ...pid,
      result: { case: "success", value: { ...common, shellId: background.shellId, ...pid } },
    });
  }
  return create(ShellResultSchema, {
    result: {
      case: "failure",
      value: {
        ...common,
        exitCode: exit?.code ?? 0,
        aborted: exit?.aborted ?? false,
        abortReason: exit?.abortReason,
      },
    },
  });
}

function fromShellResult(
  args: ShellToolArgs,
  env: ToolEnv,
  result: ShellResult,
  updates: UiUpdate[],
): ToolOutput {
  const ui = {
    case: "shellToolCall" as const,
    value: create(ShellToolCallSchema, {
      args: toShellArgs(args, env),
      result,
      description: args.description,
    }),
  };
  const branch = result.result;
  switch (branch.case) {
    case "success":
    case "failure": {
      const value = branch.value;
      const aborted = branch.case === "failure" && branch.value.aborted;
      const status = aborted
        ? `The command was stopped (${branch.value.abortReason === ShellAbortReason.TIMEOUT ? "timeout" : "aborted"}) with exit code ${value.exitCode}.`
        : `Exit code: ${value.exitCode}${value.signal ? ` (signal ${value.signal})` : ""}`;
      const text = [status, section("stdout", value.stdout), section("stderr", value.stderr)].join(
        "\n",
      );
      return toOutput(text, ui, { updates, isError: false });
    }
    case "timeout":
      return toOutput(`The command timed out after ${branch.value.timeoutMs} ms.`, ui, {
        updates,
        isError: true,
      });
    case "rejected":
      return toOutput(
        `The user declined to run the command${branch.value.reason ? `: ${branch.value.reason}` : "."}`,
        ui,
        { updates, isError: true },
      );
    case "spawnError":
      return toOutput(`The command could not be started: ${branch.value.error}`, ui, {
        updates,
        isError: true,
      });
    case "permissionDenied":
      return toOutput(`Permission denied running the command: ${branch.value.error}`, ui, {
        updates,
        isError: true,
      });
    case undefined:
      return toOutput("The client sent an empty shell result.", ui, { updates, isError: true });
  }
}

function toOutputWithStreams(
  args: ShellToolArgs,
  env: ToolEnv,
  status: string,
  data: ShellData,
  isError: boolean,
  result: ShellResult,
): ToolOutput {
  const text = [
    status,
    section("stdout", renderCapped(data.stdout)),
    section("stderr", renderCapped(data.stderr)),
  ].join("\n");
  const ui = create(ShellToolCallSchema, {
    args: toShellArgs(args, env),
    result,
    description: args.description,
  });
  return toOutput(text, { case: "shellToolCall", value: ui }, { isError });
}

function section(name: string, text: string): string {
  if (text === "") return `${name}: (empty)`;
  return `${name}:\n${truncateMiddle(text.replace(/\n$/, ""), MAX_STREAM_CHARS)}`;
}

function toFailure(args: ShellToolArgs, env: ToolEnv, message: string): ToolOutput {
  const result = create(ShellResultSchema, {
    result: {
      case: "spawnError",
      value: { command: args.command, workingDirectory: args.workingDirectory, error: message },
    },
  });
  const ui = create(ShellToolCallSchema, {
    args: toShellArgs(args, env),
    result,
    description: args.description,
  });
  return toOutput(message, { case: "shellToolCall", value: ui }, { isError: true });
}
