/**
 * `cursor-byok models`: the models Cursor will see, in offer order (the first is the default),
 * with the upstream provider and model, context window, thinking level, price, where the key
 * comes from, the fallbacks, and — when the configured server runs — each model's health there
 * (README "Model routing"; the server's `/ui/api/models`). Keys are never printed.
 */
import {
  type Config,
  type ConfiguredModel,
  ENV_SHORTCUTS,
  toConnectHost,
  toDefaultConfigPath,
} from "../config/index.ts";
import { createLLM, type ModelHealthInfo, type ModelInfo } from "../llm/index.ts";
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
      "tokens), where its key comes from and the models it falls back to. When the configured",
      "server runs, each model's health there too: healthy, failing (the last call failed) or",
      "cooling down (after repeated rate limits), and its calls in flight. Keys are never shown.",
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
    const server = await readServerHealth(config);
    const rows = infos.map((info, index) =>
      toModelRow(
        info,
        config.models[index],
        index === 0,
        io,
        server.type === "running"
          ? (server.models.find((model) => model.name === info.name)?.health ?? null)
          : null,
      ),
    );
    if (values.json === true) {
      io.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
      return 0;
    }
    io.stdout.write(toModelsText(rows, config.file, config.missingKeys, server, Date.now()));
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
  /** The models a call moves to when this one fails before its first token. */
  readonly fallbacks: readonly string[];
  readonly maxConcurrent: number | null;
  /** Its health in the running server; null when no server answered. */
  readonly health: ModelHealthInfo | null;
}

function toModelRow(
  info: ModelInfo,
  configured: ConfiguredModel | undefined,
  isDefault: boolean,
  io: CliIO,
  health: ModelHealthInfo | null,
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
    fallbacks: info.fallbacks,
    maxConcurrent: info.maxConcurrent,
    health,
  };
}

/** One model as the server's `/ui/api/models` reports it (transport/dashboard/types.ts). */
interface ServerModel {
  readonly name: string;
  readonly health: ModelHealthInfo | null;
}

type ServerHealth =
  | { readonly type: "running"; readonly url: string; readonly models: readonly ServerModel[] }
  | { readonly type: "unreachable"; readonly url: string | null; readonly problem: string };

/** The model health the configured server reports, if it runs (1 s at most). */
async function readServerHealth(config: Config): Promise<ServerHealth> {
  const { host, port, accessToken } = config.server;
  if (port === 0) return { type: "unreachable", url: null, problem: "the configured port is 0" };
  const url = `http://${toConnectHost(host)}:${port}`;
  try {
    const response = await fetch(`${url}/ui/api/models`, {
      signal: AbortSignal.timeout(1000),
      headers:
        accessToken.type === "none"
          ? {}
          : { authorization: `Bearer ${accessToken.value.reveal()}` },
    });
    if (!response.ok) {
      return { type: "unreachable", url, problem: `it answered HTTP ${response.status}` };
    }
    const body = (await response.json()) as { models?: unknown };
    if (!Array.isArray(body.models)) {
      return {
        type: "unreachable",
        url,
        problem: "it is not a cursor-byok server of this version",
      };
    }
    return {
      type: "running",
      url,
      models: body.models as readonly ServerModel[],
    };
  } catch {
    return { type: "unreachable", url, problem: "no cursor-byok server answers there" };
  }
}

/** `healthy`, `failing (rate_limited 12 s ago)`, `cooling down (41 s left)`, with calls in flight. */
export function toHealthText(health: ModelHealthInfo, now: number): string {
  const ago = (at: number) => toDuration(now - at);
  const state =
    health.state === "cooling_down" && health.coolingDownUntil !== null
      ? `cooling down (${toDuration(health.coolingDownUntil - now)} left)`
      : health.state === "failing" && health.lastFailure !== null
        ? `failing (${health.lastFailure.kind} ${ago(health.lastFailure.at)} ago)`
        : "healthy";
  const busy =
    health.maxConcurrent === null
      ? health.inFlight > 0
        ? `, ${health.inFlight} in flight`
        : ""
      : `, ${health.inFlight}/${health.maxConcurrent} busy`;
  const waiting = health.waiting > 0 ? `, ${health.waiting} waiting` : "";
  return `${state}${busy}${waiting}`;
}

function toDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 120) return `${seconds} s`;
  const minutes = Math.round(seconds / 60);
  return minutes < 120 ? `${minutes} min` : `${Math.round(minutes / 60)} h`;
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
  server: ServerHealth,
  now: number,
): string {
  // Columns only when they say something: fallbacks configured, a server that reports health.
  const withFallbacks = rows.some((row) => row.fallbacks.length > 0);
  const withHealth = server.type === "running";
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
      ...(withFallbacks ? ["FALLBACKS"] : []),
      ...(withHealth ? ["HEALTH"] : []),
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
      ...(withFallbacks ? [row.fallbacks.length === 0 ? "-" : row.fallbacks.join(", ")] : []),
      ...(withHealth ? [row.health === null ? "-" : toHealthText(row.health, now)] : []),
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
  lines.push(
    server.type === "running"
      ? `Health as the server at ${server.url} sees it now.`
      : `Health: ${server.url === null ? "" : `${server.url}: `}${server.problem}; a running server reports each model's health.`,
    "",
  );
  for (const missing of missingKeys) lines.push(`warning: ${missing.message}`);
  if (missingKeys.length > 0) lines.push("");
  return lines.join("\n");
}
