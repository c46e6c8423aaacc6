import assert from "node:assert/strict";
import { test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { AssistantMessage, ToolResultMessage } from "@earendil-works/pi-ai";
import { createModelConfig } from "./config.ts";
import { createLLM } from "./llm.ts";
import { createSentPayload } from "./sent-payload.ts";
import { firstRequest } from "./testing/behaviours.ts";
import { readFixture, startFakeProvider } from "./testing/fake-provider.ts";
import { OPENAI_CHAT } from "./testing/provider-specs.ts";

setFlagsFromString("--expose-gc");
/** A full collection, from a fresh context where `--expose-gc` took effect. */
const collect = runInNewContext("gc") as () => void;

test("the body handed back to pi-ai is our own object, emptied (its values undefined) once released", () => {
  const sent = createSentPayload("openai-chat");
  const built = { model: "m", messages: [{ role: "user", content: "hi" }] };
  const adopted = sent.adopt(built, built) as Record<string, unknown>;
  assert.notEqual(adopted, built);
  assert.deepEqual(adopted, built);
  sent.release();
  assert.deepEqual(adopted, { model: undefined, messages: undefined });
  assert.deepEqual(Object.keys(built), ["model", "messages"]);
  assert.deepEqual(built.messages, [{ role: "user", content: "hi" }]);
  // A replacement body is already ours: handed back as it is.
  const replaced = { ...built, parallel_tool_calls: true };
  const again = createSentPayload("openai-responses");
  assert.equal(again.adopt(built, replaced), replaced);
  again.release();
  assert.deepEqual(Object.values(replaced), [undefined, undefined, undefined]);
});

test("Anthropic and Gemini bodies are handed back and kept as they are", () => {
  for (const api of ["anthropic", "gemini"] as const) {
    const sent = createSentPayload(api);
    const built = { model: "m", messages: [] };
    assert.equal(sent.adopt(built, built), built);
    sent.release();
    assert.deepEqual(Object.keys(built), ["model", "messages"]);
  }
});

test("calls in flight do not keep a converted copy of their history (issue #19)", async () => {
  const fake = await startFakeProvider();
  try {
    const config = createModelConfig(OPENAI_CHAT.config(fake.url));
    const llm = createLLM({ models: [config] });
    // 20 tool-call rounds with 50 KB of arguments each: pi-ai writes every call's arguments as a
    // new JSON string, ≈ 1 MB per call.
    const history: (AssistantMessage | ToolResultMessage)[] = [];
    for (let round = 0; round < 20; round++) {
      history.push({
        role: "assistant",
        content: [
          {
            type: "toolCall",
            id: `call_${round}`,
            name: "edit_file",
            arguments: { path: `f${round}.ts`, content: `${round}`.repeat(50_000) },
          },
        ],
        api: "openai-completions",
        provider: "openai",
        model: "gpt-4.1",
        usage: {
          input: 1,
          output: 1,
          cacheRead: 0,
          cacheWrite: 0,
          totalTokens: 2,
          cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
        },
        stopReason: "toolUse",
        timestamp: round,
      });
      history.push({
        role: "toolResult",
        toolCallId: `call_${round}`,
        toolName: "edit_file",
        content: [{ type: "text", text: "ok" }],
        isError: false,
        timestamp: round,
      });
    }
    const first = firstRequest();
    const request = { ...first, messages: [...first.messages, ...history] };
    const open = async (count: number) => {
      const streams = [];
      for (let i = 0; i < count; i++) {
        fake.reply({ type: "stall", body: readFixture("openai-chat", "text"), events: 2 });
        streams.push(
          llm.stream({ callID: `c${i}`, conversationID: `conv${i}`, model: config.name, request }),
        );
      }
      for (const stream of streams) assert.equal((await stream.recv())?.type, "start");
      return streams;
    };
    for (const stream of await open(2)) stream.abort();
    collect();
    const before = process.memoryUsage().heapUsed;
    const streams = await open(10);
    collect();
    const perCall = (process.memoryUsage().heapUsed - before) / streams.length;
    for (const stream of streams) stream.abort();
    // Without the release ≈ 1.5 MB per call; with it ≈ 0.25 MB (the call, and the fake
    // provider's side of it).
    assert.ok(perCall < 600_000, `${Math.round(perCall / 1024)} KiB per call in flight`);
  } finally {
    await fake.close();
  }
});
