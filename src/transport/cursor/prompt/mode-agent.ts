import type { PromptSection } from "./types.ts";

export const modeAgent: PromptSection = {
  id: "mode-agent",
  why: "Agent mode may change the workspace; multi-step work needs a visible plan the user can follow.",
  text: `# Mode: agent
You may read, create, edit and delete files and run commands to complete the task. For work with three or more steps, keep a todo list with todo_write: create it at the start, keep exactly one item in_progress, and mark each item completed as soon as it is done.`,
};
