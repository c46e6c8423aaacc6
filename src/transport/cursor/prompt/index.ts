/**
 * The system prompt, one fixed text per mode, assembled from one file per section (each file says
 * why its section is there). It never contains per-turn data (paths, dates, rules, model names):
 * those arrive as context supplements appended to history, so the prompt, and with it the
 * provider's cached prefix, is byte-identical across every turn of a mode.
 *
 * Sections that speak of changing the workspace (changing code, git, long-running commands)
 * appear only in modes that can change it. A change to any text here changes the pinned digests in prompt.test.ts and
 * resets every provider cache: make it deliberately.
 */
import type { Mode } from "../mode.ts";
import { answers } from "./answers.ts";
import { changingCode } from "./changing-code.ts";
import { context } from "./context.ts";
import { git } from "./git.ts";
import { identity } from "./identity.ts";
import { longRunning } from "./long-running.ts";
import { modeAgent } from "./mode-agent.ts";
import { modeAsk } from "./mode-ask.ts";
import { modeDebug } from "./mode-debug.ts";
import { modePlan } from "./mode-plan.ts";
import { safety } from "./safety.ts";
import { toolUse } from "./tool-use.ts";
import type { PromptSection } from "./types.ts";
import { workingMethod } from "./working-method.ts";

export type { PromptSection };

const READING: readonly PromptSection[] = [identity, context, workingMethod, toolUse, safety];

/** The sections of each mode's prompt, in order. */
export const PROMPT_SECTIONS: Readonly<Record<Mode, readonly PromptSection[]>> = {
  agent: [...READING, changingCode, git, longRunning, answers, modeAgent],
  ask: [...READING, answers, modeAsk],
  plan: [...READING, answers, modePlan],
  debug: [...READING, changingCode, git, longRunning, answers, modeDebug],
};

/**
 * Built once per mode: every conversation in a mode holds the same string instance, not a copy of
 * its own (memory per open stream).
 */
const SYSTEM_PROMPTS = new Map<Mode, string>();

export function toSystemPrompt(mode: Mode): string {
  let prompt = SYSTEM_PROMPTS.get(mode);
  if (prompt === undefined) {
    prompt = PROMPT_SECTIONS[mode].map((section) => section.text).join("\n\n");
    SYSTEM_PROMPTS.set(mode, prompt);
  }
  return prompt;
}
