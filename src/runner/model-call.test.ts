/**
 * `createModelCall` on its own, against the real LLM layer (a fake provider on 127.0.0.1) and the
 * memory store: what a prepared call that could not be saved in its step's commit saves itself.
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, test } from "node:test";
import { createLLM, createModelConfigs } from "../llm/index.ts";
import { toChatCompletionSse } from "../llm/testing/chat-completions-sse.ts";
import { type FakeProvider, startFakeProvider } from "../llm/testing/fake-provider.ts";
import { type CallLLMCommand, createConversation, type RuntimeState } from "../loop/index.ts";
import { createMemoryStore, type Store } from "../store/index.ts";
import type { Live } from "./conversation-cache.ts";
import { createModelCall } from "./model-call.ts";
import { createSerialQueue } from "./serial-queue.ts";

const AT = 1_767_225_600_000;

describe("createModelCall()", () => {
  let provider: FakeProvider;
  let store: Store;
  beforeEach(async () => {
    provider = await startFakeProvider();
    store = createMemoryStore();
  });
  afterEach(async () => {
    await provider.close();
    await store.close();
  });

  test("a prepared call saving its own row takes the turn of the step that planned it, not the turn at its send", async () => {
    provider.reply({ type: "hang" }, { type: "sse", body: toChatCompletionSse({ text: "Hi." }) });
    const llm = createLLM({
      models: createModelConfigs([
        {
          api: "openai-compatible",
          baseUrl: provider.url,
          apiKey: "sk-test-key",
          name: "main",
          model: "main-up",
          maxConcurrent: 1,
        },
      ]),
    });
    const request = {
      systemPrompt: "You are a test agent.",
      messages: [{ role: "user" as const, content: "hi", timestamp: AT }],
      tools: [],
    };
    // Another call holds the model's only slot: the prepared one waits for it (late path).
    const holder = llm.stream({
      callID: "call-holder",
      model: "main",
      request,
      conversationID: "c",
    });
    const holding = holder.recv();
    await provider.request(0);
    const command: CallLLMCommand = {
      type: "call_llm",
      callID: "call-1",
      model: "main",
      request,
      messagesHash: "h",
      messageCount: 1,
      lastMessageHash: "h",
    };
    const created = createConversation("c");
    await store.commitInput({
      inputID: "in:create",
      expectedVersion: 0,
      state: created.committed,
      result: { command: "none", rejected: null },
    });
    // What the call reads of the conversation when it is let go: another turn's id.
    const state: RuntimeState = {
      ...created,
      committed: {
        ...created.committed,
        status: "waiting_llm",
        turnID: "turn-later",
        call: { callID: "call-1" } as RuntimeState["committed"]["call"],
      },
    };
    const entry: Live = {
      conversationID: "c",
      state,
      version: 1,
      output: null,
      calling: null,
      stream: null,
      tools: new Set(),
      retired: false,
    };
    const modelCall = createModelCall({
      store,
      llm,
      now: () => AT,
      queue: createSerialQueue(),
      apply: Object.assign(async () => null, { now: () => undefined }),
      isStopping: () => false,
    });
    const prepared = await modelCall.prepare(entry, command, "turn-of-the-step");
    assert.ok(prepared !== null);
    assert.equal(prepared.exact, null, "not known before the step's commit: saved by the call");
    const reading = modelCall(entry, command, prepared);
    holder.abort("done");
    await holding;
    await reading;
    assert.equal((await store.getLLMCall("call-1"))?.turnID, "turn-of-the-step");
    assert.equal(provider.requests.length, 2);
  });
});
