/**
 * The configuration and pi-ai model a call runs with (`applyModelOptions`, `toPiModel`), made once
 * per configured model and options instead of in every call (issue #19): pi-ai keeps the model
 * for as long as the call streams, and building it copies the model's compat settings, inputs and
 * prices (≈ 0.3 KiB per open call, and a catalogue lookup and a `structuredClone` per call).
 *
 * Calls share the values: nothing changes them (pi-ai reads its model, never writes it).
 */
import type { Api, Model } from "@earendil-works/pi-ai";
import type { ModelConfig } from "./config.ts";
import { applyModelOptions, type ModelOptions } from "./model-options.ts";
import { toPiModel } from "./pi-model.ts";

export interface CallModel {
  /** `applyModelOptions(configured, options)`. */
  readonly config: ModelConfig;
  /** `toPiModel(config)`. */
  readonly model: Model<Api>;
}

/** Every member of `ModelOptions`, in the cache key (a new member fails to compile here). */
const OPTION_KEYS = ["thinking", "effort", "maxMode"] as const;
type Unkeyed = Exclude<keyof ModelOptions, (typeof OPTION_KEYS)[number]>;
const allKeyed: [Unkeyed] extends [never] ? true : never = true;
void allKeyed;

/** By configured model, then by options (a handful of combinations per model). */
const made = new WeakMap<ModelConfig, Map<string, CallModel>>();

export function toCallModel(configured: ModelConfig, options: ModelOptions | undefined): CallModel {
  const key =
    options === undefined ? "" : OPTION_KEYS.map((name) => String(options[name])).join("|");
  let byOptions = made.get(configured);
  if (byOptions === undefined) {
    byOptions = new Map();
    made.set(configured, byOptions);
  }
  let callModel = byOptions.get(key);
  if (callModel === undefined) {
    const config = applyModelOptions(configured, options);
    callModel = { config, model: toPiModel(config) };
    byOptions.set(key, callModel);
  }
  return callModel;
}
