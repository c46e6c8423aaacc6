/**
 * The LLM layer's entry point: configured models in, one `LLMStream` per model call out.
 *
 * `createLLM({ models })` resolves a configured model name to its provider and streams the call
 * through pi-ai, adding what our design needs on top (see README.md): snapshots, the exact
 * request body with a `beforeSend` hook, byte-identical replay, our retry policy, prompt caching
 * on by default, and errors that never throw and never show a key. With no model configured it
 * serves the built-in `demo` model.
 *
 * Why one file of about 460 lines: one model call's path (resolve, send the saved bytes, retry,
 * stream, classify the failure) reads top to bottom here; its separable parts already live
 * beside it (snapshot, retry, exact-fetch, response-stream, model-options).
 */
import {
  type Api,
  type AssistantMessage,
  type AssistantMessageEvent,
  type Model,
  normalizeContext,
  type ProviderStreams,
  type SimpleStreamOptions,
} from "@earendil-works/pi-ai";
import { withThinkingAllowed } from "./anthropic-thinking.ts";
import { toCallModel } from "./call-model.ts";
import { type ModelCompaction, toModelCompaction } from "./compaction-config.ts";
import type {
  ApiKeySource,
  ApiKind,
  InputModality,
  ModelConfig,
  ModelPrices,
  ThinkingLevel,
} from "./config.ts";
import { createDemoModel, DEMO_API, type DemoModel, type DemoOptions } from "./demo.ts";
import { toErrorMessage } from "./error-message.ts";
import { createExactFetch, type ExactFetchState, hashBody } from "./exact-fetch.ts";
import { toFailureKind } from "./failure-kind.ts";
import { createHttpFetch, envProxyGap } from "./http-fetch.ts";
import {
  createModelHealth,
  type HealthPolicy,
  type ModelHealth,
  type ModelHealthInfo,
} from "./model-health.ts";
import { type ModelOptionSupport, toModelOptionSupport } from "./model-options.ts";
import { toPiModel } from "./pi-model.ts";
import { createResponseStream, type ResponseStreamHooks } from "./response-stream.ts";
import { createRetryPolicy, type RetryPolicy } from "./retry.ts";
import { redactSecret } from "./secret.ts";
import { withAlternatingRoles, withSendableMessages } from "./sendable-turns.ts";
import { createSentPayload } from "./sent-payload.ts";
import { shareTools } from "./shared-tools.ts";
import { toStablePayload } from "./stable-payload.ts";
import { withWireToolCallIds } from "./tool-call-ids.ts";
import type { LLMCall, LLMStream } from "./types.ts";
import { withSignedCalls } from "./unsigned-calls.ts";
import { withMethods } from "./with-methods.ts";

/** What Cursor's model picker needs to know about a model. */
export interface ModelInfo {
  readonly name: string;
  readonly provider: string;
  readonly api: ApiKind | "demo";
  readonly upstreamId: string;
  readonly contextWindow: number;
  readonly maxOutput: number;
  readonly reasoning: boolean;
  readonly thinking: ThinkingLevel;
  readonly input: readonly InputModality[];
  /** USD per million tokens. */
  readonly prices: ModelPrices;
  readonly compaction: ModelCompaction;
  readonly demo: boolean;
  /** Which of the client's per-request options (model-options.ts) the model honours. */
  readonly options: ModelOptionSupport;
  /** The context window in max mode (equal to `contextWindow` when it has no max mode). */
  readonly maxModeContextWindow: number;
  /** The output limit in max mode (equal to `maxOutput` when it has no max mode). */
  readonly maxModeMaxOutput: number;
  /** Configured models a call moves to when this one fails before its first token. */
  readonly fallbacks: readonly string[];
  /** At most this many calls at once; null: no limit. */
  readonly maxConcurrent: number | null;
}

export interface CreateLLMOptions {
  readonly models: readonly ModelConfig[];
  /** Where `apiKeyEnv` keys are read, at call time. Default: `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * The HTTP client for provider calls; default the `node:http` transport (http-fetch.ts), or
   * `globalThis.fetch` when `CURSOR_BYOK_UPSTREAM_FETCH=global` is set in `env`, or when
   * NODE_USE_ENV_PROXY / --use-env-proxy asks for a proxy this Node's HTTP agents cannot take
   * (`envProxyGap`; Node < 24.5).
   */
  readonly fetch?: typeof fetch;
  /** Told once why the default transport was not taken (or an unknown switch value ignored). */
  readonly onWarning?: (message: string) => void;
  /** Overrides of the retry policy (retry.ts), e.g. an instant `sleep` in tests. */
  readonly retry?: Partial<RetryPolicy>;
  /** The demo model, served when `models` is empty; `false` never serves it. */
  readonly demo?: DemoOptions | false;
  /** Cool-down after repeated rate limits (model-health.ts); `now` is injectable for tests. */
  readonly health?: Partial<HealthPolicy>;
  /** Per-request timeout of the provider SDKs, in milliseconds (their default is 10 minutes). */
  readonly timeoutMs?: number;
}

export interface LLM {
  /** Starts a model call. Never throws: every failure is the stream's terminal `error` event. */
  stream(call: LLMCall): LLMStream;
  /** Every model that can be called, in configuration order (the demo model when none is configured). */
  listModels(): readonly ModelInfo[];
  findModel(name: string): ModelInfo | undefined;
  /** Each configured model's health now: calls in flight, cool-down, last failure. */
  health(): readonly ModelHealthInfo[];
}

/**
 * Each API's pi-ai implementation module, imported when a call first needs it: each brings its
 * provider SDK (90–160 ms and 9–14 MiB to load), so a server loads only the ones its models use.
 * Calls go to the module itself, not through pi-ai's lazy wrappers (`api/*.lazy`): those put a
 * second event stream and a forwarding loop in front of every call, ≈ 3 KiB per open call and a
 * hop per event (issue #19).
 */
const API_MODULES: Readonly<Record<ApiKind, () => Promise<ProviderStreams>>> = {
  "openai-chat": () => import("@earendil-works/pi-ai/api/openai-completions"),
  "openai-responses": () => import("@earendil-works/pi-ai/api/openai-responses"),
  anthropic: () => import("@earendil-works/pi-ai/api/anthropic-messages"),
  gemini: () => import("@earendil-works/pi-ai/api/google-generative-ai"),
  "openai-compatible": () => import("@earendil-works/pi-ai/api/openai-completions"),
};

/** The implementations imported so far (process-wide, like the modules themselves). */
const loadedApis = new Map<ApiKind, ProviderStreams>();

/** Resolves once `api`'s implementation is in `loadedApis`. */
function loadApi(api: ApiKind): Promise<void> {
  if (loadedApis.has(api)) return Promise.resolve();
  return API_MODULES[api]().then((module) => {
    loadedApis.set(api, module);
  });
}

/** `api`'s implementation; only after `loadApi(api)` has resolved. */
function loadedApi(api: ApiKind): ProviderStreams {
  const module = loadedApis.get(api);
  if (module === undefined) throw new Error(`the ${api} implementation is not loaded`);
  return module;
}

/** One `node:http` transport per process: its kept-alive connections serve every call. */
let sharedHttpFetch: typeof fetch | undefined;

/** The provider calls' transport (see `CreateLLMOptions.fetch`). */
function defaultFetch(
  env: Readonly<Record<string, string | undefined>>,
  warn: (message: string) => void,
): typeof fetch {
  const chosen = env.CURSOR_BYOK_UPSTREAM_FETCH;
  if (chosen === "global") return globalThis.fetch;
  if (chosen !== undefined && chosen !== "") {
    warn(`CURSOR_BYOK_UPSTREAM_FETCH=${JSON.stringify(chosen)} is not "global": ignored`);
  }
  const gap = envProxyGap(env);
  if (gap !== undefined) {
    warn(gap);
    return globalThis.fetch;
  }
  sharedHttpFetch ??= createHttpFetch().fetch;
  return sharedHttpFetch;
}

/** Sent as the key to keyless OpenAI-compatible servers, which ignore it (the SDK requires one). */
const NO_KEY = "no-key";
const USER_AGENT = "cursor-byok";

export function createLLM(options: CreateLLMOptions): LLM {
  const configs = new Map(options.models.map((config) => [config.name, config]));
  const demo: DemoModel | undefined =
    options.models.length === 0 && options.demo !== false
      ? createDemoModel(options.demo === undefined ? {} : options.demo)
      : undefined;
  const policy = createRetryPolicy(options.retry);
  const env = options.env ?? process.env;
  const baseFetch = options.fetch ?? defaultFetch(env, options.onWarning ?? (() => undefined));

  const infos: ModelInfo[] = options.models.map(toModelInfo);
  const health = createModelHealth(options.models, options.health);
  if (demo !== undefined) infos.push(toDemoInfo(demo));

  const stream = (call: LLMCall): LLMStream => {
    const { controller, release } = linkAbort(call.signal);
    if (demo !== undefined && call.model === demo.name) {
      return streamDemo(demo, call, controller, release);
    }
    const config = configs.get(call.model);
    if (config === undefined) {
      return failedStream(call, controller, release, `unknown model "${call.model}"`);
    }
    const refusal = health.refusal(config.name);
    if (refusal !== null) return failedStream(call, controller, release, refusal, config);
    const key: ResolvedKey =
      call.apiKey === undefined
        ? resolveApiKey(config.apiKey, env)
        : { type: "key", value: call.apiKey.reveal() };
    if (key.type === "missing") {
      return failedStream(
        call,
        controller,
        release,
        `no API key for model "${config.name}": environment variable ${key.variable} is not set`,
        config,
      );
    }
    return streamProvider(config, key.value, call, controller, release, {
      policy,
      baseFetch,
      timeoutMs: options.timeoutMs,
      health,
    });
  };

  return {
    stream,
    listModels: () => infos,
    findModel: (name) => infos.find((info) => info.name === name),
    health: () => health.snapshot(),
  };
}

interface Transport {
  readonly policy: RetryPolicy;
  readonly baseFetch: typeof fetch;
  readonly timeoutMs: number | undefined;
  readonly health: ModelHealth;
}

/** The call's own controller, aborted when the caller's signal is; `release` unlinks them. */
function linkAbort(signal: AbortSignal | undefined): {
  readonly controller: AbortController;
  readonly release: () => void;
} {
  const controller = new AbortController();
  if (signal === undefined) return { controller, release: () => undefined };
  if (signal.aborted) {
    controller.abort(signal.reason);
    return { controller, release: () => undefined };
  }
  const onAbort = () => controller.abort(signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  return { controller, release: () => signal.removeEventListener("abort", onAbort) };
}

function streamProvider(
  configured: ModelConfig,
  apiKey: string,
  call: LLMCall,
  controller: AbortController,
  release: () => void,
  { policy, baseFetch, timeoutMs, health }: Transport,
): LLMStream {
  const { config, model } = toCallModel(configured, call.options);
  const headers = Object.fromEntries(
    Object.entries(config.headers).map(([name, value]) => [name, value.reveal()]),
  );
  const secrets = toSecrets(apiKey, headers);
  const sent = createSentPayload(config.api);
  const exact = createExactFetch({
    callID: call.callID,
    model: config.name,
    baseFetch,
    policy:
      call.maxAttempts !== undefined && call.maxAttempts < policy.maxAttempts
        ? { ...policy, maxAttempts: Math.max(1, Math.floor(call.maxAttempts)) }
        : policy,
    signal: controller.signal,
    secrets,
    onBodyTaken: sent.release,
    ...(call.replay === undefined ? {} : { replayBody: call.replay.body }),
    ...(call.beforeSend === undefined ? {} : { beforeSend: call.beforeSend }),
  });
  const streamOptions: SimpleStreamOptions = {
    apiKey,
    headers,
    signal: controller.signal,
    fetch: exact.fetch,
    maxTokens: config.maxOutput,
    ...(config.thinking === "off" ? {} : { reasoning: config.thinking }),
    // Prompt caching on, with explicit values so no environment variable changes it.
    cacheRetention: "short",
    sessionId: toPromptCacheKey(call.cacheKeyFrom ?? call.conversationID),
    disableContinuation: true,
    maxRetries: 0,
    identity: { userAgent: { custom: USER_AGENT } },
    onPayload: (payload) =>
      sent.adopt(
        payload,
        withParallelToolCalls(
          config.api,
          shareTools(
            // Another model's calls: what Gemini 3 and Anthropic's thinking need for them.
            withSignedCalls(
              model,
              withThinkingAllowed(model.api, toStablePayload(model.api, payload) ?? payload),
            ),
          ),
        ),
      ),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  };
  // Read by the closure below instead of `call`: pi-ai keeps this scope for as long as the call
  // streams, and `call` holds the caller's hooks (issue #19).
  const request = call.request;
  // Started once the call's gate opens, and read as the provider pushes each event
  // (response-stream.ts `readPushed`).
  const events = () =>
    loadedApi(config.api).streamSimple(
      model,
      // Another model's tool calls get ids this one accepts (tool-call-ids.ts); blank user
      // messages and tool results get a stand-in, and on strict compatible servers so does a
      // missing reply (sendable-turns.ts).
      normalizeContext(
        withWireToolCallIds(
          model,
          withAlternatingRoles(config.api, model, withSendableMessages(request)),
        ),
      ),
      streamOptions,
    );
  const hooks: ProviderCallState = {
    controller,
    model,
    configured,
    api: config.api,
    state: exact.state,
    secrets,
    health,
    onQueued: call.onQueued,
    release,
    succeeded: false,
  };
  return createResponseStream({
    callID: call.callID,
    controller,
    events,
    hooks: withMethods(hooks, providerCallMethods),
  });
}

/**
 * A provider call's side of its response stream (its `ResponseStreamHooks`, which the stream
 * calls as methods): a plain record of its state, whose prototype `providerCallMethods` is shared
 * by every call (issue #19: seven closures per call in flight otherwise).
 */
interface ProviderCallState {
  readonly controller: AbortController;
  readonly model: Model<Api>;
  readonly configured: ModelConfig;
  readonly api: ModelConfig["api"];
  /** What the exact fetch sent so far. */
  readonly state: ExactFetchState;
  readonly secrets: readonly string[];
  readonly health: ModelHealth;
  /** Until the gate is passed (then let go: it is the caller's, issue #19). */
  onQueued: LLMCall["onQueued"];
  /** Unlinks the call's controller from the caller's signal. */
  readonly release: () => void;
  /** Whether the model's health has been told the call succeeded (its first token). */
  succeeded: boolean;
}

const providerCallMethods: ResponseStreamHooks & ThisType<ProviderCallState> = {
  toFailure(reason, message) {
    const model = this.model;
    return toErrorMessage({
      api: model.api,
      provider: model.provider,
      model: model.id,
      reason,
      errorMessage: message,
      timestamp: Date.now(),
    });
  },
  finishError(error) {
    return finishError(error, this.state, this.secrets);
  },
  exactRequest() {
    return this.state.exact;
  },
  attempts() {
    return this.state.attempts;
  },
  // Nothing is built or sent before the API's implementation is loaded (the events are read
  // after the gate) and the model has a free call slot (model-health.ts).
  gate() {
    const { health, configured, controller, onQueued } = this;
    this.onQueued = undefined;
    return loadedApis.has(this.api)
      ? health.acquire(configured.name, controller.signal, onQueued)
      : loadApi(this.api).then(() => health.acquire(configured.name, controller.signal, onQueued));
  },
  /** Reports the call's outcome to its model's health: its first token, or its failure. */
  observe(event) {
    const model = this.configured.name;
    switch (event.type) {
      case "text_delta":
      case "thinking_delta":
      case "toolcall_delta":
      case "done":
        if (!this.succeeded) this.health.succeeded(model);
        this.succeeded = true;
        return;
      case "error": {
        if (event.reason !== "error") return;
        // The delivered event: its message is already cleared of secrets (finishError).
        const message = event.error.errorMessage ?? "";
        const sent = this.state.attempts;
        const rateLimits = sent.filter((attempt) => attempt.status === 429).length;
        this.health.failed(model, toFailureKind(sent, message), message, rateLimits);
        return;
      }
      default:
        return;
    }
  },
  onEnd() {
    this.release();
  },
};

/**
 * The credentials of a call, which must not appear in what it records. Built to size: an array
 * grown by `filter` reserves room for 17 (issue #19: it is kept for the call's life).
 */
function toSecrets(apiKey: string, headers: Readonly<Record<string, string>>): string[] {
  const values = Object.values(headers);
  if (values.length === 0) return apiKey === NO_KEY ? [] : [apiKey];
  return [apiKey, ...values].filter((secret) => secret !== NO_KEY);
}

function streamDemo(
  demo: DemoModel,
  call: LLMCall,
  controller: AbortController,
  release: () => void,
): LLMStream {
  const state: ExactFetchState = { exact: undefined, attempts: [], hookFailure: undefined };
  return createResponseStream({
    callID: call.callID,
    controller,
    events: demo.events(call, controller.signal, state),
    hooks: {
      toFailure: (reason, message) =>
        toErrorMessage({
          api: DEMO_API,
          provider: demo.provider,
          model: demo.name,
          reason,
          errorMessage: message,
          timestamp: Date.now(),
        }),
      finishError: (error) => finishError(error, state, []),
      exactRequest: () => state.exact,
      attempts: () => state.attempts,
      onEnd: release,
    },
  });
}

function failedStream(
  call: LLMCall,
  controller: AbortController,
  release: () => void,
  message: string,
  config?: ModelConfig,
): LLMStream {
  const api = config === undefined ? "unknown" : toPiModel(config).api;
  const error = toErrorMessage({
    api,
    provider: config?.provider ?? "unknown",
    model: config?.upstreamId ?? call.model,
    reason: "error",
    errorMessage: message,
    timestamp: Date.now(),
  });
  async function* events(): AsyncIterable<AssistantMessageEvent> {
    yield { type: "error", reason: "error", error };
  }
  return createResponseStream({
    callID: call.callID,
    controller,
    events: events(),
    hooks: {
      toFailure: (reason, text) => ({ ...error, stopReason: reason, errorMessage: text }),
      onEnd: release,
    },
  });
}

/** The terminal error as we hand it out: the real cause of a hook failure, and no secrets. */
function finishError(
  error: AssistantMessage,
  state: ExactFetchState,
  secrets: readonly string[],
): AssistantMessage {
  let message = error.errorMessage ?? (error.stopReason === "aborted" ? "Request was aborted" : "");
  if (state.hookFailure !== undefined && error.stopReason === "error") {
    message = `beforeSend failed: ${state.hookFailure}`;
  }
  if (message === "") message = "the model call failed";
  const errorMessage = secrets.reduce((text, secret) => redactSecret(text, secret), message);
  return { ...error, errorMessage };
}

type ResolvedKey =
  | { readonly type: "key"; readonly value: string }
  | { readonly type: "missing"; readonly variable: string };

function resolveApiKey(
  source: ApiKeySource,
  env: Readonly<Record<string, string | undefined>>,
): ResolvedKey {
  switch (source.type) {
    case "value":
      return { type: "key", value: source.value.reveal() };
    case "none":
      return { type: "key", value: NO_KEY };
    case "env": {
      const value = env[source.name]?.trim();
      return value === undefined || value === ""
        ? { type: "missing", variable: source.name }
        : { type: "key", value };
    }
  }
}

/**
 * The provider prompt-cache key of a conversation (OpenAI `prompt_cache_key`, session affinity
 * headers): the same for all its calls, 36 characters, and not the conversation id itself.
 */
export function toPromptCacheKey(conversationID: string): string {
  return `cbk-${hashBody(conversationID).slice(0, 32)}`;
}

function toModelInfo(config: ModelConfig): ModelInfo {
  return {
    name: config.name,
    provider: config.provider,
    api: config.api,
    upstreamId: config.upstreamId,
    contextWindow: config.contextWindow,
    maxOutput: config.maxOutput,
    reasoning: config.reasoning,
    thinking: config.thinking,
    input: config.input,
    prices: config.prices,
    compaction: config.compaction,
    demo: false,
    options: toModelOptionSupport(config),
    maxModeContextWindow: config.maxMode?.contextWindow ?? config.contextWindow,
    maxModeMaxOutput: config.maxMode?.maxOutput ?? config.maxOutput,
    fallbacks: config.fallbacks ?? [],
    maxConcurrent: config.maxConcurrent ?? null,
  };
}

function toDemoInfo(demo: DemoModel): ModelInfo {
  return {
    name: demo.name,
    provider: demo.provider,
    api: "demo",
    upstreamId: demo.name,
    contextWindow: demo.contextWindow,
    maxOutput: demo.maxOutput,
    reasoning: false,
    thinking: "off",
    input: ["text"],
    prices: demo.prices,
    // The demo model answers from a script: it cannot write summaries.
    compaction: { ...toModelCompaction(undefined, "demo", "openai-chat"), auto: false },
    demo: true,
    options: { thinking: false, efforts: [], maxMode: false, parallelToolCalls: true },
    maxModeContextWindow: demo.contextWindow,
    maxModeMaxOutput: demo.maxOutput,
    fallbacks: [],
    maxConcurrent: null,
  };
}

/**
 * Asks OpenAI (Chat Completions and Responses) for several tool calls per response when the
 * request offers tools: an agent reads several files in one step, and the loop runs read-only
 * calls together (src/loop/tool-batch.ts). Anthropic and Gemini allow parallel calls by default;
 * other OpenAI-compatible servers do not all accept the field, so they get none.
 */
function withParallelToolCalls(api: ApiKind, payload: unknown): unknown {
  if (api !== "openai-chat" && api !== "openai-responses") return payload;
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return payload;
  const body = payload as Record<string, unknown>;
  if (!Array.isArray(body.tools) || body.tools.length === 0) return payload;
  return { ...body, parallel_tool_calls: true };
}
