/**
 * Test helpers for the command line: an in-process IO that captures output, the real
 * `cursor-byok` as a subprocess (on this Node, never the machine's `node`), a running `serve`
 * subprocess, a temporary home directory, and a fake OpenAI-compatible provider on 127.0.0.1.
 * Everything is bounded in time and cleaned up by its owner.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { CliIO } from "./io.ts";

export const MAIN = path.resolve(import.meta.dirname, "..", "main.ts");
// Generous: a loaded 2-core machine can take many seconds to start a process; this only bounds a failure.
const PROCESS_LIMIT_MS = 60_000;

export interface TestIO extends CliIO {
  out(): string;
  err(): string;
}

export function createTestIO(options: {
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly home: string;
  readonly cwd?: string;
}): TestIO {
  let out = "";
  let err = "";
  return {
    stdout: {
      write: (text: string) => {
        out += text;
      },
      isTTY: false,
    },
    stderr: {
      write: (text: string) => {
        err += text;
      },
      isTTY: false,
    },
    env: options.env ?? {},
    cwd: options.cwd ?? options.home,
    platform: "linux",
    homeDir: options.home,
    out: () => out,
    err: () => err,
  };
}

/** A temporary home with XDG directories inside it; `env` has no provider keys. */
export interface TempHome {
  readonly dir: string;
  readonly env: Readonly<Record<string, string>>;
  readonly configPath: string;
  readonly databasePath: string;
  cleanup(): void;
}

export function createTempHome(): TempHome {
  const dir = mkdtempSync(path.join(tmpdir(), "cursor-byok-cli-"));
  return {
    dir,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: dir,
      XDG_CONFIG_HOME: path.join(dir, "config"),
      XDG_DATA_HOME: path.join(dir, "data"),
    },
    configPath: path.join(dir, "config", "cursor-byok", "config.yaml"),
    databasePath: path.join(dir, "data", "cursor-byok", "cursor-byok.db"),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface ProcessResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `cursor-byok <args>` to completion. */
export function runCliProcess(
  args: readonly string[],
  options: { readonly env: Readonly<Record<string, string>>; readonly cwd?: string },
): Promise<ProcessResult> {
  const child = spawn(process.execPath, [MAIN, ...args], {
    env: options.env,
    cwd: options.cwd ?? options.env.HOME,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output = collect(child);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`cursor-byok ${args.join(" ")} did not finish:\n${output.text()}`));
    }, PROCESS_LIMIT_MS);
    child.once("error", reject);
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout: output.stdout(), stderr: output.stderr() });
    });
  });
}

export interface ServeProcess {
  readonly url: string;
  readonly child: ChildProcess;
  output(): string;
  /** Sends `signal` (default SIGTERM) and waits for the exit. Safe to call twice. */
  stop(signal?: NodeJS.Signals): Promise<ProcessResult>;
}

/** Starts `cursor-byok serve <args>` and resolves once it prints the address it serves on. */
export function startServeProcess(
  args: readonly string[],
  options: { readonly env: Readonly<Record<string, string>> },
): Promise<ServeProcess> {
  const child = spawn(process.execPath, [MAIN, "serve", ...args], {
    env: options.env,
    cwd: options.env.HOME,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output = collect(child);
  const exited = new Promise<ProcessResult>((resolve) => {
    child.once("close", (code, signal) =>
      resolve({ code, signal, stdout: output.stdout(), stderr: output.stderr() }),
    );
  });
  const stop = async (signal: NodeJS.Signals = "SIGTERM"): Promise<ProcessResult> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    const timer = setTimeout(() => child.kill("SIGKILL"), PROCESS_LIMIT_MS);
    const result = await exited;
    clearTimeout(timer);
    return result;
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`serve did not start:\n${output.text()}`));
    }, PROCESS_LIMIT_MS);
    // Not a terminal here, so the banner goes to stderr (stdout carries JSON log lines only).
    const onData = () => {
      const match = /serving on (http:\/\/\S+)/.exec(output.stderr());
      if (match?.[1] === undefined) return;
      clearTimeout(timer);
      child.stderr?.off("data", onData);
      resolve({ url: match[1], child, output: output.text, stop });
    };
    child.stderr?.on("data", onData);
    void exited.then((result) => {
      clearTimeout(timer);
      reject(new Error(`serve exited (${result.code}) before serving:\n${output.text()}`));
    });
  });
}

function collect(child: ChildProcess) {
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  return {
    stdout: () => stdout,
    stderr: () => stderr,
    text: () => `--- stdout\n${stdout}--- stderr\n${stderr}`,
  };
}

/** What the fake provider answers to one request. */
export type FakeReply =
  | { readonly type: "sse"; readonly body: string }
  | { readonly type: "json"; readonly status: number; readonly body: unknown };

export interface FakeProviderRequest {
  readonly headers: IncomingMessage["headers"];
  readonly body: Record<string, unknown>;
}

export interface FakeProvider {
  /** e.g. `http://127.0.0.1:4321/v1` */
  readonly baseUrl: string;
  readonly requests: readonly FakeProviderRequest[];
  close(): Promise<void>;
}

/** An OpenAI Chat Completions endpoint on 127.0.0.1 answering with `reply(request)`. */
export async function startFakeProvider(
  reply: (request: FakeProviderRequest) => FakeReply,
): Promise<FakeProvider> {
  const requests: FakeProviderRequest[] = [];
  const server: Server = createServer((request, response) => {
    let text = "";
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => {
      text += chunk;
    });
    request.on("end", () => {
      const received = {
        headers: request.headers,
        body: JSON.parse(text === "" ? "{}" : text) as Record<string, unknown>,
      };
      requests.push(received);
      const answer = reply(received);
      if (answer.type === "sse") {
        response.writeHead(200, { "content-type": "text/event-stream" });
        response.end(answer.body);
      } else {
        response.writeHead(answer.status, { "content-type": "application/json" });
        response.end(JSON.stringify(answer.body));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
