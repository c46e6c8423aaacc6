import assert from "node:assert/strict";
import { test } from "node:test";
import { hasFastProperties } from "./testing/fast-properties.ts";
import { withGetters } from "./with-getters.ts";

test("withGetters: each object reads its own source on every read, and every object stays fast", () => {
  const objects = Array.from({ length: 5 }, (_, i) => {
    let calls = 0;
    const object = withGetters(
      { id: i, recv: () => i },
      {
        value: () => i * 10 + calls++,
        label: () => `o${i}`,
      },
    );
    return object;
  });
  objects.forEach((object, i) => {
    assert.equal(hasFastProperties(object), true, `object ${i}`);
    assert.equal(object.value, i * 10);
    assert.equal(object.value, i * 10 + 1);
    assert.equal(object.label, `o${i}`);
  });
  // A literal with `get` members, for comparison: the reason this exists.
  const literals = [0, 1].map((i) => ({
    id: i,
    get value() {
      return i;
    },
  }));
  assert.equal(hasFastProperties(literals[1] as object), false);
});

test("withGetters: own enumerable accessors without a setter, like a literal's get; the sources stay hidden", () => {
  const object = withGetters({ id: 1 }, { value: () => 42 });
  const descriptor = Object.getOwnPropertyDescriptor(object, "value");
  assert.equal(typeof descriptor?.get, "function");
  assert.equal(descriptor?.set, undefined);
  assert.equal(descriptor?.enumerable, true);
  assert.equal(descriptor?.configurable, true);
  assert.deepEqual(Object.keys(object), ["id", "value"]);
  assert.deepEqual({ ...object }, { id: 1, value: 42 });
  assert.equal(JSON.stringify(object), '{"id":1,"value":42}');
  assert.throws(() => {
    (object as { value: number }).value = 1;
  }, TypeError);
});
