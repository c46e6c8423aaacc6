import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createModelConfig } from "./config.ts";
import { DEFAULT_DEMO_HELP, DEMO_MODEL_NAME } from "./demo.ts";
import { hashBody } from "./exact-fetch.ts";
import { createLLM } from "./llm.ts";
import { collect, collectChecked, terminalOf } from "./testing/streams.ts";
import type { AssistantMessage, ExactRequest, RequestMessages, Tool } from "./types.ts";

const READ: Tool = {
  name: "read_file",
  description: "Read a file.",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};

function request(text: string): RequestMessages {
  return {
    systemPrompt: "You are a coding agent.",
    tools: [READ],
    messages: [{ role: "user", content: text, timestamp: 1 }],
  };
}

function textOf(message: AssistantMessage): string {
  return message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
}

async function answer(llm: ReturnType<typeof createLLM>, req: RequestMessages, callID = "call-1") {
  const events = await collectChecked(
    llm.stream({ callID, model: DEMO_MODEL_NAME, request: req, conversationID: "conv-1" }),
  );
  const last = terminalOf(events);
  assert.equal(last.type, "done");
  return { events, message: last.message };
}

describe("demo model", () => {
  test("is the only model when none is configured", () => {
    const llm = createLLM({ models: [] });
    assert.deepEqual(
      llm.listModels().map((m) => [m.name, m.demo, m.api]),
      [[DEMO_MODEL_NAME, true, "demo"]],
    );
    const configured = createLLM({
      models: [createModelConfig({ name: "c", api: "anthropic", model: "claude-sonnet-4-5" })],
    });
    assert.equal(configured.findModel(DEMO_MODEL_NAME), undefined);
    assert.deepEqual(createLLM({ models: [], demo: false }).listModels(), []);
  });

  test("streams a note that no provider is configured, through the same stream interface", async () => {
    const llm = createLLM({ models: [] });
    const { events, message } = await answer(llm, request("hello"));
    assert.equal(textOf(message), DEFAULT_DEMO_HELP);
    assert.ok(events.filter((e) => e.type === "text_delta").length > 1, "streamed in pieces");
    assert.equal(message.stopReason, "stop");
    assert.equal(message.provider, "cursor-byok");
  });

  test("reads the command from the user's own words, after any context blocks", async () => {
    const llm = createLLM({ models: [] });
    const withContext: RequestMessages = {
      ...request("placeholder"),
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "<environment>OS: linux</environment>" },
            { type: "text", text: '/demo tool read_file {"path": "a.txt"}' },
          ],
          timestamp: 1,
        },
      ],
    };
    const { message } = await answer(llm, withContext);
    const call = message.content.find((b) => b.type === "toolCall");
    assert.ok(call?.type === "toolCall" && call.name === "read_file");
  });

  test("scripts a tool call, then reports the tool's result", async () => {
    const llm = createLLM({ models: [], demo: { help: "custom help" } });
    const first = await answer(
      llm,
      request('/demo tool read_file {"path": "README.md"}'),
      "call-7",
    );
    assert.equal(first.message.stopReason, "toolUse");
    const call = first.message.content.find((b) => b.type === "toolCall");
    assert.ok(call?.type === "toolCall");
    assert.equal(call.name, "read_file");
    assert.deepEqual(call.arguments, { path: "README.md" });
    assert.match(call.id, /^demo_[0-9a-f]{16}$/);
    const again = await answer(
      llm,
      request('/demo tool read_file {"path": "README.md"}'),
      "call-7",
    );
    const againCall = again.message.content.find((b) => b.type === "toolCall");
    assert.equal(
      againCall?.type === "toolCall" && againCall.id,
      call.id,
      "ids derive from the call id",
    );

    const followUp: RequestMessages = {
      ...request('/demo tool read_file {"path": "README.md"}'),
      messages: [
        ...request('/demo tool read_file {"path": "README.md"}').messages,
        first.message,
        {
          role: "toolResult",
          toolCallId: call.id,
          toolName: "read_file",
          content: [{ type: "text", text: "# cursor-byok" }],
          isError: false,
          timestamp: 2,
        },
      ],
    };
    const second = await answer(llm, followUp, "call-8");
    assert.equal(textOf(second.message), "The `read_file` tool returned:\n\n# cursor-byok");
    assert.equal(textOf((await answer(llm, request("hi"), "call-9")).message), "custom help");
  });

  test("explains a tool command it cannot run", async () => {
    const llm = createLLM({ models: [] });
    assert.match(
      textOf((await answer(llm, request("/demo tool shell {}"))).message),
      /no tool named `shell`.*read_file/,
    );
    assert.match(
      textOf((await answer(llm, request("/demo tool read_file {path"))).message),
      /not valid JSON/,
    );
    assert.match(textOf((await answer(llm, request("/demo tool"))).message), /^Usage/);
  });

  test("its exact request goes through beforeSend; a replay is passed on unchanged", async () => {
    const llm = createLLM({ models: [] });
    const seen: ExactRequest[] = [];
    const stream = llm.stream({
      callID: "call-1",
      model: DEMO_MODEL_NAME,
      request: request("hello"),
      conversationID: "conv-1",
      beforeSend: async (exact) => {
        seen.push(exact);
      },
    });
    await collect(stream);
    assert.equal(seen.length, 1);
    assert.deepEqual(JSON.parse(seen[0]?.body ?? "").messages, request("hello").messages);
    // The stream keeps what was sent without the body (SentRequest).
    const { body: _body, ...sent } = seen[0] as ExactRequest;
    assert.deepEqual(stream.exactRequest, sent);

    const replayed = llm.stream({
      callID: "call-1",
      model: DEMO_MODEL_NAME,
      request: request("hello"),
      conversationID: "conv-1",
      replay: { body: "saved" },
    });
    await collect(replayed);
    assert.equal(replayed.exactRequest?.bodyHash, hashBody("saved"));
    assert.equal(replayed.exactRequest?.replayed, true);
  });

  test("a failing beforeSend ends the demo call with an error", async () => {
    const llm = createLLM({ models: [] });
    const events = await collect(
      llm.stream({
        callID: "call-1",
        model: DEMO_MODEL_NAME,
        request: request("hello"),
        conversationID: "conv-1",
        beforeSend: () => Promise.reject(new Error("store offline")),
      }),
    );
    const last = terminalOf(events);
    assert.ok(last.type === "error" && last.reason === "error");
    assert.equal(last.error.errorMessage, "beforeSend failed: store offline");
  });

  test("aborts mid-stream like a real model", async () => {
    const llm = createLLM({ models: [] });
    const stream = llm.stream({
      callID: "c",
      model: DEMO_MODEL_NAME,
      request: request("hello"),
      conversationID: "conv-1",
    });
    for (let event = await stream.recv(); event !== undefined; event = await stream.recv()) {
      if (event.type === "text_delta") break;
    }
    stream.abort();
    const last = terminalOf(await collect(stream));
    assert.ok(last.type === "error" && last.reason === "aborted");
    assert.ok(textOf(last.error).length < DEFAULT_DEMO_HELP.length, "only part of the reply");
  });
});
