/**
 * Per-call model options (what the client's model picker chose for a turn) and what each
 * configured model supports of them.
 *
 * - `thinking` on/off and `effort`: mapped to the provider's reasoning settings by pi-ai's
 *   unified `reasoning` level (OpenAI `reasoning_effort` / Responses `reasoning.effort`,
 *   Anthropic thinking budget or effort, Gemini `thinkingConfig`), clamped to the levels the
 *   model accepts (`getSupportedThinkingLevels`). Only for reasoning models; ignored otherwise.
 * - `maxMode`: the model's larger limits (`maxMode` in its configuration: context window and
 *   output tokens), where it has them; ignored otherwise.
 *
 * Applying options gives another `ModelConfig`, so the rest of the layer (pi-ai model, request
 * options, limits) reads one value.
 */
import { clampThinkingLevel, getSupportedThinkingLevels } from "@earendil-works/pi-ai";
import type { ModelConfig, ThinkingLevel } from "./config.ts";
import { toPiModel } from "./pi-model.ts";

/** A reasoning effort: any thinking level but `off`. */
export type Effort = Exclude<ThinkingLevel, "off">;

export interface ModelOptions {
  /** `false`: no reasoning for this call; `true`: reasoning on (at `effort`, else the model's
   * configured level, else `medium`). Absent: as configured. */
  readonly thinking?: boolean;
  readonly effort?: Effort;
  /** Use the model's larger context and output limits, where configured. */
  readonly maxMode?: boolean;
}

/** What a model supports of the options, for the model list. */
export interface ModelOptionSupport {
  /** Reasoning can be turned on and off. */
  readonly thinking: boolean;
  /** The efforts it accepts, lowest first (empty when it does not reason). */
  readonly efforts: readonly Effort[];
  /** It has larger limits for max mode. */
  readonly maxMode: boolean;
  /** Several tool calls in one response are asked for (`parallel_tool_calls`) or allowed. */
  readonly parallelToolCalls: boolean;
}

/** `config` as one call with `options` runs it. */
export function applyModelOptions(
  config: ModelConfig,
  options: ModelOptions | undefined,
): ModelConfig {
  if (options === undefined) return config;
  const limits =
    options.maxMode === true && config.maxMode !== null
      ? { contextWindow: config.maxMode.contextWindow, maxOutput: config.maxMode.maxOutput }
      : {};
  return { ...config, ...limits, thinking: toThinking(config, options) };
}

function toThinking(config: ModelConfig, options: ModelOptions): ThinkingLevel {
  if (!config.reasoning || options.thinking === false) return "off";
  const wanted: ThinkingLevel =
    options.effort ??
    (config.thinking !== "off" ? config.thinking : options.thinking === true ? "medium" : "off");
  if (wanted === "off") return "off";
  return clampThinkingLevel(toPiModel(config), wanted) as ThinkingLevel;
}

export function toModelOptionSupport(config: ModelConfig): ModelOptionSupport {
  const efforts = config.reasoning
    ? (getSupportedThinkingLevels(toPiModel(config)).filter((level) => level !== "off") as Effort[])
    : [];
  return {
    thinking: config.reasoning,
    efforts,
    maxMode: config.maxMode !== null,
    parallelToolCalls: true,
  };
}
