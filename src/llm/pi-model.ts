/**
 * A `ModelConfig` as the pi-ai `Model` its API implementation expects.
 *
 * Besides copying the configuration, this is where our request policy is pinned per API:
 * - Anthropic: server-side message threads off. pi-ai 1.6 would otherwise send only the new
 *   messages on `api.anthropic.com` when a session id is set, which breaks "every call sends the
 *   complete request" (docs/design.md §2) and makes the saved body useless for a retry.
 * - OpenAI Chat Completions: `prompt_cache_key` always sent (pi-ai sends it only when the base URL
 *   is literally `api.openai.com`, so a proxy or a test server would lose it).
 * A model's own `compat` settings come before these defaults; the thread setting is not
 * overridable.
 */
import type { Api, Model } from "@earendil-works/pi-ai";
import { findCatalogueModel } from "./catalogue.ts";
import { type ApiKind, type ModelConfig, toPiApi } from "./config.ts";

const DEFAULT_COMPAT: Readonly<Partial<Record<ApiKind, Record<string, unknown>>>> = {
  "openai-chat": { promptCacheKeyMode: "enabled" },
};

const FORCED_COMPAT: Readonly<Partial<Record<ApiKind, Record<string, unknown>>>> = {
  anthropic: { supportsMessageThreads: false },
};

export function toPiModel(config: ModelConfig): Model<Api> {
  const catalogue = findCatalogueModel(config.provider, config.upstreamId);
  const compat = {
    ...DEFAULT_COMPAT[config.api],
    ...config.compat,
    ...FORCED_COMPAT[config.api],
  };
  const model: Model<Api> = {
    id: config.upstreamId,
    name: config.name,
    api: toPiApi(config.api),
    provider: config.provider,
    baseUrl: config.baseUrl,
    reasoning: config.reasoning,
    input: [...config.input],
    cost: structuredClone(config.prices) as Model<Api>["cost"],
    contextWindow: config.contextWindow,
    maxTokens: config.maxOutput,
    compat: compat as Model<Api>["compat"],
  };
  // The thinking map is per model, whatever API reaches it (e.g. which levels a model rejects).
  if (catalogue?.thinkingLevelMap !== undefined)
    model.thinkingLevelMap = catalogue.thinkingLevelMap;
  if (catalogue?.promptCache !== undefined) model.promptCache = catalogue.promptCache;
  return model;
}
