import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { test } from "node:test";
import { toEitherSignal } from "./abort.ts";

test("toEitherSignal aborts with the reason of whichever source aborts first, once", () => {
  for (const first of ["a", "b"] as const) {
    const a = new AbortController();
    const b = new AbortController();
    const either = toEitherSignal(a.signal, b.signal);
    let fired = 0;
    either.addEventListener("abort", () => fired++);
    assert.equal(either.aborted, false);
    (first === "a" ? a : b).abort(`${first} went`);
    (first === "a" ? b : a).abort("too late");
    assert.equal(either.aborted, true);
    assert.equal(either.reason, `${first} went`);
    assert.equal(fired, 1);
  }
});

test("toEitherSignal: an aborted source, or one signal twice, is returned as it is", () => {
  const a = new AbortController();
  const b = new AbortController();
  assert.equal(toEitherSignal(a.signal, a.signal), a.signal);
  b.abort("gone");
  assert.equal(toEitherSignal(a.signal, b.signal), b.signal);
  a.abort("first");
  assert.equal(toEitherSignal(a.signal, b.signal), a.signal);
});

test("toEitherSignal leaves no listener on the other source once one aborts", () => {
  const a = new AbortController();
  const b = new AbortController();
  const either = toEitherSignal(a.signal, b.signal);
  assert.equal(getEventListeners(a.signal, "abort").length, 1);
  assert.equal(getEventListeners(b.signal, "abort").length, 1);
  b.abort("b went");
  assert.equal(getEventListeners(a.signal, "abort").length, 0);
  assert.equal(either.reason, "b went");
});

test("toEitherSignal keeps the first reason when one source aborts the other from its listener", () => {
  // As an SDK does: its own controller follows the caller's signal, aborting with no reason, and
  // its listener was added first, so it runs before toEitherSignal's.
  const caller = new AbortController();
  const sdk = new AbortController();
  caller.signal.addEventListener("abort", () => sdk.abort(), { once: true });
  const either = toEitherSignal(sdk.signal, caller.signal);
  caller.abort("canceled");
  assert.equal(either.reason, "canceled");
});
