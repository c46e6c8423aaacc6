import assert from "node:assert/strict";
import { describe, mock, test } from "node:test";
import { hasFastProperties } from "../llm/testing/fast-properties.ts";
import { createAppendSequencer, SequenceGapError } from "./append-sequencer.ts";

const options = { gapTimeoutMs: 10_000, maxAhead: 8 };

describe("createAppendSequencer()", () => {
  test("should apply in-order appends at once", async () => {
    const seq = createAppendSequencer(options);
    assert.equal(await seq.enter(0), "apply");
    seq.leave(0);
    assert.equal(await seq.enter(1), "apply");
    seq.leave(1);
    assert.equal(seq.next, 2);
  });

  test("should hold an early append until the gap is filled, then apply in order", async () => {
    const seq = createAppendSequencer(options);
    const order: number[] = [];
    const third = seq.enter(2).then((r) => {
      order.push(2);
      return r;
    });
    const second = seq.enter(1).then((r) => {
      order.push(1);
      return r;
    });
    assert.equal(await seq.enter(0), "apply");
    order.push(0);
    seq.leave(0);
    assert.equal(await second, "apply");
    seq.leave(1);
    assert.equal(await third, "apply");
    seq.leave(2);
    assert.deepEqual(order, [0, 1, 2]);
  });

  test("should report repeats as stale: applied, in flight, or already waiting", async () => {
    const seq = createAppendSequencer(options);
    assert.equal(await seq.enter(0), "apply");
    assert.equal(await seq.enter(0), "stale");
    const waiting = seq.enter(2);
    assert.equal(await seq.enter(2), "stale");
    seq.leave(0);
    assert.equal(await seq.enter(0), "stale");
    assert.equal(await seq.enter(1), "apply");
    seq.leave(1);
    assert.equal(await waiting, "apply");
  });

  test("should refuse an append too far ahead, and invalid seqnos", async () => {
    const seq = createAppendSequencer(options);
    await assert.rejects(seq.enter(9), SequenceGapError);
    await assert.rejects(seq.enter(-1), SequenceGapError);
    await assert.rejects(seq.enter(1.5), SequenceGapError);
  });

  test("should give up on a gap that is not filled in time", async () => {
    mock.timers.enable({ apis: ["setTimeout"] });
    try {
      const seq = createAppendSequencer(options);
      const early = seq.enter(3);
      mock.timers.tick(options.gapTimeoutMs);
      await assert.rejects(early, /did not arrive within 10000 ms/);
      assert.equal(await seq.enter(0), "apply");
    } finally {
      mock.timers.reset();
    }
  });

  test("close should reject waiting appends", async () => {
    const seq = createAppendSequencer(options);
    const early = seq.enter(1);
    seq.close("request discarded");
    await assert.rejects(early, /request discarded/);
  });

  test("resync should take the next arriving seqno as the start", async () => {
    const seq = createAppendSequencer(options);
    seq.resync();
    assert.equal(await seq.enter(7), "apply");
    seq.leave(7);
    assert.equal(await seq.enter(7), "stale");
    assert.equal(await seq.enter(8), "apply");
    seq.leave(8);
    assert.equal(seq.next, 9);
  });
});

describe("run(): ordered appends with remembered outcomes", () => {
  test("appends run in seqno order, whatever order they arrive in", async () => {
    const seq = createAppendSequencer(options);
    const order: number[] = [];
    const fail = (error: unknown) => error;
    const late = seq.run(1, async () => void order.push(1), fail);
    await seq.run(0, async () => void order.push(0), fail);
    await late;
    assert.deepEqual(order, [0, 1]);
  });

  test("a repeat of a recent append gets the original's outcome and does not run again", async () => {
    const seq = createAppendSequencer(options);
    let runs = 0;
    const failing = seq.run(
      0,
      async () => {
        runs += 1;
        throw new Error("refused");
      },
      (error) => error,
    );
    assert.equal(
      seq.run(
        0,
        async () => {
          runs += 1;
        },
        (error) => error,
      ),
      failing,
    );
    await assert.rejects(failing, /refused/);
    assert.equal(runs, 1);
  });

  test("a refusal to enter is mapped by enterFailed; only the last `remembered` outcomes are kept", async () => {
    const seq = createAppendSequencer({ ...options, remembered: 1 });
    const mapped = new Error("mapped");
    await assert.rejects(
      seq.run(
        100,
        async () => {},
        () => mapped,
      ),
      (error) => error === mapped,
    );
    await seq.run(
      0,
      async () => {},
      (error) => error,
    );
    // 100 is forgotten: a new run of it is a new attempt.
    const again = seq.run(
      100,
      async () => {},
      () => new Error("again"),
    );
    await assert.rejects(again, /again/);
  });
});

test("sequencers are fast objects, each with its own next seqno (issue #19: one per stream)", async () => {
  const sequencers = [createAppendSequencer(options), createAppendSequencer(options)];
  await sequencers[1]?.enter(0);
  sequencers[1]?.leave(0);
  assert.deepEqual(
    sequencers.map((sequencer) => sequencer.next),
    [0, 1],
  );
  for (const sequencer of sequencers) assert.equal(hasFastProperties(sequencer), true);
  // Their methods are shared, not closures per stream.
  assert.equal(sequencers[0]?.run, sequencers[1]?.run);
});
