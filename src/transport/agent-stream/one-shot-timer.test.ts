import assert from "node:assert/strict";
import { mock, test } from "node:test";
import { hasFastProperties } from "../../llm/testing/fast-properties.ts";
import { createOneShotTimer } from "./one-shot-timer.ts";

test("a one-shot timer fires once after its delay, and is idle again when it fires", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const timer = createOneShotTimer();
    let fired = 0;
    let armedWhenFired: boolean | null = null;
    timer.arm(100, () => {
      fired += 1;
      armedWhenFired = timer.armed;
    });
    assert.equal(timer.armed, true);
    mock.timers.tick(99);
    assert.equal(fired, 0);
    mock.timers.tick(1);
    assert.equal(fired, 1);
    assert.equal(armedWhenFired, false);
    mock.timers.tick(1000);
    assert.equal(fired, 1);
  } finally {
    mock.timers.reset();
  }
});

test("clearing a one-shot timer stops it; arming again replaces the earlier wait", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const timer = createOneShotTimer();
    const fired: string[] = [];
    timer.arm(100, () => fired.push("cleared"));
    timer.clear();
    assert.equal(timer.armed, false);
    timer.arm(100, () => fired.push("first"));
    mock.timers.tick(50);
    timer.arm(100, () => fired.push("second"));
    mock.timers.tick(60);
    assert.deepEqual(fired, []);
    mock.timers.tick(40);
    assert.deepEqual(fired, ["second"]);
  } finally {
    mock.timers.reset();
  }
});

test("timers are fast objects, each with its own armed state (issue #19: one or more per stream)", () => {
  const timers = [createOneShotTimer(), createOneShotTimer(), createOneShotTimer()];
  timers[1]?.arm(60_000, () => {});
  assert.deepEqual(
    timers.map((timer) => timer.armed),
    [false, true, false],
  );
  for (const timer of timers) assert.equal(hasFastProperties(timer), true);
  timers[1]?.clear();
  assert.equal(timers[1]?.armed, false);
});
