/**
 * The dashboard's "first token" (docs/dashboard.md, "Timing") is when the first content delta
 * arrived, not the stream's `start` event (which a provider may send before any token).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { hashBody, type LLM, toErrorMessage } from "../llm/index.ts";
import { createResponseStream } from "../llm/response-stream.ts";
import type { ResponseEvent, StartInput } from "../loop/index.ts";
import { assistantMessage, T0, text, toEvents } from "../loop/testing.ts";
import { createMemoryStore } from "../store/index.ts";
import { createRunner } from "./runner.ts";
import type { TurnOutcome, TurnOutput } from "./types.ts";

test("a call's first-event time is its first content delta, not its start event", async () => {
  let clock = 1_000;
  let openGate!: () => void;
  const gate = new Promise<void>((resolve) => {
    openGate = resolve;
  });
  const events = toEvents(assistantMessage([text("Hello there.")], undefined, T0));
  const llm: Pick<LLM, "stream"> = {
    stream(request) {
      async function* source(): AsyncGenerator<ResponseEvent> {
        await request.beforeSend?.({
          callID: request.callID,
          model: request.model,
          method: "POST",
          url: "http://127.0.0.1/v1/chat/completions",
          body: "{}",
          bodyHash: hashBody("{}"),
          replayed: false,
        });
        yield events[0] as ResponseEvent; // start
        await gate; // opened once the runner has applied `start`
        yield* events.slice(1);
      }
      return createResponseStream({
        callID: request.callID,
        controller: new AbortController(),
        events: source(),
        hooks: {
          toFailure: (reason, errorMessage) =>
            toErrorMessage({
              api: "test",
              provider: "test",
              model: "m",
              reason,
              errorMessage,
              timestamp: T0,
            }),
        },
      });
    },
  };
  const store = createMemoryStore();
  const runner = createRunner({ store, llm, now: () => clock });
  let ended!: (outcome: TurnOutcome) => void;
  const done = new Promise<TurnOutcome>((resolve) => {
    ended = resolve;
  });
  const output: TurnOutput = {
    publish(emitted) {
      if (emitted.some((event) => event.type === "start")) {
        clock = 5_000;
        openGate();
      }
    },
    runTool: () => Promise.reject(new Error("no tools here")),
    end: (outcome) => ended(outcome),
  };
  const start: StartInput = {
    type: "start",
    inputID: "in:hi",
    at: T0,
    userMessage: { role: "user", content: "hi", timestamp: T0 },
    context: [],
    settings: { model: "m", systemPrompt: "", tools: [] },
  };
  await runner.submit("conv-first-token", start, output);
  assert.equal((await done).type, "final");
  await runner.shutdown();
  const detail = await store.readConversationDetail("conv-first-token");
  assert.equal(detail?.calls.length, 1);
  assert.equal(detail?.calls[0]?.firstEventAt, 5_000);
});
