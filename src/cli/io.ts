/**
 * What a command touches of its process: output streams, environment, working directory,
 * platform and home directory. Commands take it as a parameter, so tests run them in-process
 * with captured output and a made-up environment.
 */
import { homedir } from "node:os";
import { createInterface } from "node:readline/promises";

export interface TextOutput {
  write(text: string): void;
  /** True when a person is watching (a terminal): output may be formatted for people. */
  readonly isTTY?: boolean;
}

export interface CliIO {
  readonly stdout: TextOutput;
  readonly stderr: TextOutput;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly platform: string;
  readonly homeDir: string;
  /**
   * Asks a person a question and resolves to the answer; absent when nobody can answer (no
   * terminal on standard input), so commands that need consent must be told `--yes`.
   */
  readonly ask?: (question: string) => Promise<string>;
}

export function createProcessIO(): CliIO {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
    platform: process.platform,
    homeDir: homedir(),
    ...(process.stdin.isTTY === true ? { ask: askOnTerminal } : {}),
  };
}

async function askOnTerminal(question: string): Promise<string> {
  const terminal = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return await terminal.question(question);
  } finally {
    terminal.close();
  }
}
