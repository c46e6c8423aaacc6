/** One section of the system prompt (prompt/index.ts puts them together per mode). */
export interface PromptSection {
  /** A short id, for tests and reviews. */
  readonly id: string;
  /** Why the section is in the prompt: the behaviour it is there to produce. */
  readonly why: string;
  /** The text, fixed: never per-turn data, so a mode's prompt is byte-stable. */
  readonly text: string;
}
