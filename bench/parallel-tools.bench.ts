/**
 * `npm run bench:parallel-tools`: the turn time of a response with 8 read_file calls when the
 * test client takes 50 ms per exec, with parallel tool calls off (every call alone, the behaviour
 * before src/loop/tool-batch.ts) and on, in one run against the real server on 127.0.0.1 with a
 * loopback fake provider. Printed, never asserted.
 *
 * Turn time: from starting the turn to its end on the client (both model calls included; the
 * fake provider answers at once, so the difference is the tool calls'). For reference it also
 * times the same turn with a single read_file call: the target for eight parallel calls.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createLLM, createModelConfigs } from "../src/llm/index.ts";
import { toChatCompletionSse } from "../src/llm/testing/chat-completions-sse.ts";
import { startFakeProvider } from "../src/llm/testing/fake-provider.ts";
import { createRunner } from "../src/runner/runner.ts";
import { createMemoryStore } from "../src/store/index.ts";
import { silentLog } from "../src/transport/log.ts";
import { DEFAULT_SERVER_OPTIONS, startServer } from "../src/transport/server.ts";
import { createCursorClient } from "../src/transport/testing/index.ts";

const CALLS = 8;
const EXEC_MS = 50;
const ROUNDS = 5;

async function measure(parallelTools: boolean, calls = CALLS): Promise<number[]> {
  const provider = await startFakeProvider();
  const workspace = mkdtempSync(join(tmpdir(), "cursor-byok-bench-"));
  for (let i = 0; i < CALLS; i += 1)
    writeFileSync(join(workspace, `f${i}.ts`), `export const x${i} = ${i};\n`);
  const llm = createLLM({
    models: createModelConfigs([
      { name: "bench", api: "openai-compatible", model: "m", baseUrl: provider.url, apiKey: "k" },
    ]),
  });
  const store = createMemoryStore();
  const server = await startServer(
    { store, llm, runner: createRunner({ store, llm }), log: silentLog },
    {
      ...DEFAULT_SERVER_OPTIONS,
      port: 0,
      stream: { ...DEFAULT_SERVER_OPTIONS.stream, parallelTools },
    },
  );
  const client = createCursorClient({
    baseUrl: server.url,
    httpVersion: "1.1",
    workspace,
    // The client takes 50 ms per exec, then runs it for real.
    onExec: () => new Promise((resolve) => setTimeout(() => resolve(undefined), EXEC_MS)),
  });
  const times: number[] = [];
  for (let round = 0; round < ROUNDS + 1; round += 1) {
    const toolCalls = Array.from({ length: calls }, (_, i) => ({
      id: `call_${i}`,
      name: "read_file",
      arguments: { path: `f${i}.ts` },
    }));
    provider.reply(
      { type: "sse", body: toChatCompletionSse({ text: "Reading.", toolCalls }) },
      { type: "sse", body: toChatCompletionSse({ text: "Done." }) },
    );
    const began = performance.now();
    const { error } = await client.startTurn({
      conversationId: `00000000-0000-4000-8000-${String(round).padStart(12, "0")}`,
      text: "read the files",
      modelId: "bench",
    }).done;
    if (error !== undefined) throw error;
    if (round > 0) times.push(performance.now() - began); // round 0 warms up
  }
  await client.close();
  await server.close();
  await store.close();
  await provider.close();
  rmSync(workspace, { recursive: true, force: true });
  return times;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

const before = await measure(false);
const after = await measure(true);
const single = await measure(true, 1);
const show = (times: number[]) =>
  `median ${median(times).toFixed(0)} ms (runs: ${times.map((t) => t.toFixed(0)).join(", ")})`;
console.log(`${CALLS} read_file calls, client ${EXEC_MS} ms per exec, ${ROUNDS} turns each`);
console.log(`  one at a time (parallel tools off): ${show(before)}`);
console.log(`  read-only batch (parallel tools on): ${show(after)}`);
console.log(`  reference, a single read_file call:  ${show(single)}`);
console.log(`  speed-up: ${(median(before) / median(after)).toFixed(1)}x`);
