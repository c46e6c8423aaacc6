/**
 * Environment shortcuts: a provider's usual API key variable alone makes a short list of that
 * provider's current well-known models available, with context windows, output limits, prices
 * and reasoning support from pi-ai's catalogue. Each model reads its key from that variable at
 * call time. The list is curated, not the whole catalogue: a model picker with hundreds of
 * entries helps nobody. A configuration file adds any other model.
 */
import { createModelConfig, type ModelConfig, type ModelConfigInput } from "../llm/index.ts";

export interface EnvShortcut {
  /** The variable whose presence enables the provider, e.g. `OPENAI_API_KEY`. */
  readonly variable: string;
  /** Shown to users, e.g. `OpenAI`. */
  readonly label: string;
  /** In the order they are offered; the first is the provider's default. */
  readonly models: readonly Omit<ModelConfigInput, "apiKey" | "apiKeyEnv">[];
}

/** In the order providers are offered: the first model of the first provider with a key is the default. */
export const ENV_SHORTCUTS: readonly EnvShortcut[] = [
  {
    variable: "OPENAI_API_KEY",
    label: "OpenAI",
    models: [
      { name: "gpt-6.2-sol", api: "openai-responses", model: "gpt-6.2-sol" },
      { name: "gpt-6.1-terra", api: "openai-responses", model: "gpt-6.1-terra" },
      { name: "gpt-6-luna", api: "openai-responses", model: "gpt-6-luna" },
    ],
  },
  {
    variable: "ANTHROPIC_API_KEY",
    label: "Anthropic",
    models: [
      { name: "claude-sonnet-5-5", api: "anthropic", model: "claude-sonnet-5-5" },
      { name: "claude-opus-5-5", api: "anthropic", model: "claude-opus-5-5" },
      { name: "claude-haiku-5-5", api: "anthropic", model: "claude-haiku-5-5" },
    ],
  },
  {
    variable: "GEMINI_API_KEY",
    label: "Gemini",
    models: [
      { name: "gemini-3.1-pro-preview", api: "gemini", model: "gemini-3.1-pro-preview" },
      { name: "gemini-3.5-flash", api: "gemini", model: "gemini-3.5-flash" },
    ],
  },
  {
    variable: "OPENROUTER_API_KEY",
    label: "OpenRouter",
    models: [
      {
        name: "anthropic/claude-sonnet-5.5",
        api: "openai-compatible",
        provider: "openrouter",
        model: "anthropic/claude-sonnet-5.5",
      },
      {
        name: "openai/gpt-6.2-sol",
        api: "openai-compatible",
        provider: "openrouter",
        model: "openai/gpt-6.2-sol",
      },
      {
        name: "google/gemini-3.1-pro-preview",
        api: "openai-compatible",
        provider: "openrouter",
        model: "google/gemini-3.1-pro-preview",
      },
      {
        name: "deepseek/deepseek-v4-pro",
        api: "openai-compatible",
        provider: "openrouter",
        model: "deepseek/deepseek-v4-pro",
      },
    ],
  },
];

export interface ShortcutModel {
  readonly config: ModelConfig;
  /** The variable that enabled it (and holds its key). */
  readonly variable: string;
}

/** The shortcut models whose key variable is set (and not blank) in `env`, in offer order. */
export function toShortcutModels(
  env: Readonly<Record<string, string | undefined>>,
  shortcuts: readonly EnvShortcut[] = ENV_SHORTCUTS,
): readonly ShortcutModel[] {
  return shortcuts
    .filter((shortcut) => (env[shortcut.variable]?.trim() ?? "") !== "")
    .flatMap((shortcut) =>
      shortcut.models.map((model) => ({
        config: createModelConfig(
          { ...model, apiKeyEnv: shortcut.variable },
          `${shortcut.variable} shortcut ${model.name}`,
        ),
        variable: shortcut.variable,
      })),
    );
}
