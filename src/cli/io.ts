/**
 * What a command touches of its process: output streams, environment, working directory,
 * platform and home directory. Commands take it as a parameter, so tests run them in-process
 * with captured output and a made-up environment.
 */
import { homedir } from "node:os";

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
}

export function createProcessIO(): CliIO {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
    platform: process.platform,
    homeDir: homedir(),
  };
}
