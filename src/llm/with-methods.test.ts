import assert from "node:assert/strict";
import { test } from "node:test";
import { hasFastProperties } from "./testing/fast-properties.ts";
import { withMethods } from "./with-methods.ts";

interface Counter {
  count(): number;
}

interface State {
  n: number;
}

const counterMethods: Counter & ThisType<State> = {
  count() {
    this.n += 1;
    return this.n;
  },
};

function createCounter(): Counter {
  const state: State = { n: 0 };
  return withMethods(state, counterMethods);
}

test("records share their methods, keep their own state, and stay fast objects (issue #19)", () => {
  const a = createCounter();
  const b = createCounter();
  assert.equal(a.count(), 1);
  assert.equal(a.count(), 2);
  assert.equal(b.count(), 1);
  assert.equal(a.count, b.count);
  assert.equal(Object.getPrototypeOf(a), counterMethods);
  assert.deepEqual(Object.keys(a), ["n"]);
  assert.equal(hasFastProperties(a), true);
  assert.equal(hasFastProperties(b), true);
});
