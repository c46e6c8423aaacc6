import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createSerialQueue } from "./serial-queue.ts";

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe("createSerialQueue()", () => {
  test("should run tasks of one key one at a time, in order", async () => {
    const queue = createSerialQueue();
    const log: string[] = [];
    const gate = deferred();
    const first = queue.run("c1", async () => {
      log.push("first:start");
      await gate.promise;
      log.push("first:end");
      return 1;
    });
    const second = queue.run("c1", async () => {
      log.push("second");
      return 2;
    });
    await Promise.resolve();
    assert.deepEqual(log, ["first:start"]);
    gate.resolve();
    assert.deepEqual(await Promise.all([first, second]), [1, 2]);
    assert.deepEqual(log, ["first:start", "first:end", "second"]);
  });

  test("should run different keys concurrently", async () => {
    const queue = createSerialQueue();
    const gate = deferred();
    const blocked = queue.run("a", () => gate.promise.then(() => "a"));
    assert.equal(await queue.run("b", async () => "b"), "b");
    gate.resolve();
    assert.equal(await blocked, "a");
  });

  test("a failing task should not stop the next one, and keys are released", async () => {
    const queue = createSerialQueue();
    const failed = queue.run("k", async () => {
      throw new Error("boom");
    });
    const next = queue.run("k", async () => "ok");
    await assert.rejects(failed, /boom/);
    assert.equal(await next, "ok");
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(queue.size, 0);
  });

  test("idle(key) should be false while a task of the key is queued or running, true after", async () => {
    const queue = createSerialQueue();
    assert.equal(queue.idle("k"), true);
    const gate = deferred();
    const first = queue.run("k", () => gate.promise);
    const second = queue.run("k", async () => "second");
    assert.equal(queue.idle("k"), false);
    assert.equal(queue.idle("other"), true);
    gate.resolve();
    await first;
    assert.equal(queue.idle("k"), false, "the second task is still to run");
    await second;
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(queue.idle("k"), true);
  });
});
