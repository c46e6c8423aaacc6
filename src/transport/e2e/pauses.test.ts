import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fromSchedstat, watchPauses } from "./pauses.ts";

/** Lets the process deliver what its performance observers have buffered. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("watchPauses", () => {
  test("counts the young-generation collections since the last take, then starts again", async () => {
    const watch = watchPauses();
    try {
      // Short-lived garbage (each array lives until it is 64 places behind, so no optimisation
      // removes it), ≈ 100 MB: past any young generation's size, so collections must run.
      const ring: number[][] = new Array(64);
      for (let i = 0; i < 2_000_000; i += 1) ring[i & 63] = [i, i + 1, i + 2];
      assert.deepEqual(ring[63], [1_999_999, 2_000_000, 2_000_001]);
      await turn();
      await turn();
      const report = watch.take();
      assert.ok(report.minor.count >= 1, `collections: ${JSON.stringify(report.minor)}`);
      assert.ok(report.minor.max > 0 && report.minor.total >= report.minor.max);
      assert.ok(report.ms > 0);
      assert.ok(report.busy > 0 && report.busy <= 1);
      const { p50, p99, max } = report.loopDelay;
      assert.ok(p50 >= 0 && p50 <= p99 && p99 <= max);

      assert.ok(report.involuntarySwitches >= 0);
      if (process.platform === "linux") {
        assert.ok(report.cpuWaitMs !== undefined && report.cpuWaitMs >= 0);
      }

      const next = watch.take();
      assert.equal(next.minor.count, 0);
      assert.equal(next.major.count, 0);
    } finally {
      watch.stop();
    }
  });
});

test("a schedstat line's second figure is the run-queue wait, in ns", () => {
  assert.equal(fromSchedstat("1827501 5000000 12\n"), 5);
  assert.equal(fromSchedstat("0 0 0"), 0);
  assert.equal(fromSchedstat(""), undefined);
  assert.equal(fromSchedstat("garbage"), undefined);
});
