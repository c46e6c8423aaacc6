/** Small text formatting helpers for command output. */
import type { ModelConfig, ModelPrices } from "../llm/index.ts";

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function toTable(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, index) => {
      widths[index] = Math.max(widths[index] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, index) => (index === row.length - 1 ? cell : cell.padEnd(widths[index] ?? 0)))
      .join("  ")
      .trimEnd(),
  );
}

/** 128000 → `128k`, 1048576 → `1.05M`. */
export function toTokenCount(tokens: number): string {
  if (tokens >= 1_000_000) return `${trimNumber(tokens / 1_000_000, 2)}M`;
  if (tokens >= 1_000) return `${trimNumber(tokens / 1_000, 0)}k`;
  return String(tokens);
}

/** `in 3 / out 15 / cached 0.3` (USD per million tokens), or `free`. */
export function toPriceText(prices: ModelPrices): string {
  if (prices.input === 0 && prices.output === 0 && prices.cacheRead === 0) return "free";
  const parts = [`in ${trimNumber(prices.input, 4)}`, `out ${trimNumber(prices.output, 4)}`];
  if (prices.cacheRead > 0) parts.push(`cached ${trimNumber(prices.cacheRead, 4)}`);
  return parts.join(" / ");
}

/** Where a model's key comes from, never the key: `OPENAI_API_KEY (set)`, `apiKey in the config file`. */
export function toKeySourceText(
  config: Pick<ModelConfig, "apiKey">,
  env: Readonly<Record<string, string | undefined>>,
): string {
  switch (config.apiKey.type) {
    case "env": {
      const set = (env[config.apiKey.name]?.trim() ?? "") !== "";
      return `${config.apiKey.name} (${set ? "set" : "NOT SET"})`;
    }
    case "value":
      return "apiKey in the config file";
    case "none":
      return "none needed";
  }
}

/** A URL without query string or fragment, which may carry credentials. */
export function toDisplayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname === "/" ? "" : parsed.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}

function trimNumber(value: number, digits: number): string {
  return String(Number(value.toFixed(digits)));
}
