/**
 * `cursor-byok usage`: the dashboard's usage figures (docs/dashboard.md) as a table by day and
 * model, for people who live in a terminal. It reads the database the server writes; it never
 * creates one (no database yet: nothing to show).
 */
import { toDefaultConfigPath } from "../config/index.ts";
import type { UsageRow } from "../store/index.ts";
import { CONFIG_OPTION, HELP_OPTION, parseFlags, toOverrides, toStringFlag } from "./args.ts";
import type { Command } from "./command.ts";
import { toTable } from "./format.ts";
import { openReadingStore } from "./open-store.ts";
import { loadSettings } from "./settings.ts";
import { UsageError } from "./usage-error.ts";

const OPTIONS = {
  ...HELP_OPTION,
  ...CONFIG_OPTION,
  "data-dir": { type: "string" },
  days: { type: "string" },
  from: { type: "string" },
  to: { type: "string" },
  json: { type: "boolean" },
} as const;

const DEFAULT_DAYS = 30;
const DAY_MS = 86_400_000;

export const USAGE_COMMAND: Command = {
  name: "usage",
  summary: "tokens, cache hits and cost by day and model (what the dashboard shows)",
  help: (io) =>
    [
      "Usage: cursor-byok usage [options]",
      "",
      "Prints the tokens, prompt-cache reads and writes, and cost (USD, from the model prices)",
      "of every committed model call, by UTC day, provider and model, with totals. The same",
      "figures as the dashboard's usage page (/ui/ on the server's address).",
      "",
      "Options:",
      `  --days <n>         the last n days, today included (default ${DEFAULT_DAYS})`,
      "  --from <YYYY-MM-DD> first day (instead of --days)",
      "  --to <YYYY-MM-DD>   last day (default today)",
      "  --data-dir <dir>   where the database lives (data.directory)",
      `  --config <file>    the configuration file (default ${toDefaultConfigPath(io)},`,
      "                     or CURSOR_BYOK_CONFIG)",
      "  --json             the rows as one JSON array",
      "  -h, --help         show this help",
      "",
    ].join("\n"),
  async run(args, io) {
    const { values } = parseFlags(args, OPTIONS);
    const config = loadSettings(toStringFlag(values, "config"), toOverrides(values), io);
    const range = toRange(values, Date.now());
    // Read-only: a running server may be using the database, and an older one must not find it
    // upgraded under it; the server upgrades it when it starts.
    const opened = await openReadingStore(config);
    if (opened === null) {
      io.stdout.write(`No database yet at ${config.databasePath}: no model call was made.\n`);
      return 0;
    }
    let rows: UsageRow[];
    try {
      rows = await opened.store.listUsage(range);
    } finally {
      await opened.close();
    }
    if (values.json === true) {
      io.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
      return 0;
    }
    io.stdout.write(toUsageText(rows, range));
    return 0;
  },
};

interface Range {
  readonly fromDay: string;
  readonly toDay: string;
}

function toRange(values: Record<string, unknown>, now: number): Range {
  const day = (name: string): string | undefined => {
    const value = values[name];
    if (value === undefined) return undefined;
    // A calendar day: the form alone would let 2024-13-45 through.
    if (
      typeof value !== "string" ||
      !/^\d{4}-\d{2}-\d{2}$/.test(value) ||
      Number.isNaN(Date.parse(`${value}T00:00:00Z`)) ||
      toDayText(Date.parse(`${value}T00:00:00Z`)) !== value
    ) {
      throw new UsageError(`--${name} must be a day written YYYY-MM-DD, not ${String(value)}`);
    }
    return value;
  };
  const toDay = day("to") ?? toDayText(now);
  const from = day("from");
  if (from !== undefined) {
    if (values.days !== undefined) throw new UsageError("use --days or --from, not both");
    if (from > toDay) throw new UsageError(`--from ${from} is after --to ${toDay}`);
    return { fromDay: from, toDay };
  }
  const daysText = values.days ?? String(DEFAULT_DAYS);
  if (typeof daysText !== "string" || !/^\d{1,5}$/.test(daysText) || Number(daysText) < 1) {
    throw new UsageError("--days must be a positive integer");
  }
  const last = Date.parse(`${toDay}T00:00:00Z`);
  return { fromDay: toDayText(last - (Number(daysText) - 1) * DAY_MS), toDay };
}

function toDayText(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

/** The table, one row per day × provider × model, then the totals. */
export function toUsageText(rows: readonly UsageRow[], range: Range): string {
  const heading = `Usage from ${range.fromDay} to ${range.toDay} (UTC days; cost in USD from the model prices)\n\n`;
  if (rows.length === 0) return `${heading}No model calls in this period.\n`;
  const cells = (row: Pick<UsageRow, "calls" | "usage">): string[] => {
    const { input, output, cacheRead, cacheWrite, cost } = row.usage;
    const total = input + cacheRead + cacheWrite;
    return [
      String(row.calls),
      count(input),
      count(cacheRead),
      count(cacheWrite),
      count(output),
      total === 0 ? "-" : `${((cacheRead / total) * 100).toFixed(1)}%`,
      cost.toFixed(4),
    ];
  };
  const sum = rows.reduce(
    (acc, row) => ({
      calls: acc.calls + row.calls,
      usage: {
        input: acc.usage.input + row.usage.input,
        output: acc.usage.output + row.usage.output,
        cacheRead: acc.usage.cacheRead + row.usage.cacheRead,
        cacheWrite: acc.usage.cacheWrite + row.usage.cacheWrite,
        cost: acc.usage.cost + row.usage.cost,
      },
    }),
    { calls: 0, usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 } },
  );
  const table = toTable([
    [
      "day",
      "provider",
      "model",
      "calls",
      "input",
      "cache read",
      "cache write",
      "output",
      "cached",
      "cost",
    ],
    ...rows.map((row) => [row.day, row.provider, row.model, ...cells(row)]),
    ["total", "", "", ...cells(sum)],
  ]);
  return `${heading}${table.join("\n")}\n`;
}

function count(value: number): string {
  return value.toLocaleString("en-US");
}
