import assert from "node:assert/strict";
import { test } from "node:test";
import type { JsonObject } from "../../../llm/types.ts";
import { parseArgs } from "./args.ts";

test("required strings, optional values and lenient numbers/booleans", () => {
  const result = parseArgs({ path: "a.ts", limit: "20", flag: "true", list: ["x"] }, (read) => ({
    path: read.string("path"),
    limit: read.optionalInteger("limit", { min: 1, max: 100 }),
    flag: read.optionalBoolean("flag"),
    list: read.optionalStringArray("list"),
    missing: read.optionalString("missing"),
  }));
  assert.deepEqual(result, {
    ok: true,
    args: { path: "a.ts", limit: 20, flag: true, list: ["x"], missing: undefined },
  });
});

test("null counts as absent", () => {
  const result = parseArgs({ a: null }, (read) => read.optionalString("a"));
  assert.deepEqual(result, { ok: true, args: undefined });
});

test("each problem is named with the argument's path", () => {
  const cases: [
    JsonObject,
    (read: Parameters<Parameters<typeof parseArgs>[1]>[0]) => unknown,
    string,
  ][] = [
    [{}, (read) => read.string("path"), '"path" is required'],
    [{ path: 3 }, (read) => read.string("path"), '"path" must be a string'],
    [{ path: "  " }, (read) => read.string("path"), '"path" must not be empty'],
    [{ n: 1.5 }, (read) => read.optionalInteger("n", { min: 0, max: 9 }), '"n" must be an integer'],
    [
      { n: 10 },
      (read) => read.optionalInteger("n", { min: 0, max: 9 }),
      '"n" must be between 0 and 9',
    ],
    [{ b: "yes" }, (read) => read.optionalBoolean("b"), '"b" must be true or false'],
    [{ l: [1] }, (read) => read.optionalStringArray("l"), '"l" must be an array of strings'],
    [{ m: "x" }, (read) => read.optionalEnum("m", ["a", "b"]), '"m" must be one of "a", "b"'],
    [
      { items: [{ id: 1 }] },
      (read) => read.objectArray("items", (item) => item.string("id"), true),
      '"items[0].id" must be a string',
    ],
    [
      { items: ["x"] },
      (read) => read.objectArray("items", (item) => item.string("id"), true),
      '"items[0]" must be an object',
    ],
    [{}, (read) => read.objectArray("items", () => 1, true), '"items" is required'],
  ];
  for (const [args, read, message] of cases) {
    assert.deepEqual(parseArgs(args, read), { ok: false, error: message });
  }
});

test("an exception that is not an argument problem propagates (a bug, not bad input)", () => {
  assert.throws(() =>
    parseArgs({}, () => {
      throw new TypeError("bug");
    }),
  );
});
