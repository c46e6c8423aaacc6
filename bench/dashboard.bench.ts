/**
 * `npm run bench:dashboard`: the dashboard's reads on a SQLite store holding 10,000
 * conversations (docs/dashboard.md). Each read is a fixed number of indexed statements (see
 * src/store/dashboard-queries.test.ts); this prints how long they take at this size, next to the
 * same reads at 1,000 conversations, so growth shows. Printed, not asserted.
 *
 * The store is filled through the real loop and `commitInput`, as the runner commits. Set
 * BENCH_DIR to put the file elsewhere (on tmpfs the filling is faster; reads barely differ).
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { T0, text } from "../src/loop/testing.ts";
import { openSqliteStore } from "../src/store/sqlite-store.ts";
import { answer, driveTurn } from "../src/store/testing/dashboard-contract.ts";
import type { Store } from "../src/store/types.ts";

const SIZES = [1_000, 10_000];
const RUNS = 30;
const DAY_MS = 86_400_000;
const MODELS = [
  ["anthropic", "claude-sonnet"],
  ["openai", "gpt-5"],
  ["google", "gemini-2.5-pro"],
] as const;

/**
 * A real request carries the system prompt, tool definitions and the history: every
 * `LARGE_EVERY`th conversation has three turns whose saved bodies are over 100 KB each, the rest
 * a few KB, so a conversation's detail (which must not read bodies) is measured on a large one.
 */
const LARGE_EVERY = 20;
const LARGE_BODY = "x".repeat(120_000);
const SMALL_BODY = "x".repeat(3_000);

async function fill(store: Store, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) {
    const large = i % LARGE_EVERY === 0;
    const [provider, model] = MODELS[i % MODELS.length] ?? MODELS[0];
    const at = T0 + (i % 90) * DAY_MS + i;
    const title =
      i % 100 === 0 ? `Fix the flaky login test ${i}` : `Refactor module ${i} and run the tests`;
    for (let turn = 0; turn < (large ? 3 : 1); turn++) {
      await driveTurn(
        store,
        `conv-${String(i).padStart(6, "0")}`,
        turn === 0 ? title : `${title}, step ${turn}`,
        [
          answer(
            [text(`Done with ${i}.`)],
            { input: 800 + (i % 50), output: 120, cacheRead: 4000, cost: 0.004 },
            at + turn,
            model,
            provider,
          ),
        ],
        { firstEventAt: at + turn + 300, requestPadding: large ? LARGE_BODY : SMALL_BODY },
      );
    }
  }
}

async function median(run: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 3; i++) await run();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    await run();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] ?? Number.NaN;
}

const directory = mkdtempSync(
  join(process.env.BENCH_DIR ?? tmpdir(), "cursor-byok-bench-dashboard-"),
);
const path = join(directory, "bench.db");
const store = openSqliteStore({ path });
try {
  let filled = 0;
  const rows: string[][] = [];
  for (const size of SIZES) {
    const start = performance.now();
    await fill(store, filled, size);
    const fillSeconds = (performance.now() - start) / 1000;
    filled = size;
    let deepCursor: string | undefined;
    for (let page = 0; page < 20; page++) {
      const next = await store.listConversations({
        limit: 50,
        ...(deepCursor ? { cursor: deepCursor } : {}),
      });
      deepCursor = next.nextCursor ?? undefined;
    }
    const first = await median(() => store.listConversations({ limit: 50 }));
    const deep = await median(() => store.listConversations({ limit: 50, cursor: deepCursor }));
    const search = await median(() =>
      store.listConversations({ search: "flaky login", limit: 50 }),
    );
    const detail = await median(() => store.readConversationDetail("conv-000500"));
    const messages = await median(() => store.listMessages("conv-000500"));
    const usage = await median(() => store.listUsage());
    const usageRows = (await store.listUsage()).length;
    rows.push([
      String(size),
      `${fillSeconds.toFixed(1)} s`,
      ms(first),
      ms(deep),
      ms(search),
      ms(detail),
      ms(messages),
      `${ms(usage)} (${usageRows} rows)`,
    ]);
  }
  const header = [
    "conversations",
    "fill",
    "list p1",
    "list p21",
    "search",
    "detail",
    "messages",
    "usage",
  ];
  const widths = header.map((name, i) =>
    Math.max(name.length, ...rows.map((row) => row[i]?.length ?? 0)),
  );
  for (const row of [header, ...rows]) {
    process.stdout.write(`${row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("  ")}\n`);
  }
  process.stdout.write(
    `\nmedian of ${RUNS} runs each; list pages of 50; database ${(statSync(path).size / 1e6).toFixed(1)} MB (${path})\n`,
  );
} finally {
  await store.close();
  rmSync(directory, { recursive: true, force: true });
}

function ms(value: number): string {
  return `${value.toFixed(2)} ms`;
}
