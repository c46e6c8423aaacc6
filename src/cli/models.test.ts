/**
 * `cursor-byok models` with fallbacks configured and a running server: the FALLBACKS column, and
 * each model's health as the real server's `/ui/api/models` reports it (a model cooling down
 * after 429s from a fake provider on 127.0.0.1).
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import packageJson from "../../package.json" with { type: "json" };
import { createLLM, createModelConfigs } from "../llm/index.ts";
import { firstRequest } from "../llm/testing/behaviours.ts";
import { type FakeProvider, startFakeProvider } from "../llm/testing/fake-provider.ts";
import { collect } from "../llm/testing/streams.ts";
import { createRunner } from "../runner/runner.ts";
import { createMemoryStore } from "../store/index.ts";
import { silentLog } from "../transport/log.ts";
import { DEFAULT_SERVER_OPTIONS, type Server, startServer } from "../transport/server.ts";
import type { ModelRow } from "./models.ts";
import { runCli } from "./run-cli.ts";
import { createTempHome, createTestIO } from "./testing.ts";

const home = createTempHome();
const KEY = "sk-models-test-not-real-0123456789";

function modelEntries(url: string) {
  const base = { api: "openai-compatible", baseUrl: url, apiKey: KEY };
  return [
    { ...base, name: "main", model: "main-up", fallbacks: ["spare"], maxConcurrent: 2 },
    { ...base, name: "spare", model: "spare-up" },
  ];
}

async function run(args: string[]) {
  const io = createTestIO({ home: home.dir, env: home.env });
  const code = await runCli(args, io, { version: packageJson.version });
  return { code, out: io.out(), err: io.err() };
}

describe("models: fallbacks and health", () => {
  let provider: FakeProvider;
  let server: Server;
  let file: string;
  before(async () => {
    provider = await startFakeProvider();
    const llm = createLLM({
      models: createModelConfigs(modelEntries(provider.url)),
      retry: { sleep: async () => {}, maxAttempts: 3 },
    });
    const store = createMemoryStore();
    server = await startServer(
      { store, llm, runner: createRunner({ store, llm }), log: silentLog },
      { ...DEFAULT_SERVER_OPTIONS, port: 0 },
    );
    // Three 429s in a row: the model cools down (the default policy).
    provider.reply(...Array.from({ length: 3 }, () => ({ type: "status", status: 429 }) as const));
    await collect(
      llm.stream({ callID: "c1", model: "main", request: firstRequest(), conversationID: "c1" }),
    );
    file = path.join(home.dir, "routing.yaml");
    writeFileSync(
      file,
      [
        "server:",
        "  host: 127.0.0.1",
        `  port: ${server.address.port}`,
        "models:",
        ...modelEntries(provider.url).flatMap((entry) => [
          `  - name: ${entry.name}`,
          `    api: ${entry.api}`,
          `    model: ${entry.model}`,
          `    baseUrl: ${entry.baseUrl}`,
          `    apiKey: ${entry.apiKey}`,
          ...("fallbacks" in entry ? [`    fallbacks: [${entry.fallbacks.join(", ")}]`] : []),
          ...("maxConcurrent" in entry ? [`    maxConcurrent: ${entry.maxConcurrent}`] : []),
        ]),
        "",
      ].join("\n"),
    );
  });
  after(async () => {
    await server.close();
    await provider.close();
    home.cleanup();
  });

  test("the table shows each model's fallbacks and its health in the running server", async () => {
    const result = await run(["models", "--config", file]);
    assert.equal(result.code, 0, result.err);
    const lines = result.out.split("\n");
    const header = lines.find((line) => line.includes("NAME")) ?? "";
    assert.match(header, /KEY\s+FALLBACKS\s+HEALTH$/);
    const main = lines.find((line) => line.startsWith("*  main")) ?? "";
    assert.match(main, /\sspare\s+cooling down \(\d+ s left\), 0\/2 busy$/);
    const spare = lines.find((line) => line.startsWith("   spare")) ?? "";
    assert.match(spare, /\s-\s+healthy$/);
    assert.match(
      result.out,
      new RegExp(
        `Health as the server at http://127\\.0\\.0\\.1:${server.address.port} sees it now\\.`,
      ),
    );
    assert.ok(!result.out.includes(KEY));
  });

  test("--json carries fallbacks, the concurrency limit and the health record", async () => {
    const result = await run(["models", "--json", "--config", file]);
    assert.equal(result.code, 0, result.err);
    const [main, spare] = JSON.parse(result.out) as ModelRow[];
    assert.deepEqual(main?.fallbacks, ["spare"]);
    assert.equal(main?.maxConcurrent, 2);
    assert.equal(main?.health?.state, "cooling_down");
    assert.equal(main?.health?.lastFailure?.kind, "rate_limited");
    assert.equal(spare?.health?.state, "healthy");
    assert.ok(!result.out.includes(KEY));
  });

  test("without a running server, no health column and a line that says why", async () => {
    const stopped = path.join(home.dir, "stopped.yaml");
    writeFileSync(stopped, "server:\n  port: 1\nmodels: []\n");
    const result = await run(["models", "--config", stopped]);
    assert.equal(result.code, 0, result.err);
    assert.doesNotMatch(result.out, /HEALTH/);
    assert.match(
      result.out,
      /Health: http:\/\/127\.0\.0\.1:1: no cursor-byok server answers there/,
    );
  });
});
