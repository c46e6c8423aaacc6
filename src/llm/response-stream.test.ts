import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createAssistantMessageEventStream } from "@earendil-works/pi-ai/utils/event-stream";
import {
  createRelayStream,
  createResponseStream,
  endRelay,
  type ProviderEvents,
  type ResponseStreamHooks,
  type ResponseStreamOptions,
  relayEvent,
} from "./response-stream.ts";
import { hasFastProperties } from "./testing/fast-properties.ts";
import { collect, toTestMessage } from "./testing/streams.ts";
import type { RequestAttempt, ResponseEvent, SentRequest } from "./types.ts";

const message = toTestMessage;

function streamOf(events: AsyncIterable<ResponseEvent>, controller = new AbortController()) {
  return createResponseStream({
    callID: "call-1",
    controller,
    events,
    hooks: {
      toFailure: (reason, errorMessage) => ({ ...message(reason), errorMessage }),
    },
  });
}

async function* from(...events: ResponseEvent[]): AsyncIterable<ResponseEvent> {
  yield* events;
}

const START: ResponseEvent = { type: "start", partial: message("pending") };

describe("response stream", () => {
  test("a source that ends without a terminal event ends with a synthetic error", async () => {
    const events = await collect(streamOf(from(START)));
    assert.deepEqual(
      events.map((e) => e.type),
      ["start", "error"],
    );
    const last = events[1];
    assert.ok(last?.type === "error" && last.reason === "error");
    assert.match(last.error.errorMessage ?? "", /without a terminal event/);
  });

  test("a source that throws ends with an error carrying the message; the stream never rejects", async () => {
    async function* failing(): AsyncIterable<ResponseEvent> {
      yield START;
      throw new Error("socket hang up");
    }
    const events = await collect(streamOf(failing()));
    const last = events.at(-1);
    assert.ok(last?.type === "error");
    assert.equal(last.error.errorMessage, "socket hang up");
  });

  test("a failure after abort() is reported as aborted", async () => {
    const controller = new AbortController();
    async function* waiting(): AsyncIterable<ResponseEvent> {
      yield START;
      await new Promise((resolve) => controller.signal.addEventListener("abort", resolve));
      throw new Error("aborted by the test");
    }
    const stream = streamOf(waiting(), controller);
    assert.equal((await stream.recv())?.type, "start");
    stream.abort();
    assert.equal(stream.signal.aborted, true);
    const last = await stream.recv();
    assert.ok(last?.type === "error" && last.reason === "aborted");
    assert.equal(await stream.recv(), undefined);
  });

  test("nothing follows the terminal event", async () => {
    const events = await collect(
      streamOf(
        from(
          START,
          { type: "done", reason: "stop", message: message("stop") },
          { type: "text_start", contentIndex: 0, partial: message("pending") },
          { type: "error", reason: "error", error: message("error") },
        ),
      ),
    );
    assert.deepEqual(
      events.map((e) => e.type),
      ["start", "done"],
    );
  });

  test("readers waiting when the stream ends get the terminal event, then undefined", async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    async function* gated(): AsyncIterable<ResponseEvent> {
      await gate;
      yield { type: "error", reason: "error", error: message("error") };
    }
    const stream = streamOf(gated());
    const first = stream.recv();
    const second = stream.recv();
    release();
    assert.equal((await first)?.type, "error");
    assert.equal(await second, undefined);
    assert.equal(await stream.recv(), undefined);
  });

  test("iterable with for await; the terminal error goes through finishError", async () => {
    const stream = createResponseStream({
      callID: "call-2",
      controller: new AbortController(),
      events: from(START, {
        type: "error",
        reason: "error",
        error: { ...message("error"), errorMessage: "raw" },
      }),
      hooks: {
        toFailure: (reason) => message(reason),
        finishError: (error) => ({ ...error, errorMessage: `finished: ${error.errorMessage}` }),
      },
    });
    const types: string[] = [];
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "error") assert.equal(event.error.errorMessage, "finished: raw");
    }
    assert.deepEqual(types, ["start", "error"]);
    assert.equal(stream.callID, "call-2");
    assert.equal(stream.exactRequest, undefined);
    assert.deepEqual(stream.attempts, []);
  });

  test("the stream is a fast object; exactRequest and attempts read the call's state when asked (issue #19)", async () => {
    let sent: SentRequest | undefined;
    const attempts: RequestAttempt[] = [];
    const stream = createResponseStream({
      callID: "call-3",
      controller: new AbortController(),
      events: from(START, { type: "done", reason: "stop", message: message("stop") }),
      hooks: {
        toFailure: (reason) => message(reason),
        exactRequest: () => sent,
        attempts: () => attempts,
      },
    });
    // An object literal with a `get` member would be in dictionary mode (≈ 4x the memory).
    assert.equal(hasFastProperties(stream), true);
    assert.equal(stream.exactRequest, undefined);
    sent = Object.freeze({
      callID: "call-3",
      model: "m",
      method: "POST",
      url: "http://127.0.0.1/v1",
      bodyHash: "h",
      replayed: false,
    });
    attempts.push({ attempt: 1, status: 200 });
    assert.equal(stream.exactRequest, sent);
    assert.deepEqual(stream.attempts, [{ attempt: 1, status: 200 }]);
    assert.ok(Object.isFrozen(stream.attempts));
    assert.notEqual(stream.attempts, attempts);
    // Accessors without a setter, shared by every stream (its prototype's), not data copied in.
    for (const name of ["exactRequest", "attempts"]) {
      const descriptor = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(stream), name);
      assert.equal(typeof descriptor?.get, "function");
      assert.equal(descriptor?.set, undefined);
    }
    assert.equal(hasFastProperties(stream), true);
    await collect(stream);
  });
  test("streams share their methods, not their state: two read at once each get their own events (issue #19)", async () => {
    const controller = new AbortController();
    const one = streamOf(
      from(START, { type: "done", reason: "stop", message: message("stop", "one") }),
    );
    const other = streamOf(
      from(START, { type: "done", reason: "stop", message: message("stop", "other") }),
      controller,
    );
    assert.equal(one.recv, other.recv);
    assert.equal("then" in one, false);
    // Waiting on both before either source is read: each waiter gets its own stream's event.
    const [first, second] = await Promise.all([one.recv(), other.recv()]);
    assert.deepEqual([first?.type, second?.type], ["start", "start"]);
    other.abort("enough");
    assert.equal(controller.signal.aborted, true);
    assert.equal(one.signal.aborted, false);
    const ends = [await one.recv(), await other.recv()];
    const texts = ends.map((event) =>
      event?.type === "done"
        ? event.message.content.map((block) => block.type === "text" && block.text)
        : event?.type,
    );
    assert.deepEqual(texts, [["one"], ["other"]]);
    assert.deepEqual([await one.recv(), await other.recv()], [undefined, undefined]);
  });
  test("several recv calls waiting at once get the events in order, then undefined", async () => {
    let push!: (event: ResponseEvent | null) => void;
    async function* source(): AsyncIterable<ResponseEvent> {
      for (;;) {
        const event = await new Promise<ResponseEvent | null>((resolve) => {
          push = resolve;
        });
        if (event === null) return;
        yield event;
      }
    }
    const stream = streamOf(source());
    const waiting = [stream.recv(), stream.recv(), stream.recv(), stream.recv()];
    await new Promise((resolve) => setImmediate(resolve));
    push(START);
    await new Promise((resolve) => setImmediate(resolve));
    push({ type: "done", reason: "stop", message: message("stop") });
    const events = await Promise.all(waiting);
    assert.deepEqual(
      events.map((event) => event?.type),
      ["start", "done", undefined, undefined],
    );
  });

  test("a copy of the options keeps hooks shared through a prototype: the failure ends the stream redacted, and onEnd runs (issue #19)", async () => {
    // Shaped like llm.ts's provider call: the hooks are methods of a record's prototype.
    interface Call extends ResponseStreamHooks {
      readonly secret: string;
      ended: number;
    }
    const callMethods: ResponseStreamHooks & ThisType<Call> = {
      toFailure(reason, errorMessage) {
        return { ...message(reason), errorMessage };
      },
      finishError(error) {
        const text = error.errorMessage ?? "";
        return { ...error, errorMessage: text.replaceAll(this.secret, "[redacted]") };
      },
      onEnd() {
        this.ended += 1;
      },
    };
    const call: Call = Object.setPrototypeOf({ secret: "sk-SECRET", ended: 0 }, callMethods);
    async function* failing(): AsyncIterable<ResponseEvent> {
      yield START;
      throw new Error("401 for key sk-SECRET");
    }
    const options: ResponseStreamOptions = {
      callID: "call-4",
      controller: new AbortController(),
      events: failing(),
      hooks: call,
    };
    // A wrapper decorating the options by spreading them.
    const stream = createResponseStream({ ...options, callID: "call-5" });
    assert.equal(stream.callID, "call-5");
    assert.equal((await stream.recv())?.type, "start");
    const terminal = await stream.recv();
    assert.equal(terminal?.type, "error");
    assert.equal(
      terminal?.type === "error" && terminal.error.errorMessage,
      "401 for key [redacted]",
    );
    assert.equal(await stream.recv(), undefined);
    assert.equal(call.ended, 1);
    // Spreading the hooks record itself would lose them: that fails where the stream is made.
    assert.throws(
      () =>
        createResponseStream({ ...options, hooks: { ...call } as unknown as ResponseStreamHooks }),
      { name: "TypeError", message: /hooks\.toFailure must be a function/ },
    );
  });

  test("a relay stream hands out the events it is fed as they are, to waiting and later readers", async () => {
    const observed: ResponseEvent[] = [];
    const relay = createRelayStream({
      callID: "call-2",
      controller: new AbortController(),
      hooks: {
        toFailure: (reason, errorMessage) => ({ ...message(reason), errorMessage }),
        observe: (event) => observed.push(event),
      },
    });
    const first = relay.recv();
    const done: ResponseEvent = { type: "done", reason: "stop", message: message("stop", "hi") };
    relayEvent(relay, START);
    relayEvent(relay, done);
    const last = relay.recv();
    endRelay(relay, "unused");
    assert.equal(await first, START);
    assert.equal(await last, done);
    assert.deepEqual(observed, [START, done]);
    assert.equal(await relay.recv(), undefined);
    assert.equal(relay.poll(), undefined);
    assert.equal(relay.callID, "call-2");
  });

  test("a relay stream ended without a terminal event ends with its owner's failure, through finishError", async () => {
    const controller = new AbortController();
    let ended = 0;
    const relay = createRelayStream({
      callID: "call-3",
      controller,
      hooks: {
        toFailure: (reason, errorMessage) => ({ ...message(reason), errorMessage }),
        finishError: (error) => ({ ...error, errorMessage: `[${error.errorMessage}]` }),
        onEnd: () => {
          ended += 1;
        },
      },
    });
    const waiting = [relay.recv(), relay.recv(), relay.recv()];
    relayEvent(relay, START);
    controller.abort();
    endRelay(relay, "the owner stopped");
    endRelay(relay, "twice");
    const [start, failure, after] = await Promise.all(waiting);
    assert.equal(start, START);
    assert.ok(failure?.type === "error" && failure.reason === "aborted");
    assert.equal(failure.error.errorMessage, "[the owner stopped]");
    assert.equal(after, undefined);
    assert.equal(ended, 1);
  });
});

describe("response stream over a provider's stream (read as pushed)", () => {
  /** A stream over `source`, and a promise that resolves once the stream has started it. */
  function streamOver(
    source: () => ProviderEvents,
    hooks: Partial<ResponseStreamHooks> = {},
  ): { stream: ReturnType<typeof createResponseStream>; started: Promise<void> } {
    let begin!: () => void;
    const started = new Promise<void>((resolve) => {
      begin = resolve;
    });
    const stream = createResponseStream({
      callID: "call-p",
      controller: new AbortController(),
      events: () => {
        begin();
        return source();
      },
      hooks: {
        toFailure: (reason, errorMessage) => ({ ...message(reason), errorMessage }),
        ...hooks,
      },
    });
    return { stream, started };
  }

  test("each event is handed out while the provider pushes it; the terminal event and the end are pi-ai's own", async () => {
    const source = createAssistantMessageEventStream();
    const { stream, started } = streamOver(() => source);
    await started;
    source.push(START);
    // No promise in between: the reader has it when `push` returns.
    assert.equal(stream.poll()?.type, "start");
    source.push({ type: "text_start", contentIndex: 0, partial: message("pending", "") });
    source.push({
      type: "text_delta",
      contentIndex: 0,
      delta: "hi",
      partial: message("pending", "hi"),
    });
    assert.deepEqual(
      [stream.poll()?.type, stream.poll()?.type, stream.poll()],
      ["text_start", "text_delta", undefined],
    );
    // A final message newer than the stream: pi-ai's own push times it.
    const final = { ...message("stop", "hi"), timestamp: Date.now() };
    source.push({ type: "done", reason: "stop", message: final });
    source.end();
    const done = await stream.recv();
    assert.ok(done?.type === "done");
    assert.equal(typeof done.message.durationMs, "number");
    assert.equal(await stream.recv(), undefined);
    // Pushed after the end: nothing more.
    source.push({
      type: "text_delta",
      contentIndex: 0,
      delta: "late",
      partial: message("pending"),
    });
    assert.equal(stream.poll(), undefined);
  });

  test("a provider that failed before it was read (pushed its error and ended at once): the error is handed out", async () => {
    const { stream } = streamOver(() => {
      const failed = createAssistantMessageEventStream();
      failed.push({ type: "error", reason: "error", error: message("error", "no key") });
      failed.end();
      return failed;
    });
    const events = await collect(stream);
    assert.deepEqual(
      events.map((e) => e.type),
      ["error"],
    );
    assert.deepEqual(events[0]?.type === "error" && events[0].error.content, [
      { type: "text", text: "no key" },
    ]);
  });

  test("a provider that ends without a terminal event ends with a synthetic error; a start that throws, with its error", async () => {
    const source = createAssistantMessageEventStream();
    const { stream, started } = streamOver(() => source);
    await started;
    source.push(START);
    source.end();
    const events = await collect(stream);
    assert.deepEqual(
      events.map((e) => e.type),
      ["start", "error"],
    );
    assert.match(
      (events[1]?.type === "error" && events[1].error.errorMessage) || "",
      /without a terminal event/,
    );
    const thrown = await collect(
      streamOver(() => {
        throw new Error("the provider module is broken");
      }).stream,
    );
    assert.equal(thrown.length, 1);
    assert.equal(
      thrown[0]?.type === "error" && thrown[0].error.errorMessage,
      "the provider module is broken",
    );
  });

  test("a throw while an event is handed out ends the stream with an error, not the provider's push", async () => {
    const source = createAssistantMessageEventStream();
    const { stream, started } = streamOver(() => source, {
      observe: (event) => {
        if (event.type === "text_delta") throw new Error("observer failed");
      },
    });
    await started;
    source.push(START);
    assert.doesNotThrow(() =>
      source.push({ type: "text_delta", contentIndex: 0, delta: "x", partial: message("pending") }),
    );
    source.push({ type: "done", reason: "stop", message: message("stop") });
    source.end();
    const events = await collect(stream);
    assert.deepEqual(
      events.map((e) => e.type),
      ["start", "error"],
    );
    assert.equal(events[1]?.type === "error" && events[1].error.errorMessage, "observer failed");
  });
});
