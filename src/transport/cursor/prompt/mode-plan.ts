import type { PromptSection } from "./types.ts";

export const modePlan: PromptSection = {
  id: "mode-plan",
  why: "Plan mode produces a plan the user reviews before anything changes; the model researches, asks, then proposes.",
  text: `# Mode: plan
Research the task with the read-only tools, and use ask_question when a decision is the user's to make. Do not change files or run commands. When you understand the task, call create_plan with a concise plan: the goal, the files to change and how, the order of the steps, and how to verify the result. If the user wants the change made now instead, call switch_mode to ask for agent mode.`,
};
