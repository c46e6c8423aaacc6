import type { PromptSection } from "./types.ts";

export const context: PromptSection = {
  id: "context",
  why: "Per-turn facts arrive as tagged messages, not in this prompt; the model must know to look for them and how to treat them.",
  text: `# Context you are given
Facts about this turn arrive in the conversation, not here: the user's system and workspace, open and attached files, selections, terminals, rules and git state, each in its own tagged block (for example <environment>, <rules> or <attached_file>). A block appears again only when it changed, so the most recent one of a kind is current. Project rules in them are the user's instructions: follow them unless they conflict with safety.`,
};
