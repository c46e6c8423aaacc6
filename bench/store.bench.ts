/**
 * `npm run bench:store`: how long a commit that appends one message takes on the SQLite store,
 * and on the PostgreSQL store (a local cluster with durable settings, or
 * `CURSOR_BYOK_TEST_DATABASE_URL`; skipped with the reason when there is none), when the conversation already holds 10, 1,000 and 10,000 messages of realistic size (tool
 * results of 2–20 KB between small assistant messages). The design target is a ratio of medians
 * near 1: a commit costs O(new message), not O(history). Also how long each commit held the event
 * loop ("loop held": its busy time per commit), which every other stream of a server waits for:
 * on SQLite the whole commit, its fsync included (`node:sqlite` is synchronous). Printed, not
 * asserted.
 */
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { appendHashes, hashHistory } from "../src/loop/history-hash.ts";
import { createConversation } from "../src/loop/state.ts";
import { assistantMessage, toolCall, toolResult, userMessage } from "../src/loop/testing.ts";
import type { ConversationState, Message, TurnSettings } from "../src/loop/types.ts";
import { openPostgresStore } from "../src/store/postgres-store.ts";
import { openSqliteStore } from "../src/store/sqlite-store.ts";
import { getTestPostgres } from "../src/store/testing/postgres-server.ts";
import { createTempDirectory } from "../src/store/testing/temp-directory.ts";
import type { Store } from "../src/store/types.ts";

interface Opened {
  readonly store: Store;
  cleanup(): Promise<void>;
}
type Open = () => Promise<Opened>;

const openSqlite: Open = async () => {
  const directory = createTempDirectory("cursor-byok-bench-");
  return {
    store: openSqliteStore({ path: join(directory.path, "bench.db") }),
    async cleanup() {
      directory.remove();
    },
  };
};

const HISTORY_LENGTHS = [10, 1_000, 10_000];
const WARM_UP = 20;
const MEASURED = 300;

/** A deterministic pseudo-random sequence (LCG), so every run measures the same data. */
function createRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

/** Settings of Cursor's size: a ~20 KB system prompt and a dozen tools, stored with every commit. */
const SETTINGS: TurnSettings = {
  model: "claude-sonnet",
  systemPrompt: "You are a careful coding agent working in the user's repository.\n".repeat(300),
  tools: Array.from({ length: 12 }, (_, i) => ({
    name: `tool_${i}`,
    description: "Does one thing to the workspace and reports what happened. ".repeat(8),
    parameters: {
      type: "object",
      properties: { path: { type: "string" }, content: { type: "string" } },
      required: ["path"],
    },
  })),
};

const LINE = "export function handle(request: Request): Response { return respond(request); }\n";

/** Message `index` of a coding conversation: assistant tool calls and 2–20 KB tool results. */
function toMessage(index: number, random: () => number): Message {
  if (index === 0) return userMessage("Refactor the request handlers and run the tests.");
  const call = toolCall(`call_${Math.floor(index / 2)}`, "read", {
    path: `src/handlers/handler-${index}.ts`,
  });
  if (index % 2 === 1) {
    return assistantMessage([
      { type: "text", text: `Reading handler ${index} to see how it responds.` },
      call,
    ]);
  }
  const size = 2_048 + Math.floor(random() * 18_432);
  const body = LINE.repeat(Math.ceil(size / LINE.length)).slice(0, size);
  return toolResult(call, `// file ${index}\n${body}`);
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

interface Figures {
  readonly length: number;
  readonly megabytes: number;
  readonly median: number;
  readonly p99: number;
  /** Time the event loop was busy per measured commit (`eventLoopUtilization`'s active time). */
  readonly heldMs: number;
  readonly loadMs: number;
}

async function measure(open: Open, length: number): Promise<Figures> {
  const opened = await open();
  try {
    const store = opened.store;
    const random = createRandom(length);
    const base = { ...createConversation(`bench-${length}`).committed, settings: SETTINGS };
    const messages = Array.from({ length }, (_, i) => toMessage(i, random));
    let state: ConversationState = { ...base, messages, hashes: hashHistory(messages) };
    let version = 0;
    const commit = async (inputID: string, next: ConversationState): Promise<number> => {
      const started = performance.now();
      const result = await store.commitInput({
        inputID,
        expectedVersion: version,
        state: next,
        result: null,
      });
      const elapsed = performance.now() - started;
      if (result.type !== "committed") throw new Error(`commit ${inputID}: ${result.type}`);
      version = result.commit.version;
      state = next;
      return elapsed;
    };
    await commit("history", state);
    const bytes = messages.reduce((sum, m) => sum + JSON.stringify(m).length, 0);

    // The next states are built before timing: that is the loop's work, not the store's.
    const nextStates: ConversationState[] = [];
    let previous = state;
    for (let i = 0; i < WARM_UP + MEASURED; i += 1) {
      const message = toMessage(length + i, random);
      previous = {
        ...previous,
        messages: [...previous.messages, message],
        hashes: appendHashes(previous.hashes, [message]),
      };
      nextStates.push(previous);
    }
    const timings: number[] = [];
    // `eventLoopUtilization` counts from the event loop's first turn, which a program whose
    // commits never wait for I/O has not had yet.
    await new Promise((resolve) => setImmediate(resolve));
    let busy = performance.eventLoopUtilization();
    for (const [i, next] of nextStates.entries()) {
      if (i === WARM_UP) busy = performance.eventLoopUtilization();
      const elapsed = await commit(`append-${i}`, next);
      if (i >= WARM_UP) timings.push(elapsed);
    }
    const heldMs = performance.eventLoopUtilization(busy).active / MEASURED;
    timings.sort((a, b) => a - b);

    const loadStarted = performance.now();
    const loaded = await store.load(base.conversationID);
    const loadMs = performance.now() - loadStarted;
    if (loaded?.state.messages.length !== state.messages.length) throw new Error("load mismatch");
    await store.close();
    return {
      length,
      megabytes: bytes / 1e6,
      median: percentile(timings, 50),
      p99: percentile(timings, 99),
      heldMs,
      loadMs,
    };
  } finally {
    await opened.cleanup();
  }
}

const ms = (value: number): string => `${value.toFixed(3)} ms`;

async function report(title: string, open: Open): Promise<void> {
  await measure(open, HISTORY_LENGTHS[0] as number); // warms up the JIT; not reported
  const results: Figures[] = [];
  for (const length of HISTORY_LENGTHS) results.push(await measure(open, length));
  console.log(
    `${title}, append one message (${MEASURED} commits after ${WARM_UP} warm-up), ` +
      "~22 KB of settings in the stored state",
  );
  console.log("history  | history size | median     | p99        | loop held  | full load");
  for (const r of results) {
    console.log(
      `${String(r.length).padStart(8)} | ${r.megabytes.toFixed(2).padStart(9)} MB | ` +
        `${ms(r.median).padStart(10)} | ${ms(r.p99).padStart(10)} | ` +
        `${ms(r.heldMs).padStart(10)} | ${ms(r.loadMs)}`,
    );
  }
  const first = results[0] as Figures;
  const last = results.at(-1) as Figures;
  console.log(
    `ratio ${last.length} / ${first.length}: median ${(last.median / first.median).toFixed(2)}, ` +
      `p99 ${(last.p99 / first.p99).toFixed(2)}`,
  );
  console.log("");
}

await report("SQLite store (WAL, synchronous=FULL)", openSqlite);

const postgres = await getTestPostgres({ durable: true });
if (postgres.type === "unavailable") {
  console.log(`PostgreSQL store: skipped, ${postgres.reason}`);
} else {
  const { server } = postgres;
  const where =
    process.env.CURSOR_BYOK_TEST_DATABASE_URL === undefined
      ? "local throw-away cluster over TCP loopback, fsync and synchronous_commit on"
      : "CURSOR_BYOK_TEST_DATABASE_URL";
  await report(`PostgreSQL store (${where})`, async () => {
    const schema = await server.createSchema();
    return {
      store: await openPostgresStore({ url: schema.url, poolSize: 2 }),
      cleanup: () => schema.drop(),
    };
  });
}
