import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { describe, mock, test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { hasFastProperties } from "../llm/testing/fast-properties.ts";
import { createOutboundStream, type OutboundStream } from "./outbound-stream.ts";

setFlagsFromString("--expose-gc");
/** A full collection, from a fresh context where `--expose-gc` took effect. */
const collect = runInNewContext("gc") as () => void;

const create = () => createOutboundStream<string>({ heartbeatMs: 5000, heartbeat: () => "♥" });

/**
 * A reader of `stream` that has just been handed "a" (as a writer writing it) and now waits for
 * more (`waitForMore`); `state.resumed` once that wait has ended.
 */
function waitingForMore(stream: OutboundStream<string>) {
  const reader = stream.read();
  stream.push("a");
  assert.equal(reader.next(), "a");
  const state = { resumed: false };
  const waiting = reader.waitForMore().then(() => {
    state.resumed = true;
  });
  return { reader, state, waiting };
}

async function take(it: AsyncIterator<string>, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i += 1) {
    const next = await it.next();
    if (next.done) break;
    out.push(next.value);
  }
  return out;
}

describe("createOutboundStream()", () => {
  test("a late subscriber gets the whole backlog, then live messages, then the end", async () => {
    const stream = create();
    stream.push("a");
    stream.push("b");
    const it = stream.subscribe();
    assert.deepEqual(await take(it, 2), ["a", "b"]);
    const next = it.next();
    stream.push("c");
    assert.deepEqual(await next, { done: false, value: "c" });
    stream.end();
    assert.deepEqual(await it.next(), { done: true, value: undefined });
    assert.equal(stream.delivered, 3);
  });

  test("a reconnecting subscriber resumes after the last delivered message", async () => {
    const stream = create();
    for (const m of ["a", "b", "c"]) stream.push(m);
    const first = stream.subscribe();
    assert.deepEqual(await take(first, 2), ["a", "b"]);
    // "b" was handed out but the consumer never asked for more: the connection dropped.
    await first.return(undefined);
    assert.equal(stream.delivered, 1);
    const second = stream.subscribe();
    stream.push("d");
    stream.end();
    assert.deepEqual(await take(second, 10), ["b", "c", "d"]);
  });

  test("a new subscriber takes over from the previous one", async () => {
    const stream = create();
    const first = stream.subscribe();
    const pending = first.next();
    const second = stream.subscribe();
    assert.deepEqual(await pending, { done: true, value: undefined });
    stream.push("x");
    stream.end();
    assert.deepEqual(await take(second, 5), ["x"]);
  });

  test("end with an error is thrown after the backlog is drained", async () => {
    const stream = create();
    stream.push("last words");
    stream.end(new Error("canceled"));
    const it = stream.subscribe();
    assert.deepEqual(await it.next(), { done: false, value: "last words" });
    await assert.rejects(it.next(), /canceled/);
    assert.throws(() => stream.push("late"), /push after end/);
  });

  test("an idle subscriber gets heartbeats; activity postpones them", async () => {
    mock.timers.enable({ apis: ["setTimeout"] });
    try {
      const stream = create();
      const it = stream.subscribe();
      let next = it.next();
      await Promise.resolve();
      mock.timers.tick(5000);
      assert.deepEqual(await next, { done: false, value: "♥" });
      next = it.next();
      await Promise.resolve();
      mock.timers.tick(4000);
      stream.push("data");
      assert.deepEqual(await next, { done: false, value: "data" });
      assert.equal(stream.length, 1, "heartbeats are not backlogged");
    } finally {
      mock.timers.reset();
    }
  });

  test("aborting the subscriber's signal ends it without losing messages", async () => {
    const stream = create();
    const controller = new AbortController();
    const it = stream.subscribe(controller.signal);
    const pending = it.next();
    controller.abort();
    assert.deepEqual(await pending, { done: true, value: undefined });
    stream.push("kept");
    stream.end();
    assert.deepEqual(await take(stream.subscribe(), 5), ["kept"]);
  });

  test("delivered messages are released; a reconnect still resumes at the first undelivered", async () => {
    const stream = create();
    for (let i = 0; i < 2000; i += 1) stream.push(`m${i}`);
    const first = stream.subscribe();
    const got = await take(first, 1500);
    assert.equal(got.at(-1), "m1499");
    await first.return(undefined);
    assert.ok(stream.retained <= 1000, `retained ${stream.retained}`);
    stream.end();
    const rest = await take(stream.subscribe(), 1000);
    assert.equal(
      rest[0],
      "m1499",
      "the message being written when the connection dropped comes again",
    );
    assert.equal(rest.at(-1), "m1999");
    assert.equal(stream.length, 2000);
  });

  test("a delivered message is released at once, not kept until a batch is dropped", async () => {
    const stream = createOutboundStream<{ readonly n: number }>({
      heartbeatMs: 5000,
      heartbeat: () => ({ n: -1 }),
    });
    const written = new WeakRef({ n: 0 });
    stream.push(written.deref() as { n: number });
    stream.push({ n: 1 });
    const reader = stream.read();
    assert.equal(reader.next()?.n, 0);
    assert.equal(reader.next()?.n, 1, "message 0 is now delivered");
    assert.equal(stream.retained, 1);
    // WeakRef targets live to the end of the job that created or read them.
    await new Promise((resolve) => setImmediate(resolve));
    collect();
    assert.equal(written.deref(), undefined, "the delivered message was collected");
    reader.close();
    const again = stream.read();
    assert.equal(again.next()?.n, 1, "the one being written stays for the next subscriber");
  });

  test("a long idle spell (thousands of heartbeats) does not grow anything", async () => {
    mock.timers.enable({ apis: ["setTimeout"] });
    try {
      const stream = create();
      const it = stream.subscribe();
      for (let i = 0; i < 15_000; i += 1) {
        const next = it.next();
        await Promise.resolve();
        mock.timers.tick(5000);
        assert.deepEqual(await next, { done: false, value: "♥" });
      }
      const next = it.next();
      await Promise.resolve();
      stream.push("still alive");
      assert.deepEqual(await next, { done: false, value: "still alive" });
    } finally {
      mock.timers.reset();
    }
  });
});

describe("OutboundStream.read()", () => {
  test("next() counts the previous message as delivered; close() leaves the last one undelivered", () => {
    const stream = create();
    for (const m of ["a", "b", "c"]) stream.push(m);
    let detached = 0;
    const reader = stream.read(undefined, () => {
      detached += 1;
    });
    assert.equal(stream.subscribed, true);
    assert.equal(reader.next(), "a");
    assert.equal(stream.delivered, 0, "handed out, not yet written");
    assert.equal(reader.next(), "b");
    assert.equal(stream.delivered, 1);
    reader.close();
    reader.close();
    assert.equal(detached, 1, "onDetach runs once");
    assert.equal(stream.subscribed, false);
    assert.equal(reader.next(), undefined);
    assert.equal(reader.done, true);
    assert.equal(stream.delivered, 1, "b was being written when the connection dropped");
    const again = stream.read();
    assert.equal(again.next(), "b");
  });

  test("wait() resolves on a push; the end comes after the backlog, with its error", async () => {
    const stream = create();
    const reader = stream.read();
    assert.equal(reader.next(), undefined);
    assert.equal(reader.done, false);
    const waiting = reader.wait();
    stream.push("x");
    await waiting;
    assert.equal(reader.next(), "x");
    stream.end(new Error("canceled"));
    assert.equal(reader.next(), undefined);
    assert.equal(reader.done, true);
    assert.match(String(reader.error), /canceled/);
    assert.equal(stream.delivered, 1);
  });

  test("a takeover ends the reader without counting the message it was writing", async () => {
    const stream = create();
    stream.push("a");
    const first = stream.read();
    assert.equal(first.next(), "a");
    const waiting = first.wait();
    const second = stream.read();
    await waiting;
    assert.equal(first.next(), undefined);
    assert.equal(first.done, true);
    assert.equal(first.error, undefined);
    assert.equal(stream.delivered, 0);
    assert.equal(second.next(), "a");
  });

  test("close() and an abort wake a waiting reader", async () => {
    const stream = create();
    const closed = stream.read();
    const waiting = closed.wait();
    closed.close();
    await waiting;
    assert.equal(closed.done, true);
    const controller = new AbortController();
    const aborted = stream.read(controller.signal);
    const pending = aborted.wait();
    controller.abort();
    await pending;
    assert.equal(aborted.next(), undefined);
    assert.equal(aborted.done, true);
  });

  test("a reader listens on its signal while open, and no more once closed; an abort wakes its wait at once", async () => {
    const stream = create();
    const controller = new AbortController();
    const reader = stream.read(controller.signal);
    assert.equal(getEventListeners(controller.signal, "abort").length, 1);
    reader.close();
    assert.equal(getEventListeners(controller.signal, "abort").length, 0);
    // Timers mocked: the wait's heartbeat never comes, so only the abort can end the wait.
    mock.timers.enable({ apis: ["setTimeout"] });
    try {
      const next = stream.read(controller.signal);
      const waiting = next.wait();
      controller.abort();
      await waiting;
      assert.equal(next.next(), undefined);
      assert.equal(next.done, true);
    } finally {
      mock.timers.reset();
    }
  });

  test("waitForMore(): a burst pushed in promise jobs is joined, and read in the check phase", async () => {
    const stream = createOutboundStream<string>({
      heartbeatMs: 5000,
      heartbeat: () => "♥",
      join: (last, message) => last + message,
    });
    const { reader, state, waiting } = waitingForMore(stream);
    for (const part of ["b", "c", "d"]) {
      await null;
      stream.push(part);
    }
    await null;
    assert.equal(state.resumed, false, "a push before the check phase does not wake it");
    await waiting;
    assert.equal(reader.next(), "bcd");
    assert.equal(reader.next(), undefined);
    assert.equal(stream.delivered, 2);
  });

  test("waitForMore(): with nothing by the check phase, it waits for the next push", async () => {
    const stream = create();
    const { reader, state, waiting } = waitingForMore(stream);
    // Queued after the reader's own: runs once its check has found nothing.
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(state.resumed, false);
    stream.push("b");
    await waiting;
    assert.equal(reader.next(), "b");
  });

  test("waitForMore(): close() wakes it at once", async () => {
    const stream = create();
    const { reader, waiting } = waitingForMore(stream);
    reader.close();
    await waiting;
    assert.equal(reader.next(), undefined);
    assert.equal(reader.done, true);
    assert.equal(stream.delivered, 0, "closed before asking for the next: left undelivered");
  });

  test("a heartbeat after heartbeatMs of waiting, not backlogged", async () => {
    mock.timers.enable({ apis: ["setTimeout"] });
    try {
      const stream = create();
      const reader = stream.read();
      const waiting = reader.wait();
      mock.timers.tick(5000);
      await waiting;
      assert.equal(reader.next(), "♥");
      assert.equal(reader.next(), undefined);
      assert.equal(stream.length, 0);
    } finally {
      mock.timers.reset();
    }
  });

  test("streams and readers stay fast objects; their members read as before (issue #19)", () => {
    const streams = [create(), create(), create()];
    const readers = streams.map((stream) => stream.read());
    for (const stream of streams) assert.equal(hasFastProperties(stream), true);
    for (const reader of readers) assert.equal(hasFastProperties(reader), true);
    const [stream, other] = streams as [ReturnType<typeof create>, ReturnType<typeof create>];
    const reader = readers[0] as ReturnType<typeof stream.read>;
    stream.push("a");
    stream.push("b");
    assert.deepEqual(
      [stream.length, stream.delivered, stream.retained, stream.subscribed, stream.ended],
      [2, 0, 2, true, false],
    );
    assert.equal(reader.next(), "a");
    assert.equal(reader.next(), "b");
    assert.deepEqual([stream.delivered, stream.retained], [1, 1]);
    stream.end(new Error("over"));
    assert.equal(reader.next(), undefined);
    assert.deepEqual([reader.done, (reader.error as Error).message], [true, "over"]);
    assert.deepEqual([stream.delivered, stream.retained, stream.ended], [2, 0, true]);
    reader.close();
    assert.equal(stream.subscribed, false);
    assert.deepEqual([other.length, other.subscribed, readers[1]?.done], [0, true, false]);
    // One record per stream and per reader, their methods shared (not closures per stream).
    assert.equal(stream.push, other.push);
    assert.equal(reader.next, readers[1]?.next);
    // Not thenable: a stream or reader returned from an async function stays itself.
    assert.equal("then" in stream || "then" in reader, false);
  });
});

describe("OutboundStream.hold() (a graceful shutdown)", () => {
  test("a reader writing a live stream gets nothing more, not even the end, and is done and held", async () => {
    const stream = create();
    stream.push("a");
    stream.push("b");
    const reader = stream.read();
    assert.equal(reader.next(), "a");
    assert.equal(reader.next(), "b");
    const waiting = reader.wait();
    stream.hold();
    await waiting;
    stream.push("c");
    stream.end(new Error("canceled"));
    assert.equal(reader.next(), undefined);
    assert.deepEqual([reader.done, reader.held, reader.error], [true, true, undefined]);
    assert.equal(stream.held, true);
    // A reader attached later (a reconnect during the shutdown) is held at once.
    const later = stream.read();
    assert.equal(later.next(), undefined);
    assert.deepEqual([later.done, later.held], [true, true]);
  });

  test("a stream that has ended is not held: its reader still gets the rest and the end", () => {
    const stream = create();
    stream.push("a");
    stream.end(new Error("over"));
    stream.hold();
    assert.equal(stream.held, false);
    const reader = stream.read();
    assert.equal(reader.next(), "a");
    assert.equal(reader.next(), undefined);
    assert.deepEqual(
      [reader.done, reader.held, (reader.error as Error).message],
      [true, false, "over"],
    );
  });

  test("a subscriber's generator awaits onHeld, then returns without throwing the end", async () => {
    const stream = create();
    let release!: () => void;
    let heldCalls = 0;
    const onHeld = () => {
      heldCalls += 1;
      return new Promise<void>((resolve) => {
        release = resolve;
      });
    };
    const it = stream.subscribe(undefined, undefined, onHeld);
    const pending = it.next();
    stream.hold();
    stream.end(new Error("canceled"));
    let settled = false;
    void pending.then(() => {
      settled = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(heldCalls, 1);
    assert.equal(settled, false, "the generator waits for the connection to go");
    release();
    assert.deepEqual(await pending, { done: true, value: undefined });
  });
});
