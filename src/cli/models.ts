/**
 * `cursor-byok models`: the models Cursor will see, in offer order (the first is the default),
 * with the upstream provider and model, context window, thinking level, price and where the
 * key comes from. Keys are never printed.
 */
import { type ConfiguredModel, ENV_SHORTCUTS, toDefaultConfigPath } from "../config/index.ts";
import { createLLM, type ModelInfo } from "../llm/index.ts";
import { CONFIG_OPTION, HELP_OPTION, parseFlags, toStringFlag } from "./args.ts";
import type { Command } from "./command.ts";
import { toDisplayUrl, toKeySourceText, toPriceText, toTable, toTokenCount } from "./format.ts";
import type { CliIO } from "./io.ts";
import { loadSettings } from "./settings.ts";

const OPTIONS = { ...HELP_OPTION, ...CONFIG_OPTION, json: { type: "boolean" } } as const;

export const MODELS_COMMAND: Command = {
  name: "models",
  summary: "list the models Cursor will see (the default first)",
  help: (io) =>
    [
      "Usage: cursor-byok models [--config <file>] [--json]",
      "",
      "Lists the models Cursor will see, in the order offered; * marks the default. For each:",
      "the upstream provider and model, context window, thinking level, price (USD per million",
      "tokens) and where its key comes from. Keys are never shown.",
      "",
      "Options:",
      `  --config <file>  the configuration file (default ${toDefaultConfigPath(io)},`,
      "                   or CURSOR_BYOK_CONFIG)",
      "  --json           one JSON array instead of a table",
      "  -h, --help       show this help",
      "",
    ].join("\n"),
  async run(args, io) {
    const { values } = parseFlags(args, OPTIONS);
    const config = loadSettings(toStringFlag(values, "config"), {}, io);
    const infos = createLLM({ models: config.models.map((model) => model.config) }).listModels();
    const rows = infos.map((info, index) =>
      toModelRow(info, config.models[index], index === 0, io),
    );
    if (values.json === true) {
      io.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
      return 0;
    }
    io.stdout.write(toModelsText(rows, config.file, config.missingKeys));
    return 0;
  },
};

/** One model as `models --json` prints it. */
export interface ModelRow {
  readonly name: string;
  readonly default: boolean;
  readonly provider: string;
  readonly api: string;
  readonly upstreamModel: string;
  readonly baseUrl: string | null;
  readonly contextWindow: number;
  readonly maxOutput: number;
  readonly reasoning: boolean;
  readonly thinking: string;
  /** The client's per-request options the model honours (thinking on/off, efforts, max mode). */
  readonly options: {
    readonly thinking: boolean;
    readonly efforts: readonly string[];
    readonly maxMode: boolean;
    readonly maxModeContextWindow: number | null;
    readonly parallelToolCalls: boolean;
  };
  readonly input: readonly string[];
  readonly prices: { input: number; output: number; cacheRead: number; cacheWrite: number };
  /** Where the key comes from, e.g. `OPENAI_API_KEY (set)`. */
  readonly key: string;
  /** `config file models[0]`, `OPENAI_API_KEY shortcut` or `built-in demo`. */
  readonly source: string;
}

function toModelRow(
  info: ModelInfo,
  configured: ConfiguredModel | undefined,
  isDefault: boolean,
  io: CliIO,
): ModelRow {
  const { prices } = info;
  return {
    name: info.name,
    default: isDefault,
    provider: info.provider,
    api: info.api,
    upstreamModel: info.upstreamId,
    baseUrl: configured === undefined ? null : toDisplayUrl(configured.config.baseUrl),
    contextWindow: info.contextWindow,
    maxOutput: info.maxOutput,
    reasoning: info.reasoning,
    thinking: info.thinking,
    options: {
      thinking: info.options.thinking,
      efforts: info.options.efforts,
      maxMode: info.options.maxMode,
      maxModeContextWindow: info.options.maxMode ? info.maxModeContextWindow : null,
      parallelToolCalls: info.options.parallelToolCalls,
    },
    input: info.input,
    prices: {
      input: prices.input,
      output: prices.output,
      cacheRead: prices.cacheRead,
      cacheWrite: prices.cacheWrite,
    },
    key: configured === undefined ? "none needed" : toKeySourceText(configured.config, io.env),
    source:
      configured === undefined
        ? "built-in demo"
        : configured.origin.type === "file"
          ? `config file ${configured.origin.field}`
          : `${configured.origin.variable} shortcut`,
  };
}

/** What the model picker may change, e.g. `effort low-high, max 1M`; `-` for nothing. */
function toOptionsText(options: ModelRow["options"]): string {
  const parts: string[] = [];
  const [lowest] = options.efforts;
  const highest = options.efforts.at(-1);
  if (lowest !== undefined && highest !== undefined) {
    parts.push(lowest === highest ? `effort ${lowest}` : `effort ${lowest}-${highest}`);
  }
  if (options.maxModeContextWindow !== null) {
    parts.push(`max ${toTokenCount(options.maxModeContextWindow)}`);
  }
  return parts.length === 0 ? "-" : parts.join(", ");
}

function toModelsText(
  rows: readonly ModelRow[],
  file: { readonly path: string; readonly exists: boolean },
  missingKeys: readonly { readonly message: string }[],
): string {
  const table = toTable([
    [
      "",
      "NAME",
      "PROVIDER",
      "UPSTREAM MODEL",
      "CONTEXT",
      "THINKING",
      "OPTIONS",
      "PRICE $/M",
      "KEY",
    ],
    ...rows.map((row) => [
      row.default ? "*" : "",
      row.name,
      row.provider,
      row.upstreamModel,
      toTokenCount(row.contextWindow),
      row.thinking,
      toOptionsText(row.options),
      toPriceText({ ...row.prices }),
      row.key,
    ]),
  ]);
  const lines = [
    `Models Cursor will see (* = default), from ${file.exists ? file.path : "environment variables (no config file)"}:`,
    "",
    ...table,
    "",
  ];
  if (rows.length === 1 && rows[0]?.source === "built-in demo") {
    const variables = ENV_SHORTCUTS.map((shortcut) => shortcut.variable).join(", ");
    lines.push(
      "No provider is configured, so only the built-in demo model answers. Set one of",
      `${variables}, or run \`cursor-byok config init\` and add a model.`,
      "",
    );
  }
  for (const missing of missingKeys) lines.push(`warning: ${missing.message}`);
  if (missingKeys.length > 0) lines.push("");
  return lines.join("\n");
}
