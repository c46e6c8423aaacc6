/**
 * The test client's shell execs: `/bin/sh -c <command>` in the working directory (relative to
 * the workspace; empty = the workspace), stdin closed, in its own process group so that an
 * abort or a timeout (`timeout`, else `hard_timeout`, in ms) kills the whole command.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:os";
import { StringDecoder } from "node:string_decoder";
import { create } from "@bufbuild/protobuf";
import { errorMessage } from "../../errors/error-message.ts";
import {
  ShellAbortReason,
  type ShellArgs,
  type ShellResult,
  ShellResultSchema,
} from "../cursor/gen/agent/v1/exec_shell_pb.js";
import { resolveInWorkspace } from "./exec-files.ts";

export type ShellOutcome =
  | {
      readonly type: "exited";
      /** The exit code, or 128 + the signal number when a signal ended the command. */
      readonly code: number;
      readonly signal: string;
      readonly aborted: boolean;
      readonly abortReason: "user" | "timeout" | null;
      readonly stdout: string;
      readonly stderr: string;
      readonly durationMs: number;
    }
  | { readonly type: "spawn_error"; readonly error: string };

export interface ShellListeners {
  readonly stdout?: (data: string) => void;
  readonly stderr?: (data: string) => void;
}

export interface ShellProcess {
  readonly cwd: string;
  /** Resolves once the command ended and all its output was read; never rejects. */
  readonly exited: Promise<ShellOutcome>;
  /** True once the process is running (false when spawning failed at once). */
  readonly started: boolean;
  readonly pid: number | undefined;
  /** Writes to the command's stdin; false when stdin is closed (the default) or gone. */
  write(chars: string): boolean;
  abort(): void;
}

export interface ShellOptions {
  /** Keep stdin open for `write` (background shells); default closed. */
  readonly stdin?: boolean;
  /**
   * What the time-out does: `kill` (default), or a callback and the command keeps running
   * (`timeout_behavior = BACKGROUND`).
   */
  readonly onTimeout?: "kill" | (() => void);
}

export function startShell(
  args: Pick<ShellArgs, "command" | "workingDirectory" | "timeout" | "hardTimeout">,
  workspace: string,
  listeners: ShellListeners = {},
  options: ShellOptions = {},
): ShellProcess {
  const cwd = resolveInWorkspace(workspace, args.workingDirectory);
  const startedAt = performance.now();
  let child: ChildProcess;
  try {
    child = spawn("/bin/sh", ["-c", args.command], {
      cwd,
      detached: true,
      stdio: [options.stdin === true ? "pipe" : "ignore", "pipe", "pipe"],
    });
  } catch (error) {
    const message = errorMessage(error);
    return {
      cwd,
      started: false,
      pid: undefined,
      exited: Promise.resolve({ type: "spawn_error", error: message }),
      write: () => false,
      abort: () => {},
    };
  }
  let abortReason: "user" | "timeout" | null = null;
  let running = true;
  const kill = (reason: "user" | "timeout"): void => {
    if (!running) return;
    abortReason ??= reason;
    try {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    } catch {
      child.kill("SIGKILL");
    }
  };
  const limit = args.timeout > 0 ? args.timeout : (args.hardTimeout ?? 0);
  const onTimeout = options.onTimeout ?? "kill";
  const timer =
    limit > 0
      ? setTimeout(() => (onTimeout === "kill" ? kill("timeout") : onTimeout()), limit)
      : undefined;
  child.stdin?.on("error", () => {});

  const out = collect(child.stdout, listeners.stdout);
  const err = collect(child.stderr, listeners.stderr);
  const exited = new Promise<ShellOutcome>((resolve) => {
    child.once("error", (error) => {
      running = false;
      clearTimeout(timer);
      resolve({ type: "spawn_error", error: error.message });
    });
    child.once("close", (code, signal) => {
      running = false;
      clearTimeout(timer);
      const signalNumber = signal === null ? 0 : (constants.signals[signal] ?? 0);
      resolve({
        type: "exited",
        code: code ?? 128 + signalNumber,
        signal: signal ?? "",
        aborted: abortReason !== null,
        abortReason,
        stdout: out.text(),
        stderr: err.text(),
        durationMs: Math.round(performance.now() - startedAt),
      });
    });
  });
  return {
    cwd,
    started: child.pid !== undefined,
    pid: child.pid,
    exited,
    write: (chars) => {
      const stdin = child.stdin;
      if (!running || stdin === null || stdin.destroyed) return false;
      stdin.write(chars);
      return true;
    },
    abort: () => kill("user"),
  };
}

function collect(
  stream: NodeJS.ReadableStream | null,
  listener: ((data: string) => void) | undefined,
): { text(): string } {
  const decoder = new StringDecoder("utf8");
  let text = "";
  const push = (chunk: string): void => {
    if (chunk === "") return;
    text += chunk;
    listener?.(chunk);
  };
  stream?.on("data", (chunk: Buffer) => push(decoder.write(chunk)));
  stream?.on("end", () => push(decoder.end()));
  return { text: () => text };
}

/** The one-shot `shell_result` for a finished command. */
export function toShellResult(args: ShellArgs, cwd: string, outcome: ShellOutcome): ShellResult {
  if (outcome.type === "spawn_error") {
    return create(ShellResultSchema, {
      result: {
        case: "spawnError",
        value: { command: args.command, workingDirectory: cwd, error: outcome.error },
      },
    });
  }
  if (outcome.abortReason === "timeout") {
    return create(ShellResultSchema, {
      result: {
        case: "timeout",
        value: { command: args.command, workingDirectory: cwd, timeoutMs: args.timeout },
      },
    });
  }
  const common = {
    command: args.command,
    workingDirectory: cwd,
    exitCode: outcome.code,
    signal: outcome.signal,
    stdout: outcome.stdout,
    stderr: outcome.stderr,
    executionTime: outcome.durationMs,
  };
  if (outcome.code === 0 && !outcome.aborted) {
    return create(ShellResultSchema, { result: { case: "success", value: common } });
  }
  return create(ShellResultSchema, {
    result: {
      case: "failure",
      value: {
        ...common,
        aborted: outcome.aborted,
        abortReason: outcome.aborted ? toAbortReason(outcome.abortReason) : undefined,
      },
    },
  });
}

export function toAbortReason(reason: "user" | "timeout" | null): ShellAbortReason {
  if (reason === "timeout") return ShellAbortReason.TIMEOUT;
  if (reason === "user") return ShellAbortReason.USER_ABORT;
  return ShellAbortReason.UNSPECIFIED;
}
