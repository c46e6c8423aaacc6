/** The stream registry at shutdown (server.ts `close`): which streams are held. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createLLM } from "../llm/index.ts";
import { createRunner } from "../runner/runner.ts";
import { createMemoryStore } from "../store/index.ts";
import { silentLog } from "./log.ts";
import { DEFAULT_SERVER_OPTIONS } from "./server.ts";
import { createStreamRegistry } from "./stream-registry.ts";

test("the registry's hold (shutdown) holds live streams, later ones too, and leaves ended ones", async () => {
  const store = createMemoryStore();
  const llm = createLLM({ models: [] });
  const registry = createStreamRegistry(
    {
      runner: createRunner({ store, llm }),
      models: llm,
      now: () => 0,
      log: silentLog,
      options: DEFAULT_SERVER_OPTIONS.stream,
    },
    { retentionMs: 60_000, idleMs: 60_000, maxStreams: 10 },
  );
  const live = await registry.open("live");
  const ended = await registry.open("ended");
  ended.outbound.end();
  registry.hold();
  assert.deepEqual([live.outbound.held, ended.outbound.held], [true, false]);
  const later = await registry.open("later");
  assert.equal(later.outbound.held, true);
  registry.closeAll("the server is shutting down");
});
