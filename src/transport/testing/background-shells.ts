/**
 * The test client's background shells, as the IDE keeps them: numbered per client, alive across
 * turns until killed or the client closes, each writing its output to
 * `<terminals folder>/<shell id>.txt` (docs/protocol.md §2.7; the folder is the run request's
 * `env.terminals_folder`). A shell gets there by `background_shell_spawn_args` (stdin open for
 * `write_shell_stdin_args`) or from the foreground: at its time-out under
 * `timeout_behavior = BACKGROUND`, or by `force_background_shell_args`.
 */
import { appendFileSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import {
  type BackgroundShellSpawnArgs,
  type BackgroundShellSpawnResult,
  BackgroundShellSpawnResultSchema,
  type WriteShellStdinArgs,
  type WriteShellStdinResult,
  WriteShellStdinResultSchema,
} from "../cursor/gen/agent/v1/exec_shell_pb.js";
import { type ShellProcess, startShell } from "./exec-shell.ts";

export interface BackgroundShell {
  readonly shellId: number;
  readonly pid: number | undefined;
  readonly file: string;
  /** Appends output to the terminal file. */
  append(chunk: string): void;
}

export interface BackgroundShells {
  readonly folder: string;
  spawn(args: BackgroundShellSpawnArgs, workspace: string): BackgroundShellSpawnResult;
  /** Takes a running foreground shell: its further output goes to the new terminal file. */
  adopt(shell: ShellProcess, command: string): BackgroundShell;
  write(args: WriteShellStdinArgs): WriteShellStdinResult;
  /** The live shell `shellId`, for tests. */
  find(shellId: number): (BackgroundShell & { readonly process: ShellProcess }) | undefined;
  /** Kills every background shell and waits for them to end. */
  closeAll(): Promise<void>;
}

export function createBackgroundShells(folder: string): BackgroundShells {
  const shells = new Map<number, BackgroundShell & { readonly process: ShellProcess }>();
  let nextID = 1;

  const register = (process: ShellProcess, command: string): BackgroundShell => {
    mkdirSync(folder, { recursive: true });
    const shellId = nextID;
    nextID += 1;
    const file = join(folder, `${shellId}.txt`);
    writeFileSync(file, `$ ${command}\n`);
    const shell = {
      shellId,
      pid: process.pid,
      file,
      process,
      append: (chunk: string) => appendFileSync(file, chunk),
    };
    shells.set(shellId, shell);
    void process.exited.then((outcome) => {
      const code = outcome.type === "exited" ? outcome.code : -1;
      appendFileSync(file, `\n[exited with code ${code}]\n`);
      shells.delete(shellId);
    });
    return shell;
  };

  return {
    folder,
    spawn(args, workspace) {
      let shell: BackgroundShell | undefined;
      const pending: string[] = [];
      const write = (chunk: string) =>
        shell === undefined ? pending.push(chunk) : shell.append(chunk);
      const process = startShell(
        { command: args.command, workingDirectory: args.workingDirectory, timeout: 0 },
        workspace,
        { stdout: write, stderr: write },
        { stdin: true },
      );
      if (!process.started) {
        return create(BackgroundShellSpawnResultSchema, {
          result: {
            case: "error",
            value: { command: args.command, workingDirectory: process.cwd, error: "spawn failed" },
          },
        });
      }
      shell = register(process, args.command);
      for (const chunk of pending.splice(0)) shell.append(chunk);
      return create(BackgroundShellSpawnResultSchema, {
        result: {
          case: "success",
          value: {
            shellId: shell.shellId,
            command: args.command,
            workingDirectory: process.cwd,
            ...(shell.pid === undefined ? {} : { pid: shell.pid }),
          },
        },
      });
    },
    adopt: register,
    write(args) {
      const shell = shells.get(args.shellId);
      if (shell === undefined) {
        return create(WriteShellStdinResultSchema, {
          result: { case: "error", value: { error: `no background shell ${args.shellId}` } },
        });
      }
      const before = statSync(shell.file).size;
      if (!shell.process.write(args.chars)) {
        return create(WriteShellStdinResultSchema, {
          result: { case: "error", value: { error: `shell ${args.shellId} does not take input` } },
        });
      }
      return create(WriteShellStdinResultSchema, {
        result: {
          case: "success",
          value: { shellId: args.shellId, terminalFileLengthBeforeInputWritten: before },
        },
      });
    },
    find: (shellId) => shells.get(shellId),
    async closeAll() {
      const running = [...shells.values()];
      for (const shell of running) shell.process.abort();
      await Promise.all(running.map((shell) => shell.process.exited));
    },
  };
}
