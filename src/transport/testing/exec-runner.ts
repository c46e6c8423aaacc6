/**
 * Runs the server's exec requests the way the IDE does (docs/protocol.md §2.7–2.8, §3 step
 * 4): for real, in the workspace; each reply echoes the exec's `id` and `exec_id`; after a
 * result comes `exec_client_control_message.stream_close{id}` (before it, for non-streamed
 * execs, when `streamCloseBeforeResult` is set). A streamed shell sends `start`, its output
 * chunks as they come, then `exit`; `abort(id)` kills it. Under `timeout_behavior = BACKGROUND`
 * a streamed shell that outlives its time-out, or one `force_background_shell_args` names, is
 * moved to the client's background shells and its stream ends with `backgrounded`
 * (background-shells.ts, which also serves spawns and stdin writes). Execs the client cannot
 * run are answered with `exec_client_control_message.throw`.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { errorMessage } from "../../errors/error-message.ts";
import {
  type AgentClientMessage,
  AgentClientMessageSchema,
} from "../cursor/gen/agent/v1/agent_stream_pb.js";
import type { ExecClientMessageSchema, ExecServerMessage } from "../cursor/gen/agent/v1/exec_pb.js";
import {
  ForceBackgroundShellStatus,
  TimeoutBehavior,
} from "../cursor/gen/agent/v1/exec_shell_pb.js";
import type { BackgroundShells } from "./background-shells.ts";
import { runDelete, runDiagnostics, runLs, runRead, runWrite } from "./exec-files.ts";
import { runGrep } from "./exec-grep.ts";
import { runListResources, runMcpState, runReadResource, type TestMcpServer } from "./exec-mcp.ts";
import { type ShellProcess, startShell, toAbortReason, toShellResult } from "./exec-shell.ts";

/** The result branch of an `ExecClientMessage`. */
export type ExecReply = MessageInitShape<typeof ExecClientMessageSchema>["message"];

/**
 * Scripts an exec instead of running it: return its result branch (sent, then stream_close),
 * or `undefined` to run it for real.
 */
export type ExecOverride = (
  exec: ExecServerMessage,
) => ExecReply | undefined | Promise<ExecReply | undefined>;

export interface ExecRunnerOptions {
  readonly workspace: string;
  readonly streamCloseBeforeResult: boolean;
  readonly onExec?: ExecOverride;
  /** Queues one client message (in order); delivery failures are the caller's to record. */
  readonly send: (message: AgentClientMessage) => void;
  /** The client's background shells; without them background execs are refused. */
  readonly background?: BackgroundShells;
  /** The client's MCP servers, for resource and state execs; none by default. */
  readonly mcpServers?: readonly TestMcpServer[];
}

export interface ExecRunner {
  /** Runs one exec; resolves when its last reply was queued. Never rejects. */
  run(exec: ExecServerMessage): Promise<void>;
  /** Kills the running shell of exec `id`; false when none runs. */
  abort(id: number): boolean;
  /** Kills every running shell and resolves when all execs finished. */
  stop(): Promise<void>;
  readonly running: number;
}

export function createExecRunner(options: ExecRunnerOptions): ExecRunner {
  const { workspace, send } = options;
  const shells = new Map<number, ShellProcess>();
  /** Running streamed shells by tool call id: moves each to the background. */
  const toBackground = new Map<string, () => boolean>();
  const inFlight = new Set<Promise<void>>();

  const reply = (exec: ExecServerMessage, message: ExecReply): void => {
    send(
      create(AgentClientMessageSchema, {
        message: {
          case: "execClientMessage",
          value: { id: exec.id, execId: exec.execId, message },
        },
      }),
    );
  };
  const control = (message: MessageInitShape<typeof AgentClientMessageSchema>["message"]): void => {
    send(create(AgentClientMessageSchema, { message }));
  };
  const streamClose = (exec: ExecServerMessage): void =>
    control({
      case: "execClientControlMessage",
      value: { message: { case: "streamClose", value: { id: exec.id } } },
    });
  const fail = (exec: ExecServerMessage, error: string): void =>
    control({
      case: "execClientControlMessage",
      value: { message: { case: "throw", value: { id: exec.id, error } } },
    });
  const finish = (exec: ExecServerMessage, result: ExecReply): void => {
    if (options.streamCloseBeforeResult) {
      streamClose(exec);
      reply(exec, result);
    } else {
      reply(exec, result);
      streamClose(exec);
    }
  };

  const execute = async (exec: ExecServerMessage): Promise<void> => {
    const scripted = await options.onExec?.(exec);
    if (scripted !== undefined) {
      finish(exec, scripted);
      return;
    }
    const branch = exec.message;
    switch (branch.case) {
      case "readArgs":
        finish(exec, { case: "readResult", value: await runRead(branch.value, workspace) });
        return;
      case "redactedReadArgs":
        finish(exec, {
          case: "redactedReadResult",
          value: await runRead(branch.value, workspace),
        });
        return;
      case "writeArgs":
        finish(exec, { case: "writeResult", value: await runWrite(branch.value, workspace) });
        return;
      case "deleteArgs":
        finish(exec, { case: "deleteResult", value: await runDelete(branch.value, workspace) });
        return;
      case "lsArgs":
        finish(exec, { case: "lsResult", value: await runLs(branch.value, workspace) });
        return;
      case "grepArgs":
        finish(exec, { case: "grepResult", value: await runGrep(branch.value, workspace) });
        return;
      case "diagnosticsArgs":
        finish(exec, {
          case: "diagnosticsResult",
          value: await runDiagnostics(branch.value, workspace),
        });
        return;
      case "shellArgs": {
        const shell = startShell(branch.value, workspace);
        shells.set(exec.id, shell);
        const outcome = await shell.exited;
        shells.delete(exec.id);
        finish(exec, {
          case: "shellResult",
          value: toShellResult(branch.value, shell.cwd, outcome),
        });
        return;
      }
      case "shellStreamArgs": {
        const args = branch.value;
        const event = (value: ExecReply & { case: "shellStream" }): void => reply(exec, value);
        let moved: { append(chunk: string): void } | null = null;
        let backgrounded: (() => void) | null = null;
        const wasBackgrounded = new Promise<"backgrounded">((resolve) => {
          backgrounded = () => resolve("backgrounded");
        });
        const output = (kind: "stdout" | "stderr") => (data: string) => {
          if (moved !== null) moved.append(data);
          else event({ case: "shellStream", value: { event: { case: kind, value: { data } } } });
        };
        const moveToBackground = (): boolean => {
          const registry = options.background;
          if (registry === undefined || moved !== null || !shells.has(exec.id)) return false;
          const shell = shells.get(exec.id);
          if (shell === undefined) return false;
          const adopted = registry.adopt(shell, args.command);
          moved = adopted;
          shells.delete(exec.id);
          event({
            case: "shellStream",
            value: {
              event: {
                case: "backgrounded",
                value: {
                  shellId: adopted.shellId,
                  command: args.command,
                  workingDirectory: shell.cwd,
                  ...(adopted.pid === undefined ? {} : { pid: adopted.pid }),
                },
              },
            },
          });
          streamClose(exec);
          backgrounded?.();
          return true;
        };
        const shell = startShell(
          args,
          workspace,
          { stdout: output("stdout"), stderr: output("stderr") },
          args.timeoutBehavior === TimeoutBehavior.BACKGROUND && options.background !== undefined
            ? { onTimeout: () => void moveToBackground() }
            : {},
        );
        if (shell.started) {
          shells.set(exec.id, shell);
          if (args.toolCallId !== "") toBackground.set(args.toolCallId, moveToBackground);
          event({ case: "shellStream", value: { event: { case: "start", value: {} } } });
        }
        const outcome = await Promise.race([shell.exited, wasBackgrounded]);
        toBackground.delete(args.toolCallId);
        if (outcome === "backgrounded") return;
        shells.delete(exec.id);
        if (outcome.type === "spawn_error") {
          fail(exec, `could not start the shell: ${outcome.error}`);
          return;
        }
        event({
          case: "shellStream",
          value: {
            event: {
              case: "exit",
              value: {
                code: outcome.code,
                cwd: shell.cwd,
                aborted: outcome.aborted,
                abortReason: outcome.aborted ? toAbortReason(outcome.abortReason) : undefined,
                localExecutionTimeMs: outcome.durationMs,
              },
            },
          },
        });
        streamClose(exec);
        return;
      }
      case "backgroundShellSpawnArgs":
        if (options.background === undefined) break;
        finish(exec, {
          case: "backgroundShellSpawnResult",
          value: options.background.spawn(branch.value, workspace),
        });
        return;
      case "writeShellStdinArgs":
        if (options.background === undefined) break;
        finish(exec, {
          case: "writeShellStdinResult",
          value: options.background.write(branch.value),
        });
        return;
      case "listMcpResourcesExecArgs":
        finish(exec, {
          case: "listMcpResourcesExecResult",
          value: runListResources(branch.value, options.mcpServers ?? []),
        });
        return;
      case "readMcpResourceExecArgs":
        finish(exec, {
          case: "readMcpResourceExecResult",
          value: runReadResource(branch.value, options.mcpServers ?? []),
        });
        return;
      case "mcpStateExecArgs":
        finish(exec, {
          case: "mcpStateExecResult",
          value: runMcpState(branch.value, options.mcpServers ?? []),
        });
        return;
      case "forceBackgroundShellArgs": {
        const move = toBackground.get(branch.value.toolCallId);
        finish(exec, {
          case: "forceBackgroundShellResult",
          value: {
            status:
              move?.() === true
                ? ForceBackgroundShellStatus.ACCEPTED
                : ForceBackgroundShellStatus.NOT_FOUND,
          },
        });
        return;
      }
      default:
        break;
    }
    fail(exec, `the test client does not run ${branch.case ?? "unknown"} execs`);
  };

  return {
    run(exec) {
      const task = execute(exec).catch((error: unknown) => {
        fail(exec, errorMessage(error));
      });
      inFlight.add(task);
      void task.finally(() => inFlight.delete(task));
      return task;
    },
    abort(id) {
      const shell = shells.get(id);
      if (shell === undefined) return false;
      shell.abort();
      return true;
    },
    async stop() {
      for (const shell of shells.values()) shell.abort();
      await Promise.all([...inFlight]);
    },
    get running() {
      return inFlight.size;
    },
  };
}
