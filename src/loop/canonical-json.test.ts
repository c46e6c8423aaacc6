import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { toCanonicalJSON, toCanonicalJSONOnce } from "./canonical-json.ts";

/**
 * The writer as it was before the fast path (issue #19), member by member: the oracle the fast
 * path must match byte for byte, since message hashes and the request prefix depend on it.
 */
function reference(value: unknown, path = "$"): string {
  switch (typeof value) {
    case "string":
    case "boolean":
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`canonical JSON: ${path} is not finite`);
      return JSON.stringify(value);
    case "object": {
      if (value === null) return "null";
      if (Array.isArray(value)) {
        return `[${value.map((item, i) => reference(item, `${path}[${i}]`)).join(",")}]`;
      }
      const prototype = Object.getPrototypeOf(value);
      if (prototype !== Object.prototype && prototype !== null) {
        throw new TypeError(`canonical JSON: ${path} is not a plain object`);
      }
      const members: string[] = [];
      for (const [key, member] of Object.entries(value)) {
        if (member === undefined) continue;
        members.push(`${JSON.stringify(key)}:${reference(member, `${path}.${key}`)}`);
      }
      return `{${members.join(",")}}`;
    }
    default:
      throw new TypeError(`canonical JSON: ${path} has unsupported type ${typeof value}`);
  }
}

function outcome(write: (value: unknown) => string, value: unknown): string {
  try {
    return `ok ${write(value)}`;
  } catch (error) {
    return `throws ${(error as Error).message}`;
  }
}

describe("toCanonicalJSON()", () => {
  test("writes what the member-by-member writer writes, and fails where it fails (property)", () => {
    const values = fc.anything({
      withBoxedValues: true,
      withMap: true,
      withSet: true,
      withDate: true,
      withNullPrototype: true,
      withSparseArray: false,
      withObjectString: true,
    });
    fc.assert(
      fc.property(values, (value) => {
        assert.equal(outcome(toCanonicalJSON, value), outcome(reference, value));
      }),
      { numRuns: 2_000 },
    );
  });

  test("keeps key order as built, integer-like keys first as JSON does, and omits undefined members", () => {
    const value = { b: 1, a: [1, "x", { z: null, y: undefined }], 2: true, 1: "one" };
    assert.equal(toCanonicalJSON(value), '{"1":"one","2":true,"b":1,"a":[1,"x",{"z":null}]}');
  });

  test("names the offending path", () => {
    assert.throws(() => toCanonicalJSON({ a: [1, Number.NaN] }), /\$\.a\[1\] is not finite/);
    assert.throws(() => toCanonicalJSON({ a: [undefined] }), /\$\.a\[0\] has unsupported type/);
    assert.throws(() => toCanonicalJSON({ d: new Date(0) }), /\$\.d is not a plain object/);
    assert.throws(() => toCanonicalJSON({ f: () => 1 }), /\$\.f has unsupported type function/);
  });

  test("toCanonicalJSONOnce remembers only frozen objects: a changed object is written anew", () => {
    const open: Record<string, unknown> = { name: "read" };
    assert.equal(toCanonicalJSONOnce(open), '{"name":"read"}');
    open.name = "write";
    assert.equal(toCanonicalJSONOnce(open), '{"name":"write"}');
    const frozen = Object.freeze({ name: "read", parameters: Object.freeze({ type: "object" }) });
    assert.equal(toCanonicalJSONOnce(frozen), toCanonicalJSON(frozen));
    assert.equal(toCanonicalJSONOnce(frozen), '{"name":"read","parameters":{"type":"object"}}');
    assert.throws(() => toCanonicalJSONOnce(Object.freeze({ n: Number.NaN })), /not finite/);
  });
});
