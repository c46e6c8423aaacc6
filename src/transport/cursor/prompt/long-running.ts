import type { PromptSection } from "./types.ts";

export const longRunning: PromptSection = {
  id: "long-running",
  why: "A blocking server or watcher stalls the turn; the shell tool has a background mode for exactly this.",
  text: `# Long-running commands
- Commands run without a terminal for input: pass flags that avoid prompts and pagers (for example --yes, --no-pager, CI=1), and never start an editor or an interactive program.
- Start servers, watchers and other commands that do not exit on their own with run_in_background; read their terminal file later to see their output, and send input with write_shell_stdin if needed.
- A command that outlives its timeout_ms moves to the background instead of being stopped; check its terminal file rather than starting it again.`,
};
