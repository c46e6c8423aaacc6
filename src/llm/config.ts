/**
 * Model configuration: what a configured model name (the one shown in Cursor's model picker)
 * means upstream. Parsing files and environment variables is the composition root's job; this
 * file turns plain objects into validated, complete `ModelConfig`s and fails with a `ConfigError`
 * that names the offending field. Errors never contain an API key or header value.
 *
 * Defaults, in order: the plain object, then pi-ai's catalogue entry for the provider and
 * upstream id (context window, output limit, prices, reasoning support), then the API kind's and
 * the provider's defaults (base URL, API key variable). A provider's usual key variable (e.g.
 * `ANTHROPIC_API_KEY`) is only assumed when the base URL is not configured, so a key never goes
 * to an endpoint the configuration did not name it for.
 *
 * Why one file of about 520 lines: one validation of one shape (a model's configuration), field by
 * field, with the defaults it applies; the small field readers are private to it.
 */
import type { Api, Model } from "@earendil-works/pi-ai";
import { findCatalogueModel } from "./catalogue.ts";
import {
  CompactionConfigError,
  type ModelCompaction,
  type ModelCompactionInput,
  toModelCompaction,
} from "./compaction-config.ts";
import { createSecret, type Secret } from "./secret.ts";

/** The wire APIs we speak, each backed by one pi-ai API implementation. */
export const API_KINDS = [
  "openai-chat",
  "openai-responses",
  "anthropic",
  "gemini",
  "openai-compatible",
] as const;
export type ApiKind = (typeof API_KINDS)[number];

export const THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"] as const;
export type ThinkingLevel = (typeof THINKING_LEVELS)[number];

export type InputModality = "text" | "image";

/** Where a model's API key comes from. `none` is for keyless local servers (Ollama, vLLM, …). */
export type ApiKeySource =
  | { readonly type: "env"; readonly name: string }
  | { readonly type: "value"; readonly value: Secret }
  | { readonly type: "none" };

/** USD per million tokens. `tiers` (from the catalogue) price long prompts differently. */
export interface ModelPrices {
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
  readonly tiers?: readonly {
    readonly input: number;
    readonly output: number;
    readonly cacheRead: number;
    readonly cacheWrite: number;
    readonly inputTokensAbove: number;
  }[];
}

/** A complete, validated model configuration. Plain data; secrets are `Secret`s. */
export interface ModelConfig {
  /** The name Cursor shows and sends back; unique among configured models. */
  readonly name: string;
  /** Provider id, e.g. `openai`, `anthropic`, `google`, `openrouter`, `ollama`. pi-ai detects
   * dialect quirks (DeepSeek reasoning replay, OpenRouter routing) from it and the base URL. */
  readonly provider: string;
  readonly api: ApiKind;
  /** The model id sent upstream. */
  readonly upstreamId: string;
  /** Without a trailing slash. */
  readonly baseUrl: string;
  readonly apiKey: ApiKeySource;
  /** Extra request headers; values may carry credentials, so they are secrets. */
  readonly headers: Readonly<Record<string, Secret>>;
  readonly thinking: ThinkingLevel;
  readonly reasoning: boolean;
  readonly input: readonly InputModality[];
  readonly contextWindow: number;
  readonly maxOutput: number;
  readonly prices: ModelPrices;
  /** Context compaction for conversations on this model (compaction-config.ts). */
  readonly compaction: ModelCompaction;
  /** Whether pi-ai's catalogue knew this model (its defaults were used). */
  readonly catalogued: boolean;
  /** Dialect overrides handed to pi-ai as the model's `compat` (e.g. `supportsDeveloperRole`). */
  readonly compat: Readonly<Record<string, unknown>>;
  /**
   * The larger limits the model has in "max mode" (the client's model picker), e.g. a 1M-token
   * context; null when it has none (max mode then changes nothing).
   */
  readonly maxMode: { readonly contextWindow: number; readonly maxOutput: number } | null;
  /**
   * Configured model names a call moves to, in order, when this one fails before its first
   * token (429, 5xx, no connection, overloaded). Absent: none.
   */
  readonly fallbacks?: readonly string[];
  /** At most this many calls to the model at once; more wait for a free slot. Absent: no limit. */
  readonly maxConcurrent?: number;
}

/** The plain-object form accepted by `createModelConfig` (e.g. one entry of a YAML file). */
export interface ModelConfigInput {
  readonly name: string;
  readonly api: ApiKind;
  /** Upstream model id. */
  readonly model: string;
  readonly provider?: string;
  readonly baseUrl?: string;
  /** The key itself. Mutually exclusive with `apiKeyEnv`. */
  readonly apiKey?: string;
  /** Name of the environment variable holding the key, read at call time. */
  readonly apiKeyEnv?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly thinking?: ThinkingLevel;
  readonly reasoning?: boolean;
  readonly input?: readonly InputModality[];
  readonly contextWindow?: number;
  readonly maxOutput?: number;
  readonly prices?: Partial<Pick<ModelPrices, "input" | "output" | "cacheRead" | "cacheWrite">>;
  readonly compat?: Readonly<Record<string, unknown>>;
  readonly fallbacks?: readonly string[];
  readonly maxConcurrent?: number;
  readonly compaction?: ModelCompactionInput;
  /** Larger limits for max mode; each defaults to the normal one. */
  readonly maxMode?: { readonly contextWindow?: number; readonly maxOutput?: number };
}

/** A configuration value that is missing or wrong. `field` is a path such as `models[2].baseUrl`. */
export class ConfigError extends Error {
  readonly field: string;
  readonly problem: string;

  constructor(field: string, problem: string) {
    super(`${field}: ${problem}`);
    this.name = "ConfigError";
    this.field = field;
    this.problem = problem;
  }
}

interface KindDefaults {
  readonly provider: string;
  readonly baseUrl?: string;
  /** The pi-ai API implementation. */
  readonly piApi: Api;
}

const KIND_DEFAULTS: Readonly<Record<ApiKind, KindDefaults>> = {
  "openai-chat": {
    provider: "openai",
    baseUrl: "https://api.openai.com/v1",
    piApi: "openai-completions",
  },
  "openai-responses": {
    provider: "openai",
    baseUrl: "https://api.openai.com/v1",
    piApi: "openai-responses",
  },
  anthropic: {
    provider: "anthropic",
    baseUrl: "https://api.anthropic.com",
    piApi: "anthropic-messages",
  },
  gemini: {
    provider: "google",
    baseUrl: "https://generativelanguage.googleapis.com/v1beta",
    piApi: "google-generative-ai",
  },
  "openai-compatible": { provider: "openai-compatible", piApi: "openai-completions" },
};

/** Endpoints of well-known OpenAI-compatible providers, by provider id. */
const COMPATIBLE_BASE_URLS: Readonly<Record<string, string>> = {
  openrouter: "https://openrouter.ai/api/v1",
  deepseek: "https://api.deepseek.com",
  ollama: "http://127.0.0.1:11434/v1",
  lmstudio: "http://127.0.0.1:1234/v1",
  vllm: "http://127.0.0.1:8000/v1",
};

/** The usual API key variable of well-known providers. */
const PROVIDER_KEY_VARIABLES: Readonly<Record<string, string>> = {
  openai: "OPENAI_API_KEY",
  anthropic: "ANTHROPIC_API_KEY",
  google: "GEMINI_API_KEY",
  openrouter: "OPENROUTER_API_KEY",
  deepseek: "DEEPSEEK_API_KEY",
};

/** Defaults for models pi-ai's catalogue does not know. */
const UNKNOWN_MODEL_CONTEXT_WINDOW = 128_000;
const UNKNOWN_MODEL_MAX_OUTPUT = 16_384;

/** The pi-ai API implementation behind an API kind. */
export function toPiApi(kind: ApiKind): Api {
  return KIND_DEFAULTS[kind].piApi;
}

const INPUT_FIELDS = new Set([
  "name",
  "api",
  "model",
  "provider",
  "baseUrl",
  "apiKey",
  "apiKeyEnv",
  "headers",
  "thinking",
  "reasoning",
  "input",
  "contextWindow",
  "maxOutput",
  "prices",
  "compat",
  "fallbacks",
  "maxConcurrent",
  "compaction",
  "maxMode",
]);

/**
 * Validates one model entry and fills in its defaults.
 * @throws ConfigError naming the field (prefixed with `path`).
 */
export function createModelConfig(input: unknown, path = "model"): ModelConfig {
  const entry = toRecord(input, path);
  for (const key of Object.keys(entry)) {
    if (!INPUT_FIELDS.has(key)) throw new ConfigError(`${path}.${key}`, "unknown field");
  }
  const at = (field: string) => `${path}.${field}`;
  const name = requireString(entry.name, at("name"));
  const api = requireOneOf(entry.api, API_KINDS, at("api"));
  const upstreamId = requireString(entry.model, at("model"));
  const kind = KIND_DEFAULTS[api];
  const provider = optionalString(entry.provider, at("provider")) ?? kind.provider;
  const catalogue = findCatalogueModel(provider, upstreamId);

  const configuredUrl = optionalString(entry.baseUrl, at("baseUrl"));
  const baseUrl = toBaseUrl(
    configuredUrl ??
      (api === "openai-compatible" ? COMPATIBLE_BASE_URLS[provider] : undefined) ??
      (catalogue?.api === kind.piApi ? catalogue.baseUrl : undefined) ??
      kind.baseUrl,
    at("baseUrl"),
  );
  // A provider's usual key variable is used only for its own endpoint: a key is never sent to a
  // configured URL unless the configuration names it.
  const defaultKeyVariable =
    configuredUrl === undefined ? PROVIDER_KEY_VARIABLES[provider] : undefined;
  const apiKey = toApiKeySource(entry, path, defaultKeyVariable, api);

  const thinkingGiven =
    entry.thinking === undefined
      ? undefined
      : requireOneOf(entry.thinking, THINKING_LEVELS, at("thinking"));
  const reasoning =
    optionalBoolean(entry.reasoning, at("reasoning")) ??
    catalogue?.reasoning ??
    (thinkingGiven !== undefined && thinkingGiven !== "off");
  const thinking = thinkingGiven ?? (reasoning ? "medium" : "off");
  if (!reasoning && thinking !== "off") {
    throw new ConfigError(
      at("thinking"),
      "the model is not a reasoning model; set reasoning: true if it is",
    );
  }

  const contextWindow =
    optionalPositiveInteger(entry.contextWindow, at("contextWindow")) ??
    catalogue?.contextWindow ??
    UNKNOWN_MODEL_CONTEXT_WINDOW;
  const maxOutput =
    optionalPositiveInteger(entry.maxOutput, at("maxOutput")) ??
    Math.min(catalogue?.maxTokens ?? UNKNOWN_MODEL_MAX_OUTPUT, contextWindow);
  if (maxOutput > contextWindow) {
    throw new ConfigError(at("maxOutput"), `must not exceed contextWindow (${contextWindow})`);
  }

  const fallbacks = toFallbacks(entry.fallbacks, at("fallbacks"), name);
  const maxConcurrent = optionalPositiveInteger(entry.maxConcurrent, at("maxConcurrent"));
  const maxMode = toMaxMode(entry.maxMode, at("maxMode"), contextWindow, maxOutput);

  return {
    ...(fallbacks === undefined ? {} : { fallbacks }),
    ...(maxConcurrent === undefined ? {} : { maxConcurrent }),
    name,
    provider,
    api,
    upstreamId,
    baseUrl,
    apiKey,
    headers: toHeaders(entry.headers, at("headers")),
    thinking,
    reasoning,
    input: toInput(entry.input, at("input")) ?? catalogue?.input ?? ["text"],
    contextWindow,
    maxOutput,
    prices: toPrices(entry.prices, at("prices"), catalogue),
    compaction: toCompaction(entry.compaction, at("compaction"), api),
    catalogued: catalogue !== undefined,
    compat: {
      ...(catalogue?.api === kind.piApi ? (catalogue.compat ?? {}) : {}),
      ...toCompat(entry.compat, at("compat")),
    },
    maxMode,
  };
}

/** The max-mode limits: at least the normal ones, output within the context. */
function toMaxMode(
  value: unknown,
  path: string,
  contextWindow: number,
  maxOutput: number,
): ModelConfig["maxMode"] {
  if (value === undefined) return null;
  const entry = toRecord(value, path);
  for (const key of Object.keys(entry)) {
    if (key !== "contextWindow" && key !== "maxOutput") {
      throw new ConfigError(`${path}.${key}`, "unknown field");
    }
  }
  const limits = {
    contextWindow:
      optionalPositiveInteger(entry.contextWindow, `${path}.contextWindow`) ?? contextWindow,
    maxOutput: optionalPositiveInteger(entry.maxOutput, `${path}.maxOutput`) ?? maxOutput,
  };
  if (limits.contextWindow < contextWindow) {
    throw new ConfigError(
      `${path}.contextWindow`,
      `must be at least contextWindow (${contextWindow})`,
    );
  }
  if (limits.maxOutput < maxOutput) {
    throw new ConfigError(`${path}.maxOutput`, `must be at least maxOutput (${maxOutput})`);
  }
  if (limits.maxOutput > limits.contextWindow) {
    throw new ConfigError(`${path}.maxOutput`, `must not exceed the max-mode context window`);
  }
  return limits;
}

/**
 * Validates a list of model entries; names must be unique, and fallbacks must name models of
 * the list.
 * @throws ConfigError naming the field, e.g. `models[1].name`.
 */
export function createModelConfigs(input: unknown, path = "models"): readonly ModelConfig[] {
  if (!Array.isArray(input)) throw new ConfigError(path, "must be a list");
  const seen = new Set<string>();
  const configs = input.map((entry, index) => {
    const config = createModelConfig(entry, `${path}[${index}]`);
    if (seen.has(config.name)) {
      throw new ConfigError(`${path}[${index}].name`, `duplicate model name "${config.name}"`);
    }
    seen.add(config.name);
    return config;
  });
  for (const [index, config] of configs.entries()) {
    for (const [position, fallback] of (config.fallbacks ?? []).entries()) {
      if (!seen.has(fallback)) {
        throw new ConfigError(
          `${path}[${index}].fallbacks[${position}]`,
          `no model is named "${fallback}"; a fallback names another entry of ${path}`,
        );
      }
    }
  }
  configs.forEach((config, index) => {
    const summaryModel = config.compaction.summaryModel;
    if (summaryModel !== null && !seen.has(summaryModel)) {
      throw new ConfigError(
        `${path}[${index}].compaction.summaryModel`,
        "must name a configured model",
      );
    }
  });
  return configs;
}

function toFallbacks(value: unknown, field: string, name: string): readonly string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw new ConfigError(field, "must be a list of model names");
  const names = value.map((item, index) => requireString(item, `${field}[${index}]`));
  for (const [index, item] of names.entries()) {
    if (item === name)
      throw new ConfigError(`${field}[${index}]`, "a model cannot fall back to itself");
    if (names.indexOf(item) !== index)
      throw new ConfigError(`${field}[${index}]`, "is listed twice");
  }
  return names;
}

function toCompaction(value: unknown, field: string, api: ApiKind): ModelCompaction {
  try {
    return toModelCompaction(value, field, api);
  } catch (error) {
    if (error instanceof CompactionConfigError) throw new ConfigError(error.field, error.problem);
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Field readers. Messages describe the expected value and never echo the value given.
// ---------------------------------------------------------------------------------------------

function toRecord(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ConfigError(field, "must be an object");
  }
  return value as Record<string, unknown>;
}

function requireString(value: unknown, field: string): string {
  if (value === undefined) throw new ConfigError(field, "is required");
  const text = optionalString(value, field);
  if (text === undefined) throw new ConfigError(field, "is required");
  return text;
}

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.trim() === "") {
    throw new ConfigError(field, "must be a non-empty string");
  }
  return value;
}

function optionalBoolean(value: unknown, field: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "boolean") throw new ConfigError(field, "must be true or false");
  return value;
}

function optionalPositiveInteger(value: unknown, field: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
    throw new ConfigError(field, "must be a positive integer");
  }
  return value;
}

function requireOneOf<T extends string>(value: unknown, allowed: readonly T[], field: string): T {
  if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(field, `must be one of ${allowed.join(", ")}`);
  }
  return value as T;
}

function toBaseUrl(value: string | undefined, field: string): string {
  if (value === undefined) {
    throw new ConfigError(field, "is required for an openai-compatible endpoint");
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(field, "must be an absolute http(s) URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(field, "must be an absolute http(s) URL");
  }
  if (url.username !== "" || url.password !== "") {
    throw new ConfigError(field, "must not contain credentials; use apiKey or headers");
  }
  return value.replace(/\/+$/, "");
}

function toApiKeySource(
  entry: Record<string, unknown>,
  path: string,
  defaultEnv: string | undefined,
  api: ApiKind,
): ApiKeySource {
  const { apiKey, apiKeyEnv } = entry;
  if (apiKey !== undefined && apiKeyEnv !== undefined) {
    throw new ConfigError(`${path}.apiKey`, "give either apiKey or apiKeyEnv, not both");
  }
  if (apiKey !== undefined) {
    if (typeof apiKey !== "string" || apiKey.trim() === "") {
      throw new ConfigError(`${path}.apiKey`, "must be a non-empty string");
    }
    return { type: "value", value: createSecret(apiKey) };
  }
  if (apiKeyEnv !== undefined) {
    if (typeof apiKeyEnv !== "string" || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(apiKeyEnv)) {
      throw new ConfigError(`${path}.apiKeyEnv`, "must be an environment variable name");
    }
    return { type: "env", name: apiKeyEnv };
  }
  if (defaultEnv !== undefined) return { type: "env", name: defaultEnv };
  if (api === "openai-compatible") return { type: "none" };
  throw new ConfigError(`${path}.apiKey`, "is required (give apiKey or apiKeyEnv)");
}

function toHeaders(value: unknown, field: string): Readonly<Record<string, Secret>> {
  if (value === undefined) return {};
  const record = toRecord(value, field);
  const headers: Record<string, Secret> = {};
  for (const [name, headerValue] of Object.entries(record)) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      throw new ConfigError(`${field}.${name}`, "is not a valid header name");
    }
    if (typeof headerValue !== "string" || /[\r\n]/.test(headerValue)) {
      throw new ConfigError(`${field}.${name}`, "must be a single-line string");
    }
    headers[name] = createSecret(headerValue);
  }
  return headers;
}

function toInput(value: unknown, field: string): readonly InputModality[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length === 0) {
    throw new ConfigError(field, "must be a non-empty list of text, image");
  }
  const modalities = value.map((item, index) =>
    requireOneOf(item, ["text", "image"] as const, `${field}[${index}]`),
  );
  if (!modalities.includes("text")) throw new ConfigError(field, "must include text");
  return [...new Set(modalities)];
}

function toPrices(value: unknown, field: string, catalogue: Model<Api> | undefined): ModelPrices {
  const base: ModelPrices = catalogue?.cost ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  if (value === undefined) return base;
  const record = toRecord(value, field);
  const prices = {
    input: base.input,
    output: base.output,
    cacheRead: base.cacheRead,
    cacheWrite: base.cacheWrite,
  };
  for (const [key, price] of Object.entries(record)) {
    if (!(key in prices)) throw new ConfigError(`${field}.${key}`, "unknown field");
    if (typeof price !== "number" || !Number.isFinite(price) || price < 0) {
      throw new ConfigError(
        `${field}.${key}`,
        "must be a non-negative number (USD per million tokens)",
      );
    }
    prices[key as keyof typeof prices] = price;
  }
  // Explicit prices replace the catalogue's, including its long-prompt tiers.
  return prices;
}

function toCompat(value: unknown, field: string): Record<string, unknown> {
  if (value === undefined) return {};
  const record = toRecord(value, field);
  try {
    return JSON.parse(JSON.stringify(record)) as Record<string, unknown>;
  } catch {
    throw new ConfigError(field, "must be plain JSON data");
  }
}
