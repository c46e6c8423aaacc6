/**
 * `cursor-byok doctor --live`: one minimal real request per provider endpoint (models that
 * share a provider, base URL and key are one endpoint), through the same LLM layer the server
 * uses, with the model's own settings. It costs a few tokens, so it runs only when asked.
 */
import { randomUUID } from "node:crypto";
import type { Config, ConfiguredModel } from "../config/index.ts";
import { createLLM } from "../llm/index.ts";
import type { CheckResult } from "./doctor-checks.ts";
import { toDisplayUrl } from "./format.ts";

export async function checkProvidersLive(
  config: Config,
  options: {
    readonly timeoutMs: number;
    readonly env: Readonly<Record<string, string | undefined>>;
  },
): Promise<CheckResult[]> {
  if (config.models.length === 0) {
    return [{ status: "skip", name: "live", detail: "no provider configured" }];
  }
  const missing = new Set(config.missingKeys.map((key) => key.model));
  const endpoints = new Map<string, ConfiguredModel>();
  for (const model of config.models) {
    if (missing.has(model.config.name)) continue;
    const key = toEndpointKey(model);
    if (!endpoints.has(key)) endpoints.set(key, model);
  }
  const results = await Promise.all(
    [...endpoints.values()].map((model) => checkOne(model, options)),
  );
  if (missing.size > 0) {
    results.push({
      status: "skip",
      name: "live",
      detail: `not tried without a key: ${[...missing].join(", ")}`,
    });
  }
  return results;
}

function toEndpointKey({ config }: ConfiguredModel): string {
  const key =
    config.apiKey.type === "env"
      ? `env:${config.apiKey.name}`
      : config.apiKey.type === "value"
        ? `value:${config.name}`
        : "none";
  return `${config.provider}\n${config.baseUrl}\n${key}`;
}

async function checkOne(
  { config }: ConfiguredModel,
  options: {
    readonly timeoutMs: number;
    readonly env: Readonly<Record<string, string | undefined>>;
  },
): Promise<CheckResult> {
  const where = `${config.provider} at ${toDisplayUrl(config.baseUrl)} (model ${config.name})`;
  // What the server would log at warn about its transport (an ignored switch, a proxy Node
  // cannot take) is said with the result: the check went the way the server's calls go.
  const warnings: string[] = [];
  const llm = createLLM({
    models: [config],
    env: options.env,
    retry: { maxAttempts: 1 },
    onWarning: (message) => warnings.push(message),
  });
  const result = await callOnce(llm, config, where, options.timeoutMs);
  return warnings.length === 0
    ? result
    : { ...result, detail: `${result.detail} (warning: ${warnings.join("; ")})` };
}

async function callOnce(
  llm: ReturnType<typeof createLLM>,
  config: ConfiguredModel["config"],
  where: string,
  timeoutMs: number,
): Promise<CheckResult> {
  const started = performance.now();
  const stream = llm.stream({
    callID: `doctor-${randomUUID()}`,
    conversationID: `doctor-${randomUUID()}`,
    model: config.name,
    request: {
      systemPrompt: "You are a connectivity check. Answer with one word.",
      messages: [{ role: "user", content: "Reply with the word OK.", timestamp: Date.now() }],
      tools: [],
    },
    signal: AbortSignal.timeout(timeoutMs),
  });
  for await (const event of stream) {
    if (event.type === "done") {
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      return { status: "ok", name: "live", detail: `${where} answered in ${seconds} s` };
    }
    if (event.type === "error") {
      const message = event.error.errorMessage ?? "the request failed";
      return {
        status: "fail",
        name: "live",
        detail: `${where}: ${event.reason === "aborted" ? `no answer within ${timeoutMs / 1000} s` : message}`,
        hint: toLiveHint(message, config),
      };
    }
  }
  return { status: "fail", name: "live", detail: `${where}: the response ended without a result` };
}

function toLiveHint(message: string, config: ConfiguredModel["config"]): string {
  const keyName = config.apiKey.type === "env" ? config.apiKey.name : "the key in the config file";
  if (/\b(401|403)\b|unauthori[sz]ed|authentication|api key|permission/i.test(message)) {
    return `the provider refused the key: check ${keyName}`;
  }
  if (/\b404\b|not found|does not exist|unknown model/i.test(message)) {
    return `check the upstream model id (${config.upstreamId}) and the base URL`;
  }
  if (/ECONNREFUSED|ENOTFOUND|EAI_AGAIN|fetch failed|connect|network|socket/i.test(message)) {
    return `cannot reach ${toDisplayUrl(config.baseUrl)}: check the base URL and the network`;
  }
  if (/\b429\b|rate|quota|credit|billing/i.test(message)) {
    return "the provider limits this key (rate limit, quota or billing): check the account";
  }
  return "see the provider's message above";
}
