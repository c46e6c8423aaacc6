import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { Api, AssistantMessage, ToolResultMessage } from "@earendil-works/pi-ai";
import { createModelConfig } from "./config.ts";
import { createLLM } from "./llm.ts";
import { createSentPayload } from "./sent-payload.ts";
import { firstRequest } from "./testing/behaviours.ts";
import { readFixture } from "./testing/fake-provider.ts";
import { ANTHROPIC, GEMINI, OPENAI_CHAT, type ProviderSpec } from "./testing/provider-specs.ts";
import { startStallingProvider } from "./testing/stalling-provider.ts";
import type { RequestMessages } from "./types.ts";

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

test("Anthropic: the body is handed back as it is; released, both bodies' messages are emptied in place and pi-ai's members undefined, the tool list untouched", () => {
  const sent = createSentPayload("anthropic");
  const tools = [{ name: "read_file" }];
  const builtMessages = [{ role: "user", content: "hi" }];
  const built = { model: "m", messages: builtMessages, tools };
  const toSendMessages = [{ role: "user", content: [{ type: "text", text: "hi" }] }];
  const toSend = { ...built, messages: toSendMessages };
  assert.equal(sent.adopt(built, toSend), toSend);
  // What pi-ai sends and keeps: a shallow copy of what onPayload returned.
  const piCopy = { ...toSend, stream: true };
  sent.release();
  assert.deepEqual(builtMessages, []);
  assert.deepEqual(toSendMessages, []);
  assert.equal(piCopy.messages.length, 0);
  assert.deepEqual(built, { model: undefined, messages: undefined, tools: undefined });
  assert.deepEqual(tools, [{ name: "read_file" }]);
  assert.equal(toSend.tools, tools);
  // Nothing replaced: the one body is emptied the same way.
  const alone = createSentPayload("anthropic");
  const body = { model: "m", messages: [{ role: "user", content: "hi" }] };
  assert.equal(alone.adopt(body, body), body);
  alone.release();
  assert.deepEqual(body, { model: undefined, messages: undefined });
});

test("Gemini: the body is handed back as it is; released, the contents lists are emptied in place, nothing else", () => {
  const sent = createSentPayload("gemini");
  const config = { tools: [{ functionDeclarations: [] }] };
  const builtContents = [{ role: "user", parts: [{ text: "hi" }] }];
  const built = { model: "m", contents: builtContents, config };
  const toSendContents = [...builtContents];
  const toSend = { ...built, contents: toSendContents };
  assert.equal(sent.adopt(built, toSend), toSend);
  sent.release();
  assert.deepEqual(builtContents, []);
  assert.deepEqual(toSendContents, []);
  assert.equal(built.model, "m");
  assert.equal(built.config, config);
  assert.equal(toSend.config, config);
});

/**
 * `rounds` tool-call rounds after the first request's messages: each a short text, a call whose
 * arguments hold `argumentBytes` characters, and its result.
 */
function toLongRequest(api: Api, rounds: number, argumentBytes: number): RequestMessages {
  const history: (AssistantMessage | ToolResultMessage)[] = [];
  for (let round = 0; round < rounds; round++) {
    history.push({
      role: "assistant",
      content: [
        { type: "text", text: `Step ${round}.` },
        {
          type: "toolCall",
          id: `call_${round}`,
          name: "edit_file",
          arguments: { path: `f${round}.ts`, content: `${round % 10}`.repeat(argumentBytes) },
        },
      ],
      api,
      provider: "test",
      model: "test-model",
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
      content: [{ type: "text", text: `edited f${round}.ts` }],
      isError: false,
      timestamp: round,
    });
  }
  const first = firstRequest();
  return { ...first, messages: [...first.messages, ...history] };
}

/** Heap per call in flight (after a full collection), each stalled after its first event. */
async function heapPerCall(
  spec: ProviderSpec,
  fixture: string,
  events: number,
  request: RequestMessages,
): Promise<number> {
  const provider = await startStallingProvider(readFixture(fixture, "text"), events);
  try {
    const config = createModelConfig(spec.config(provider.url));
    const llm = createLLM({ models: [config] });
    let calls = 0;
    const open = async (count: number) => {
      const streams = [];
      for (let i = 0; i < count; i++) {
        calls += 1;
        streams.push(
          llm.stream({
            callID: `c${calls}`,
            conversationID: `conv${calls}`,
            model: config.name,
            request,
          }),
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
    return perCall;
  } finally {
    await provider.close();
  }
}

describe("calls in flight do not keep a converted copy of their history (issue #19)", () => {
  test("Chat Completions: 20 tool-call rounds with 50 KB of arguments each", async () => {
    // pi-ai writes every call's arguments as a new JSON string: ≈ 1 MB per call, kept.
    const perCall = await heapPerCall(
      OPENAI_CHAT,
      "openai-chat",
      2,
      toLongRequest("openai-completions", 20, 50_000),
    );
    // Without the release ≈ 940 KiB per call; with it ≈ 160 KiB.
    assert.ok(perCall < 400_000, `${Math.round(perCall / 1024)} KiB per call in flight`);
  });

  test("Gemini: 1,000 tool-call rounds", async () => {
    // pi-ai's converted contents and parts: ≈ 0.4 KiB a round. Without the release ≈ 450 KiB per
    // call; with it ≈ 85 KiB.
    const perCall = await heapPerCall(
      GEMINI,
      "gemini",
      1,
      toLongRequest("google-generative-ai", 1_000, 100),
    );
    assert.ok(perCall < 300_000, `${Math.round(perCall / 1024)} KiB per call in flight`);
  });

  test("Anthropic: 1,000 tool-call rounds", async () => {
    // pi-ai's converted messages and blocks, and our copy of the list: ≈ 0.4 KiB a round. Without
    // the release ≈ 475 KiB per call; with it ≈ 75 KiB.
    const perCall = await heapPerCall(
      ANTHROPIC,
      "anthropic",
      3,
      toLongRequest("anthropic-messages", 1_000, 100),
    );
    assert.ok(perCall < 300_000, `${Math.round(perCall / 1024)} KiB per call in flight`);
  });
});
