import assert from "node:assert/strict";
import { describe, mock, test } from "node:test";
import { type Admission, type AdmitCall, GATE_PROVIDER, gateLLM } from "./gated-llm.ts";
import type { LLM } from "./llm.ts";
import { createResponseStream } from "./response-stream.ts";
import { collect, toTestMessage } from "./testing/streams.ts";
import type { AssistantMessage, LLMCall, LLMStream, ResponseEvent } from "./types.ts";

/** What every finished call of these tests used. */
const USAGE: AssistantMessage["usage"] = {
  input: 10,
  output: 5,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 15,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0.25 },
};

function message(stopReason: AssistantMessage["stopReason"], text = ""): AssistantMessage {
  return { ...toTestMessage(stopReason, text), usage: USAGE };
}

const CALL: LLMCall = {
  callID: "call-1",
  model: "m",
  conversationID: "conversation-1",
  request: { systemPrompt: "s", tools: [], messages: [] },
};

/**
 * An LLM whose calls stream the events pushed with `push` (null ends the source); `handed` holds
 * what the inner streams handed out, `calls` what they were asked.
 */
function createScriptedLLM() {
  /** The source's wait for its next event, while it waits. */
  let waiting: ((event: ResponseEvent | null) => void) | undefined;
  const ready: ResponseEvent[] = [];
  const handed: ResponseEvent[] = [];
  const calls: LLMCall[] = [];
  const streams: LLMStream[] = [];
  async function* source(signal: AbortSignal): AsyncIterable<ResponseEvent> {
    for (;;) {
      const event =
        ready.shift() ??
        (await new Promise<ResponseEvent | null>((resolve) => {
          waiting = resolve;
          signal.addEventListener("abort", () =>
            resolve({ type: "error", reason: "aborted", error: message("aborted") }),
          );
        }));
      if (event === null) return;
      yield event;
    }
  }
  const llm: LLM = {
    listModels: () => [],
    health: () => [],
    findModel: () => undefined,
    stream(call: LLMCall) {
      calls.push(call);
      const controller = new AbortController();
      call.signal?.addEventListener("abort", () => controller.abort(call.signal?.reason));
      const stream = createResponseStream({
        callID: call.callID,
        controller,
        events: source(controller.signal),
        hooks: {
          toFailure: (reason, errorMessage) => ({ ...message(reason), errorMessage }),
          observe: (event) => handed.push(event),
        },
      });
      streams.push(stream);
      return stream;
    },
  } as unknown as LLM;
  return {
    llm,
    handed,
    calls,
    streams,
    /** Hands `event` to the waiting source, or queues it for the source's next read. */
    push(event: ResponseEvent | null) {
      const resolve = waiting;
      waiting = undefined;
      if (resolve !== undefined) resolve(event);
      else if (event !== null) ready.push(event);
    },
  };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

function admitting(admission: Admission = { type: "admitted" }): AdmitCall {
  return async () => admission;
}

describe("gateLLM", () => {
  test("an admitted call hands on the inner call's own snapshots, no copies, in order", async () => {
    const inner = createScriptedLLM();
    const stream = gateLLM(inner.llm, admitting()).stream(CALL);
    inner.push({ type: "start", partial: message("pending") });
    inner.push({ type: "done", reason: "stop", message: message("stop", "hi") });
    const events = await collect(stream);
    assert.deepEqual(
      events.map((event) => event.type),
      ["start", "done"],
    );
    // The very objects the inner stream handed out: relayed, not snapshotted again.
    assert.equal(events[0], inner.handed[0]);
    assert.equal(events[1], inner.handed[1]);
    assert.equal(await stream.recv(), undefined);
    assert.equal(stream.poll(), undefined);
  });

  test("the terminal event is handed out only once the call is settled, with what it used", async () => {
    const inner = createScriptedLLM();
    let release: () => void = () => {};
    const settled: unknown[] = [];
    const stream = gateLLM(
      inner.llm,
      admitting({
        type: "admitted",
        settle: async (used) => {
          await new Promise<void>((resolve) => {
            release = resolve;
          });
          settled.push(used);
        },
      }),
    ).stream(CALL);
    inner.push({ type: "start", partial: message("pending") });
    assert.equal((await stream.recv())?.type, "start");
    inner.push({ type: "done", reason: "stop", message: message("stop", "hi") });
    const reading = stream.recv();
    let handed = false;
    void reading.then(() => {
      handed = true;
    });
    await turn();
    await turn();
    assert.equal(handed, false, "the terminal event waits for the settlement");
    assert.equal(stream.poll(), undefined);
    release();
    assert.equal((await reading)?.type, "done");
    assert.deepEqual(settled, [{ tokens: 15, cost: 0.25 }]);
  });

  test("a call nobody reads is still settled, and its hold stops when it ends", async () => {
    mock.timers.enable({ apis: ["setInterval"] });
    try {
      const inner = createScriptedLLM();
      let holds = 0;
      let settledWith: unknown;
      const settled = new Promise<void>((resolve) => {
        const admit: AdmitCall = async () => ({
          type: "admitted",
          hold: async () => {
            holds += 1;
          },
          settle: async (used) => {
            settledWith = used;
            resolve();
          },
        });
        gateLLM(inner.llm, admit, { holdEveryMs: 10 }).stream(CALL);
      });
      await turn();
      mock.timers.tick(30);
      assert.equal(holds, 3, "held while it runs");
      inner.push({ type: "start", partial: message("pending") });
      inner.push({ type: "done", reason: "stop", message: message("stop") });
      await settled;
      assert.deepEqual(settledWith, { tokens: 15, cost: 0.25 });
      mock.timers.tick(100);
      assert.equal(holds, 3, "no hold after the end");
    } finally {
      mock.timers.reset();
    }
  });

  test("a refused call is never made: one error event from the gate, the budget's prefix added", async () => {
    const inner = createScriptedLLM();
    const stream = gateLLM(
      inner.llm,
      admitting({ type: "refused", kind: "budget", message: "alice spent $5 of $5 today" }),
    ).stream(CALL);
    const events = await collect(stream);
    assert.equal(events.length, 1);
    const [refusal] = events;
    assert.ok(refusal?.type === "error" && refusal.reason === "error");
    assert.equal(refusal.error.provider, GATE_PROVIDER);
    assert.equal(refusal.error.errorMessage, "Budget reached: alice spent $5 of $5 today");
    assert.equal(inner.calls.length, 0);
  });

  test("an admission check that fails refuses the call (fails closed)", async () => {
    const inner = createScriptedLLM();
    const stream = gateLLM(inner.llm, async () => {
      throw new Error("database unreachable");
    }).stream(CALL);
    const events = await collect(stream);
    assert.equal(events.length, 1);
    assert.ok(events[0]?.type === "error");
    assert.match(
      events[0].error.errorMessage ?? "",
      /admission check failed \(database unreachable\)/,
    );
    assert.equal(inner.calls.length, 0);
  });

  test("aborted while admitted: settled with nothing used, ends aborted, the call never made", async () => {
    const inner = createScriptedLLM();
    const settled: unknown[] = [];
    let admitted: (admission: Admission) => void = () => {};
    let asked: () => void = () => {};
    const admitAsked = new Promise<void>((resolve) => {
      asked = resolve;
    });
    const controller = new AbortController();
    const stream = gateLLM(inner.llm, () => {
      asked();
      return new Promise<Admission>((resolve) => {
        admitted = resolve;
      });
    }).stream({ ...CALL, signal: controller.signal });
    await admitAsked;
    controller.abort("the user stopped");
    admitted({
      type: "admitted",
      settle: async (used) => {
        settled.push(used);
      },
    });
    const events = await collect(stream);
    assert.equal(events.length, 1);
    assert.ok(events[0]?.type === "error" && events[0].reason === "aborted");
    assert.deepEqual(settled, [{ tokens: 0, cost: 0 }]);
    assert.equal(inner.calls.length, 0);
    assert.equal(stream.signal.aborted, true);
  });

  test("the caller's signal aborts the running call, which ends aborted; the key goes to the call", async () => {
    const inner = createScriptedLLM();
    const controller = new AbortController();
    const apiKey = { name: "key" } as unknown as NonNullable<LLMCall["apiKey"]>;
    const stream = gateLLM(inner.llm, admitting({ type: "admitted", apiKey })).stream({
      ...CALL,
      signal: controller.signal,
    });
    inner.push({ type: "start", partial: message("pending") });
    assert.equal((await stream.recv())?.type, "start");
    assert.equal(inner.calls[0]?.apiKey, apiKey);
    controller.abort("stop");
    const end = await stream.recv();
    assert.ok(end?.type === "error" && end.reason === "aborted");
    assert.equal(await stream.recv(), undefined);
  });
});
