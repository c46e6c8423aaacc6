/** `inspect` with `liveOnly` (the dashboard's `/pending`) never reads the store. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { T0, text } from "../loop/testing.ts";
import { createMemoryStore, type Store } from "../store/index.ts";
import { answer, driveTurn } from "../store/testing/dashboard-contract.ts";
import { createRunner } from "./runner.ts";

test("inspect with liveOnly answers null for a stored conversation not live here, without loading it", async () => {
  const inner = createMemoryStore();
  await driveTurn(inner, "stored", "hello", [answer([text("hi")], { input: 1, output: 1 }, T0)]);
  const loads: string[] = [];
  const store: Store = {
    ...inner,
    load: (id) => {
      loads.push(id);
      return inner.load(id);
    },
  };
  const runner = createRunner({
    store,
    llm: { stream: () => assert.fail("no model call expected") },
  });
  assert.equal(await runner.inspect("stored", { liveOnly: true }), null);
  assert.deepEqual(loads, []);
  assert.equal((await runner.inspect("stored"))?.committed.status, "final");
  assert.deepEqual(loads, ["stored"]);
  await runner.shutdown();
});
