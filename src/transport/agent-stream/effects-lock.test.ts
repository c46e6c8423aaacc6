/**
 * The subagents' effects lock (effects-lock.ts): at most one holder at any time whatever the
 * order of acquires, releases and drops; waiters are served in arrival order; a dropped waiter
 * never gets the lock.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { createEffectsLock } from "./effects-lock.ts";

test("waiters get the lock in arrival order; a dropped one never does", async () => {
  const lock = createEffectsLock();
  const order: string[] = [];
  const waits: string[] = [];
  await lock.acquire("a", () => {});
  const b = lock
    .acquire("b", (holder) => waits.push(`b after ${holder}`))
    .then(() => order.push("b"));
  const c = lock
    .acquire("c", () => {})
    .then(
      () => order.push("c"),
      (error: Error) => order.push(`c dropped: ${error.message}`),
    );
  const d = lock.acquire("d", () => {}).then(() => order.push("d"));
  lock.release("c", "canceled");
  await c;
  lock.release("a", "done");
  await b;
  lock.release("b", "done");
  await d;
  assert.deepEqual(order, ["c dropped: canceled", "b", "d"]);
  assert.deepEqual(waits, ["b after a"]);
});

test("property: never two holders at once", async () => {
  const step = fc.record({ id: fc.integer({ min: 0, max: 4 }), release: fc.boolean() });
  await fc.assert(
    fc.asyncProperty(fc.array(step, { maxLength: 40 }), async (steps) => {
      const lock = createEffectsLock();
      const holding = new Set<string>();
      const pending = new Set<string>();
      for (const { id, release } of steps) {
        const name = `op${id}`;
        if (release) {
          holding.delete(name);
          pending.delete(name);
          lock.release(name, "done");
        } else if (!holding.has(name) && !pending.has(name)) {
          pending.add(name);
          void lock
            .acquire(name, () => {})
            .then(
              () => {
                pending.delete(name);
                holding.add(name);
                assert.ok(holding.size <= 1, `holders: ${[...holding].join(", ")}`);
              },
              () => pending.delete(name),
            );
        }
        await Promise.resolve();
        await Promise.resolve();
        assert.ok(holding.size <= 1);
      }
    }),
    { numRuns: 300 },
  );
});
