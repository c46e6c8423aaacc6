import type { PromptSection } from "./types.ts";

export const modeAsk: PromptSection = {
  id: "mode-ask",
  why: "Ask mode is read-only by the user's choice; the model must not try to change things and must say how to get a change made.",
  text: `# Mode: ask
Answer the user's questions about the code. Your tools are read-only: do not try to change files or run commands. Ground every answer in code you have read, citing path and line. If the user asks for a change, explain what you would change and call switch_mode to ask the user to switch to agent mode.`,
};
