/**
 * A model's compaction settings (docs/compaction.md): whether the conversation is compacted
 * automatically when it outgrows the window, at which fraction of it, by which model, and how
 * many recent messages stay verbatim. Plus the calibration of the tokenizer-free estimate per API
 * kind (characters per token of typical agent traffic: code, JSON and English prose). Keyed by the
 * API kind's name (config.ts `ApiKind`, not imported: config.ts imports this file).
 */
export interface ModelCompaction {
  /** Compact automatically (before a call over the threshold, and after a context-length error). */
  readonly auto: boolean;
  /** Fraction of `contextWindow - maxOutput` above which a call is preceded by a compaction. */
  readonly threshold: number;
  /** The configured model that writes summaries; null: the model itself. */
  readonly summaryModel: string | null;
  /** Messages kept verbatim after the summary (at least; a tool exchange is never split). */
  readonly tailMessages: number;
  /** Characters per token of the estimate. */
  readonly charsPerToken: number;
}

/** The plain-object form of a model entry's `compaction` field. */
export interface ModelCompactionInput {
  readonly auto?: boolean;
  readonly threshold?: number;
  readonly summaryModel?: string;
  readonly tailMessages?: number;
}

/**
 * Characters per token by API kind. OpenAI's o200k and Gemini's tokenizers give about 4 on code
 * and prose; Anthropic's gives fewer (about 3.5); an OpenAI-compatible server may run any model,
 * so it gets the conservative value.
 */
export const CHARS_PER_TOKEN: Readonly<Record<string, number>> = {
  "openai-chat": 4,
  "openai-responses": 4,
  anthropic: 3.5,
  gemini: 4,
  "openai-compatible": 3.5,
  demo: 4,
};

export const DEFAULT_COMPACTION_THRESHOLD = 0.8;
export const DEFAULT_TAIL_MESSAGES = 6;

export class CompactionConfigError extends Error {
  readonly field: string;
  readonly problem: string;
  constructor(field: string, problem: string) {
    super(`${field}: ${problem}`);
    this.field = field;
    this.problem = problem;
  }
}

const FIELDS = new Set(["auto", "threshold", "summaryModel", "tailMessages"]);

/**
 * Reads a model entry's `compaction` field (absent: the defaults).
 * @throws CompactionConfigError naming the field.
 */
export function toModelCompaction(value: unknown, field: string, api: string): ModelCompaction {
  const defaults: ModelCompaction = {
    auto: true,
    threshold: DEFAULT_COMPACTION_THRESHOLD,
    summaryModel: null,
    tailMessages: DEFAULT_TAIL_MESSAGES,
    charsPerToken: CHARS_PER_TOKEN[api] ?? 4,
  };
  if (value === undefined) return defaults;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new CompactionConfigError(field, "must be an object");
  }
  const entry = value as Record<string, unknown>;
  for (const key of Object.keys(entry)) {
    if (!FIELDS.has(key)) throw new CompactionConfigError(`${field}.${key}`, "unknown field");
  }
  const { auto, threshold, summaryModel, tailMessages } = entry;
  if (auto !== undefined && typeof auto !== "boolean") {
    throw new CompactionConfigError(`${field}.auto`, "must be true or false");
  }
  if (
    threshold !== undefined &&
    (typeof threshold !== "number" || !(threshold > 0 && threshold <= 1))
  ) {
    throw new CompactionConfigError(`${field}.threshold`, "must be a number in (0, 1]");
  }
  if (summaryModel !== undefined && (typeof summaryModel !== "string" || summaryModel === "")) {
    throw new CompactionConfigError(`${field}.summaryModel`, "must be a configured model's name");
  }
  if (
    tailMessages !== undefined &&
    (typeof tailMessages !== "number" || !Number.isSafeInteger(tailMessages) || tailMessages < 0)
  ) {
    throw new CompactionConfigError(`${field}.tailMessages`, "must be a non-negative integer");
  }
  return {
    auto: auto ?? defaults.auto,
    threshold: threshold ?? defaults.threshold,
    summaryModel: summaryModel ?? null,
    tailMessages: tailMessages ?? defaults.tailMessages,
    charsPerToken: defaults.charsPerToken,
  };
}
