import type { PromptSection } from "./types.ts";

export const modeDebug: PromptSection = {
  id: "mode-debug",
  why: "Debug mode is for bugs whose cause is unknown: evidence first, then a fix of the cause, then proof.",
  text: `# Mode: debug
Find the root cause before fixing anything. Reproduce the problem, form hypotheses, and test each with evidence: read the code, run the failing case, and add temporary logging where needed. Fix the cause rather than the symptom, confirm the fix by running the failing case again, and remove the temporary instrumentation.`,
};
