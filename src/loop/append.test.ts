import assert from "node:assert/strict";
import { test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { append } from "./append.ts";

setFlagsFromString("--expose-gc");
/** A full collection, from a fresh context where `--expose-gc` took effect. */
const collect = runInNewContext("gc") as () => void;

test("append: the list then the items, the same values, inputs unchanged, entries never spread", () => {
  const list = Object.freeze([{ a: 1 }, [2, 3]]);
  const items = Object.freeze([[4], { b: 5 }]);
  const out = append<unknown>(list, items);
  assert.deepEqual(out, [...list, ...items]);
  assert.equal(out.length, 4);
  assert.equal(out[1], list[1]);
  assert.equal(out[2], items[0]);
  assert.deepEqual(list, [{ a: 1 }, [2, 3]]);
  assert.deepEqual(items, [[4], { b: 5 }]);
  assert.notEqual(append([], []), append([], []));
  assert.deepEqual(append([], [1]), [1]);
});

test("append keeps no spare room: 10,000 one-entry lists hold far less than spread literals would", () => {
  const kept: unknown[][] = new Array(10_000);
  // The least of three rounds: a collection may leave some of the last round's garbage.
  const perList = (make: (index: number) => unknown[]): number =>
    Math.min(...[0, 1, 2].map(() => measure(make)));
  const measure = (make: (index: number) => unknown[]): number => {
    collect();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < kept.length; i++) kept[i] = make(i);
    collect();
    const bytes = (process.memoryUsage().heapUsed - before) / kept.length;
    kept.fill([]);
    return bytes;
  };
  const empty: readonly number[] = [];
  // A spread literal of one entry: ≈ 200 B (16 spare slots); an exact one: ≈ 60 B.
  const exact = perList((i) => append(empty, [i]));
  const spread = perList((i) => [...empty, i]);
  assert.ok(exact < 120, `${exact} B per list`);
  assert.ok(exact < spread - 60, `${exact} B vs ${spread} B per list`);
});
