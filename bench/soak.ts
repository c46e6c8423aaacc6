/**
 * `npm run soak`: N concurrent conversations, each turn a tool round trip (the model asks for a
 * file, the test client reads it, the model answers), for M minutes against the real server in
 * a process of its own (SQLite file, a loopback fake provider). Prints, never asserts:
 * completions, errors, p50/p99 turn time, the longest gap between two server messages any client
 * saw (heartbeats fill silences), and the server's RSS at the start, at its peak and
 * `SOAK_SETTLE_S` after the last turn ended.
 *
 * Environment: SOAK_CONVERSATIONS (default 40), SOAK_MINUTES (default 3.5), SOAK_SETTLE_S
 * (default 30), SOAK_RETAINED_S (a last sample this long after that, default 45: past the 60 s
 * ended streams are kept), SOAK_HEARTBEAT_MS (server heartbeat interval, default 1000),
 * SOAK_THINK_MS (how long the client takes to run a tool, default 300; heartbeats flow then).
 * The server also reports its live heap after a full collection, to tell retained objects from
 * memory V8 has not given back.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as delay } from "node:timers/promises";
import { toChatCompletionSse } from "../src/llm/testing/chat-completions-sse.ts";
import { type RecordedRequest, startFakeProvider } from "../src/llm/testing/fake-provider.ts";
import { createCursorClient } from "../src/transport/testing/index.ts";

const MODEL = "soak";
const conversations = Number(process.env.SOAK_CONVERSATIONS ?? 40);
const minutes = Number(process.env.SOAK_MINUTES ?? 3.5);
const settleS = Number(process.env.SOAK_SETTLE_S ?? 30);
const heartbeatMs = Number(process.env.SOAK_HEARTBEAT_MS ?? 1_000);
const thinkMs = Number(process.env.SOAK_THINK_MS ?? 300);
/** A last sample once ended streams are past their retention (60 s) and dropped. */
const retainedS = Number(process.env.SOAK_RETAINED_S ?? 45);

/** The model: a read_file call first, then an answer (decided from the request alone). */
function answer(request: RecordedRequest) {
  const body = JSON.parse(request.body) as { messages: { role: string }[] };
  const last = body.messages.at(-1)?.role;
  const reply =
    last === "tool"
      ? { text: "The notes say to buy bread. ".repeat(8) }
      : {
          text: "Let me look.",
          toolCalls: [
            {
              id: `call_${body.messages.length}`,
              name: "read_file",
              arguments: { path: "notes.txt" },
            },
          ],
        };
  return { type: "sse", body: toChatCompletionSse(reply) } as const;
}

function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const ms = (value: number) => `${value.toFixed(1)} ms`;

async function main(): Promise<void> {
  const provider = await startFakeProvider();
  provider.answer(answer);
  const dir = mkdtempSync(join(tmpdir(), "cursor-byok-soak-"));
  const workspace = join(dir, "workspace");
  mkdirSync(workspace);
  writeFileSync(join(workspace, "notes.txt"), "buy bread\n".repeat(50));
  const child = spawn(
    process.execPath,
    [
      "--expose-gc",
      join(import.meta.dirname, "..", "src", "transport", "e2e", "test-server-process.ts"),
      JSON.stringify({
        providerUrl: provider.url,
        apiKey: "k",
        model: MODEL,
        dbPath: join(dir, "soak.db"),
        port: 0,
        heartbeatMs,
        reportMemoryMs: 5_000,
      }),
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  /** The server's own report (after a full collection): the live heap, not just RSS. */
  let heap = { used: 0, peak: 0 };
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (text: string) => {
      out += text;
      const match = /LISTENING (\S+)\n/.exec(out);
      if (match?.[1] !== undefined) resolve(match[1]);
      const lines = out.split("\n");
      out = lines.pop() ?? "";
      for (const line of lines) {
        if (!line.startsWith("MEMORY ")) continue;
        const used = (JSON.parse(line.slice(7)) as { heapUsed: number }).heapUsed;
        heap = { used, peak: Math.max(heap.peak, used) };
      }
    });
    child.once("exit", (code) => reject(new Error(`the server exited (${code})`)));
  });
  const rss = (): number =>
    Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1] ?? 0) *
    1024;
  const rssStart = rss();
  let rssPeak = rssStart;
  const sampler = setInterval(() => {
    rssPeak = Math.max(rssPeak, rss());
  }, 500);

  const durations: number[] = [];
  const errors: string[] = [];
  let longestGap = 0;
  const deadline = performance.now() + minutes * 60_000;
  const started = performance.now();

  const worker = async (index: number): Promise<void> => {
    let last = 0;
    const client = createCursorClient({
      baseUrl: url,
      httpVersion: "1.1",
      workspace,
      timeoutMs: 60_000,
      onExec: async () => {
        await delay(thinkMs); // the client's own time to run the tool
        return undefined;
      },
      onMessage: () => {
        const now = performance.now();
        if (last > 0) longestGap = Math.max(longestGap, now - last);
        last = now;
      },
    });
    let turn = 0;
    try {
      while (performance.now() < deadline) {
        // A fresh conversation every 10 turns, so history stays realistic in size.
        const conversationId = `soak-${index}-${Math.floor(turn / 10)}`;
        const t0 = performance.now();
        last = t0;
        let failure: string | null = null;
        try {
          const result = await client.startTurn({
            conversationId,
            text: `turn ${turn}: what do my notes say?`,
            modelId: MODEL,
          }).done;
          if (result.error !== undefined) failure = result.error.message;
          else durations.push(performance.now() - t0);
        } catch (error) {
          failure = error instanceof Error ? error.message : String(error);
        }
        if (failure !== null) {
          errors.push(failure);
          // A pause: a worker spinning on instant refusals would measure nothing else.
          await delay(200);
        }
        last = 0;
        turn += 1;
      }
    } finally {
      await client.close();
    }
  };

  await Promise.all(Array.from({ length: conversations }, (_, index) => worker(index)));
  const elapsedS = (performance.now() - started) / 1000;
  const rssEnd = rss();
  const heapEnd = heap.used;
  await delay(settleS * 1_000);
  const rssSettled = rss();
  const heapSettled = heap.used;
  await delay(retainedS * 1_000);
  const rssRetained = rss();
  const heapRetained = heap.used;
  clearInterval(sampler);
  child.kill("SIGTERM");
  await new Promise((resolve) => child.once("exit", resolve));
  await provider.close();
  rmSync(dir, { recursive: true, force: true });

  const firstErrors = [...new Set(errors)].slice(0, 3);
  process.stdout.write(
    [
      `soak — ${conversations} concurrent conversations, ${minutes} min, a read_file round trip per turn, heartbeat ${heartbeatMs} ms`,
      `  completions: ${durations.length} (${(durations.length / elapsedS).toFixed(1)}/s)   errors: ${errors.length}`,
      ...firstErrors.map((error) => `    e.g. ${error.slice(0, 200)}`),
      `  turn time: p50 ${ms(percentile(durations, 50))}   p99 ${ms(percentile(durations, 99))}   max ${ms(Math.max(0, ...durations))}`,
      `  longest gap between server messages seen by a client: ${ms(longestGap)}`,
      `  server RSS: start ${mib(rssStart)}   peak ${mib(rssPeak)}   at the end ${mib(rssEnd)}   ${settleS} s after ${mib(rssSettled)}   ${settleS + retainedS} s after ${mib(rssRetained)}`,
      `  server live heap (after a full GC, every 5 s): peak ${mib(heap.peak)}   at the end ${mib(heapEnd)}   ${settleS} s after ${mib(heapSettled)}   ${settleS + retainedS} s after ${mib(heapRetained)}`,
      "",
    ].join("\n"),
  );
}

await main();
