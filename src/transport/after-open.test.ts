import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { afterOpen } from "./after-open.ts";

/** A generator that records when its body runs and when its `finally` does. */
function source(log: string[]): AsyncGenerator<number, void, undefined> {
  return (async function* () {
    log.push("body");
    try {
      yield 1;
      yield 2;
    } finally {
      log.push("finally");
    }
  })();
}

describe("afterOpen", () => {
  test("opens on the first next, then hands out the inner iterator's messages", async () => {
    const log: string[] = [];
    const iterable = afterOpen(async () => {
      log.push("open");
      return source(log);
    });
    const it = iterable[Symbol.asyncIterator]();
    assert.deepEqual(log, []);
    const seen: number[] = [];
    for await (const value of { [Symbol.asyncIterator]: () => it }) seen.push(value);
    assert.deepEqual(seen, [1, 2]);
    assert.deepEqual(log, ["open", "body", "finally"]);
  });

  test("a failed open rejects the first next and ends the iteration", async () => {
    const it = afterOpen<number>(async () => {
      throw new Error("no such stream");
    })[Symbol.asyncIterator]();
    await assert.rejects(it.next(), /no such stream/);
    assert.deepEqual(await it.next(), { done: true, value: undefined });
  });

  test("return before the first next opens nothing", async () => {
    let opened = false;
    const it = afterOpen(async () => {
      opened = true;
      return source([]);
    })[Symbol.asyncIterator]();
    assert.deepEqual(await it.return?.(), { done: true, value: undefined });
    assert.deepEqual(await it.next(), { done: true, value: undefined });
    assert.equal(opened, false);
  });

  test("return after the first message runs the inner iterator's finally", async () => {
    const log: string[] = [];
    const it = afterOpen(async () => source(log))[Symbol.asyncIterator]();
    assert.deepEqual(await it.next(), { done: false, value: 1 });
    assert.deepEqual(await it.return?.(), { done: true, value: undefined });
    assert.deepEqual(log, ["body", "finally"]);
    assert.deepEqual(await it.next(), { done: true, value: undefined });
  });

  test("throw after opening goes to the inner iterator", async () => {
    const log: string[] = [];
    const it = afterOpen(async () => source(log))[Symbol.asyncIterator]();
    await it.next();
    await assert.rejects(
      it.throw?.(new Error("client went away")) ?? Promise.resolve(),
      /went away/,
    );
    assert.deepEqual(log, ["body", "finally"]);
  });
});
