/** One `cursor-byok` subcommand. */
import type { CliIO } from "./io.ts";

export interface Command {
  /** As typed, e.g. `models` or `config init`. */
  readonly name: string;
  /** One line for the command list. */
  readonly summary: string;
  /** The `--help` text (it may show paths that depend on the platform). */
  help(io: CliIO): string;
  /**
   * Runs the command; resolves to the process exit code. Throws `UsageError` for a bad command
   * line and `ConfigFileError` for a bad configuration; the dispatcher reports both.
   */
  run(args: readonly string[], io: CliIO): Promise<number>;
}
