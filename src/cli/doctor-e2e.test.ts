/**
 * `doctor --e2e` with a model that is not the demo: the server runs in-process with a model on a
 * fake OpenAI-compatible provider whose replies are scripted from the request it receives.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { createLLM, createModelConfig } from "../llm/index.ts";
import { toChatCompletionSse } from "../llm/testing/chat-completions-sse.ts";
import { createRunner } from "../runner/runner.ts";
import { createMemoryStore } from "../store/index.ts";
import { silentLog } from "../transport/log.ts";
import { DEFAULT_SERVER_OPTIONS, startServer } from "../transport/server.ts";
import { checkEndToEnd } from "./doctor-e2e.ts";
import {
  createTempHome,
  type FakeProviderRequest,
  type FakeReply,
  startFakeProvider,
} from "./testing.ts";

const home = createTempHome();
after(() => home.cleanup());

interface ChatMessage {
  readonly role: string;
  readonly content?: unknown;
}

/** Runs `checkEndToEnd` against a server whose only model answers with `script(step, request)`. */
async function runWithModel(
  script: (step: number, file: string | undefined, messages: readonly ChatMessage[]) => FakeReply,
  options: { accessToken?: string } = {},
) {
  const provider = await startFakeProvider((request: FakeProviderRequest) => {
    const messages = (request.body.messages ?? []) as ChatMessage[];
    const step = messages.filter((message) => message.role === "tool").length;
    const file = /(\/[^"\\\s]*doctor-check\.txt)/.exec(JSON.stringify(messages))?.[1];
    return script(step, file, messages);
  });
  const store = createMemoryStore();
  const llm = createLLM({
    models: [
      createModelConfig({
        name: "scripted",
        api: "openai-compatible",
        provider: "fake",
        baseUrl: provider.baseUrl,
        model: "scripted-1",
      }),
    ],
    retry: { maxAttempts: 1 },
  });
  const server = await startServer(
    { store, llm, runner: createRunner({ store, llm }), log: silentLog },
    {
      ...DEFAULT_SERVER_OPTIONS,
      port: 0,
      ...(options.accessToken === undefined ? {} : { accessToken: options.accessToken }),
    },
  );
  try {
    return await checkEndToEnd({ url: server.url, timeoutMs: 10_000, ...options });
  } finally {
    await server.close();
    await store.close();
    await provider.close();
  }
}

const toolCall = (id: string, name: string, args: Record<string, unknown>): FakeReply => ({
  type: "sse",
  body: toChatCompletionSse({ toolCalls: [{ id, name, arguments: args }] }),
});
const text = (value: string): FakeReply => ({
  type: "sse",
  body: toChatCompletionSse({ text: value }),
});
const lastToolText = (messages: readonly ChatMessage[]): string =>
  JSON.stringify(messages.filter((message) => message.role === "tool").at(-1)?.content ?? "");

describe("doctor --e2e with a real model", () => {
  test("passes when the model reads the file; a shell attempt is refused, not run", async () => {
    const marker = path.join(home.dir, "touched-by-the-model");
    const result = await runWithModel((step, file, messages) => {
      if (step === 0) return toolCall("call_1", "shell", { command: `touch ${marker}` });
      if (step === 1) return toolCall("call_2", "read_file", { path: file });
      return text(`The file says: ${lastToolText(messages)}`);
    });
    assert.equal(result.status, "ok", `${result.detail} ${result.hint ?? ""}`);
    assert.match(
      result.detail,
      /^one agent turn over RunSSE \+ BidiAppend at http:\/\/127\.0\.0\.1:\d+, model scripted: read_file ran in the client, and the answer quotes the file \(\d+\.\d s\)$/,
    );
    assert.equal(existsSync(marker), false, "the shell command did not run");
  });

  test("fails when the model does not use read_file", async () => {
    const result = await runWithModel(() => text("I would rather not."));
    assert.equal(result.status, "fail");
    assert.match(
      result.detail,
      /model scripted: the turn ended without a completed read_file call \(answer: "I would rather not\."\)$/,
    );
    assert.equal(
      result.hint,
      "the model did not use the tool; try again, or make another model the default",
    );
  });

  test("fails when the provider fails", async () => {
    const result = await runWithModel(() => ({
      type: "json",
      status: 400,
      body: { error: { message: "model overloaded" } },
    }));
    assert.equal(result.status, "fail");
    assert.match(result.detail, /model scripted: the turn ended with an error: .*model overloaded/);
  });

  test("fails with a hint when the server requires a token doctor does not have", async () => {
    const provider = await startFakeProvider(() => text("unused"));
    const store = createMemoryStore();
    const llm = createLLM({ models: [] });
    const server = await startServer(
      { store, llm, runner: createRunner({ store, llm }), log: silentLog },
      { ...DEFAULT_SERVER_OPTIONS, port: 0, accessToken: "server-token" },
    );
    try {
      const result = await checkEndToEnd({ url: server.url, timeoutMs: 5_000 });
      assert.deepEqual(result, {
        status: "fail",
        name: "e2e",
        detail: `${server.url} refused the access token`,
        hint: "use the configuration the server runs with (--config), so doctor sends the same token",
      });
    } finally {
      await server.close();
      await store.close();
      await provider.close();
    }
  });
});
