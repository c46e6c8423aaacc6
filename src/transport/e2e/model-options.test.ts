/**
 * The model picker's options, end to end: a run request whose requested model carries an effort,
 * thinking and max mode reaches the provider as its reasoning setting and max mode's output
 * limit; the next turn without them runs with the model's defaults. Real server, real runner,
 * fake OpenAI provider on 127.0.0.1.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { createLLM, createModelConfigs } from "../../llm/index.ts";
import { toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import { type FakeProvider, startFakeProvider } from "../../llm/testing/fake-provider.ts";
import { createRunner } from "../../runner/runner.ts";
import { createMemoryStore } from "../../store/index.ts";
import { RequestedModel_ModelParameterValueSchema } from "../cursor/gen/agent/v1/models_pb.js";
import { silentLog } from "../log.ts";
import { DEFAULT_SERVER_OPTIONS, type Server, startServer } from "../server.ts";
import { type CursorClient, createCursorClient } from "../testing/index.ts";

const CONVERSATION = "5c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f";

describe("model options from the model picker reach the provider", () => {
  let provider: FakeProvider;
  let server: Server;
  let client: CursorClient;
  let workspace: string;
  let bodies: Record<string, unknown>[];

  before(async () => {
    provider = await startFakeProvider();
    workspace = mkdtempSync(join(tmpdir(), "cursor-byok-options-"));
    const llm = createLLM({
      models: createModelConfigs([
        {
          name: "thinker",
          api: "openai-chat",
          model: "thinker-1",
          baseUrl: `${provider.url}/v1`,
          apiKey: "sk-options-test",
          reasoning: true,
          thinking: "medium",
          contextWindow: 200_000,
          maxOutput: 8_000,
          maxMode: { contextWindow: 1_000_000, maxOutput: 32_000 },
        },
      ]),
    });
    const store = createMemoryStore();
    server = await startServer(
      { store, llm, runner: createRunner({ store, llm }), log: silentLog },
      { ...DEFAULT_SERVER_OPTIONS, port: 0 },
    );
    client = createCursorClient({ baseUrl: server.url, httpVersion: "1.1", workspace });
    provider.reply(
      { type: "sse", body: toChatCompletionSse({ text: "Thought hard." }) },
      { type: "sse", body: toChatCompletionSse({ text: "Defaults." }) },
    );
    const first = await client.startTurn({
      conversationId: CONVERSATION,
      text: "Think hard.",
      modelId: "thinker",
      edit(request) {
        const requested = request.requestedModel;
        assert.ok(requested !== undefined);
        requested.maxMode = true;
        requested.parameters = [
          create(RequestedModel_ModelParameterValueSchema, { id: "thinking", value: "true" }),
          create(RequestedModel_ModelParameterValueSchema, { id: "effort", value: "high" }),
        ];
      },
    }).done;
    assert.equal(first.error, undefined);
    const second = await client.startTurn({
      conversationId: CONVERSATION,
      text: "Now normally.",
      modelId: "thinker",
    }).done;
    assert.equal(second.error, undefined);
    bodies = provider.requests.map((request) => JSON.parse(request.body));
  });

  after(async () => {
    await client.close();
    await server.close();
    await provider.close();
    rmSync(workspace, { recursive: true, force: true });
  });

  test("effort and max mode reach the body of the turn that chose them", () => {
    assert.equal(bodies[0]?.reasoning_effort, "high");
    assert.equal(bodies[0]?.max_completion_tokens, 32_000);
  });

  test("the next turn, with no options, runs with the model's defaults", () => {
    assert.equal(bodies[1]?.reasoning_effort, "medium");
    assert.equal(bodies[1]?.max_completion_tokens, 8_000);
  });
});
