/**
 * Usage: tokens, cost and the cached share of input per day (charts drawn by uPlot, served
 * locally), with the numbers beside them: totals per day, per model and per provider.
 */
import { getJSON } from "./api.js";
import { h, show } from "./dom.js";
import { cachedShare, dollars, percent, tokens } from "./format.js";
import uPlot from "./vendor/uPlot.esm.js";

/** @typedef {{input: number, output: number, cacheRead: number, cacheWrite: number, cost: number}} Usage */
/** @typedef {{day: string, provider: string, model: string, calls: number, usage: Usage}} Row */

/** @param {{main: HTMLElement, live: () => boolean}} context */
export async function renderUsage(context) {
  const { rows } = /** @type {{rows: Row[]}} */ (await getJSON("/usage"));
  if (!context.live()) return undefined;
  const byDay = total(rows, (row) => row.day);
  const days = [...byDay.keys()].sort();
  const charts = h("div", { class: "charts" });
  show(
    context.main,
    h("h1", {}, "Usage"),
    rows.length === 0 ? h("p", { class: "muted" }, "No model calls yet.") : charts,
    h("h2", {}, "Per model"),
    table(total(rows, modelKey), "Model", "by-model"),
    h("h2", {}, "Per provider"),
    table(
      total(rows, (row) => row.provider),
      "Provider",
      "by-provider",
    ),
    h("h2", {}, "Per day"),
    table(byDay, "Day", "by-day"),
    h("h2", {}, "Per day and model"),
    table(
      total(rows, (row) => `${row.day} · ${row.provider} · ${row.model}`),
      "Day · provider · model",
      "by-day-model",
    ),
  );
  if (rows.length === 0) return undefined;
  const span = toSpan(days);
  const x = span.map((day) => Date.parse(`${day}T00:00:00Z`) / 1000);
  const empty = { calls: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 };
  const pick = (/** @type {(t: Totals) => number} */ f) =>
    span.map((day) => f(byDay.get(day) ?? empty));
  const width = Math.max(320, Math.min(900, charts.clientWidth || 900));
  const chart = (
    /** @type {string} */ title,
    /** @type {{label: string, stroke: string}[]} */ series,
    /** @type {number[][]} */ data,
    /** @type {(v: number) => string} */ value,
  ) =>
    new uPlot(
      {
        title,
        width,
        height: 220,
        scales: { x: { time: true, range: (_u, min, max) => [min - 43_200, max + 43_200] } },
        series: [
          {},
          ...series.map((s) => ({
            ...s,
            width: 2,
            points: { size: 6 },
            value: (/** @type {unknown} */ _u, /** @type {number | null} */ v) =>
              v === null ? "—" : value(v),
          })),
        ],
        axes: [
          {},
          {
            values: (/** @type {unknown} */ _u, /** @type {number[]} */ ticks) => ticks.map(value),
            size: 70,
          },
        ],
      },
      [x, ...data],
      charts.appendChild(h("figure", { class: "chart" })),
    );
  chart(
    "Tokens per day",
    [
      { label: "input", stroke: "#2563eb" },
      { label: "cache read", stroke: "#16a34a" },
      { label: "cache write", stroke: "#d97706" },
      { label: "output", stroke: "#9333ea" },
    ],
    [
      pick((t) => t.input),
      pick((t) => t.cacheRead),
      pick((t) => t.cacheWrite),
      pick((t) => t.output),
    ],
    (v) => tokens(v),
  );
  // Cost per day: the total, and one line per provider · model.
  const models = [...total(rows, modelKey).keys()];
  const byDayModel = total(rows, (row) => `${row.day}\n${modelKey(row)}`);
  chart(
    "Cost per day, by model",
    [
      { label: "total", stroke: "#dc2626" },
      ...models.map((label, i) => ({ label, stroke: PALETTE[i % PALETTE.length] ?? "#555" })),
    ],
    [
      pick((t) => t.cost),
      ...models.map((model) => span.map((day) => byDayModel.get(`${day}\n${model}`)?.cost ?? 0)),
    ],
    (v) => dollars(v),
  );
  // Tokens per day, one line per provider (input of every kind plus output).
  const providers = [...total(rows, (row) => row.provider).keys()];
  const byDayProvider = total(rows, (row) => `${row.day}\n${row.provider}`);
  const allTokens = (/** @type {Totals | undefined} */ t) =>
    t === undefined ? 0 : t.input + t.cacheRead + t.cacheWrite + t.output;
  chart(
    "Tokens per day, by provider",
    providers.map((label, i) => ({ label, stroke: PALETTE[i % PALETTE.length] ?? "#555" })),
    providers.map((provider) =>
      span.map((day) => allTokens(byDayProvider.get(`${day}\n${provider}`))),
    ),
    (v) => tokens(v),
  );
  chart(
    "Cached share of input",
    [{ label: "cached", stroke: "#16a34a" }],
    [pick((t) => (cachedShare(t) ?? 0) * 100)],
    (v) => `${v.toFixed(0)}%`,
  );
  return undefined;
}

/** @typedef {Usage & {calls: number}} Totals */

const DAY_MS = 86_400_000;
const PALETTE = ["#2563eb", "#16a34a", "#d97706", "#9333ea", "#0891b2", "#be185d", "#4d7c0f"];

/** @param {Row} row */
const modelKey = (row) => `${row.provider} · ${row.model}`;
/** Charts show at least this many days, so one day of data is a point on a line, not alone. */
const MIN_DAYS = 14;

/** Every day from the first (or `MIN_DAYS` before the last) to the last, gaps included. @param {string[]} days */
function toSpan(days) {
  const last = Date.parse(`${days.at(-1)}T00:00:00Z`);
  const first = Math.min(Date.parse(`${days[0]}T00:00:00Z`), last - (MIN_DAYS - 1) * DAY_MS);
  const span = [];
  for (let at = first; at <= last; at += DAY_MS) span.push(new Date(at).toISOString().slice(0, 10));
  return span;
}

/** @param {Row[]} rows @param {(row: Row) => string} key @returns {Map<string, Totals>} */
function total(rows, key) {
  const totals = new Map();
  for (const row of rows) {
    const name = key(row);
    const sum = totals.get(name) ?? {
      calls: 0,
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      cost: 0,
    };
    sum.calls += row.calls;
    sum.input += row.usage.input;
    sum.output += row.usage.output;
    sum.cacheRead += row.usage.cacheRead;
    sum.cacheWrite += row.usage.cacheWrite;
    sum.cost += row.usage.cost;
    totals.set(name, sum);
  }
  return totals;
}

/** @param {Map<string, Totals>} totals @param {string} first @param {string} id */
function table(totals, first, id) {
  const names = [
    first,
    "Calls",
    "Input",
    "Cache read",
    "Cache write",
    "Output",
    "Cached input",
    "Cost",
  ];
  return h(
    "table",
    { class: "list", id },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        names.map((name) => h("th", {}, name)),
      ),
    ),
    h(
      "tbody",
      {},
      [...totals.entries()].map(([name, t]) =>
        h(
          "tr",
          { "data-key": name },
          h("td", {}, name),
          h("td", { class: "num" }, t.calls),
          h("td", { class: "num" }, tokens(t.input)),
          h("td", { class: "num" }, tokens(t.cacheRead)),
          h("td", { class: "num" }, tokens(t.cacheWrite)),
          h("td", { class: "num" }, tokens(t.output)),
          h("td", { class: "num" }, percent(cachedShare(t))),
          h("td", { class: "num", "data-cost": "" }, dollars(t.cost)),
        ),
      ),
    ),
  );
}
