/**
 * A shell command the user ran themselves (`shell_command_action` 5, e.g. the CLI's shell mode)
 * → context for the next model call, so the model knows what the user did in the workspace.
 * The action carries the command and the client's exec id, not the output; the supplement says
 * so rather than guess.
 */
import type { ContextSupplement } from "../../loop/types.ts";
import { tag } from "./context-tag.ts";
import { truncateMiddle } from "./tools/text.ts";

export interface UserCommand {
  readonly command: string;
  /** The client's exec id for the command: one supplement per run, even of the same command. */
  readonly execID: string;
}

export function toUserCommandSupplement(run: UserCommand, index: number): ContextSupplement {
  return {
    key: `user-command:${run.execID || index}`,
    text: tag(
      "user_shell_command",
      {},
      `The user ran this command in their terminal (its output was not sent to the server):\n` +
        truncateMiddle(run.command, 10_000),
    ),
  };
}
