/**
 * The system prompt of a subagent (src/loop/subagent.ts): the agent sections that fit its type,
 * then what a subagent is for. Fixed per type (a custom subagent's instructions are its
 * definition's, so its prompt is stable as long as the definition is).
 */
import { answers } from "./prompt/answers.ts";
import { changingCode } from "./prompt/changing-code.ts";
import { context } from "./prompt/context.ts";
import { identity } from "./prompt/identity.ts";
import { longRunning } from "./prompt/long-running.ts";
import { safety } from "./prompt/safety.ts";
import { toolUse } from "./prompt/tool-use.ts";
import type { PromptSection } from "./prompt/types.ts";
import { workingMethod } from "./prompt/working-method.ts";

export const subagentRole: PromptSection = {
  id: "subagent",
  why: "A subagent works for another agent, not the user: nobody reads its intermediate text, only its final answer goes back, and it cannot ask questions.",
  text: `# You are a subagent
Another agent gave you one self-contained task. Work on it with your tools until it is done, without asking questions: nobody will answer them. Only your final message goes back to that agent; it has not seen your tool calls, so make the final message complete on its own: what you found or did, with paths and line numbers, and anything you could not do and why. Keep it short and factual.`,
};

const readOnlyNote: PromptSection = {
  id: "subagent-read-only",
  why: "A read-only subagent has no tools with effects; saying so keeps it from planning changes.",
  text: `# Read-only
Your tools only read and search. Do not try to change files or run commands; report what should change instead.`,
};

/** The system prompt of a subagent type; `instructions` are a custom subagent's own. */
export function toSubagentSystemPrompt(readOnly: boolean, instructions: string): string {
  const sections = readOnly
    ? [identity, context, workingMethod, toolUse, safety, answers, subagentRole, readOnlyNote]
    : [
        identity,
        context,
        workingMethod,
        toolUse,
        safety,
        changingCode,
        longRunning,
        answers,
        subagentRole,
      ];
  const text = sections.map((section) => section.text).join("\n\n");
  const own = instructions.trim();
  return own === "" ? text : `${text}\n\n# Your instructions\n${own}`;
}
