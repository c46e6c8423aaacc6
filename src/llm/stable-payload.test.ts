import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { toStablePayload } from "./stable-payload.ts";

const marker = { type: "ephemeral" };

describe("stable payload", () => {
  test("Anthropic: user text is always a block list, so a moved breakpoint changes no earlier bytes", () => {
    const payload = {
      model: "claude",
      messages: [
        { role: "user", content: "first" },
        { role: "assistant", content: [{ type: "text", text: "ok" }] },
        { role: "user", content: [{ type: "text", text: "second", cache_control: marker }] },
      ],
    };
    assert.deepEqual(toStablePayload("anthropic-messages", payload), {
      model: "claude",
      messages: [
        { role: "user", content: [{ type: "text", text: "first" }] },
        { role: "assistant", content: [{ type: "text", text: "ok" }] },
        { role: "user", content: [{ type: "text", text: "second", cache_control: marker }] },
      ],
    });
    assert.equal(payload.messages[0]?.content, "first", "the original is not modified");
  });

  test("Chat Completions with Anthropic-style markers: user, assistant and tool strings become blocks", () => {
    const payload = {
      messages: [
        { role: "system", content: [{ type: "text", text: "sys", cache_control: marker }] },
        { role: "user", content: "u" },
        { role: "assistant", content: "a", tool_calls: [] },
        { role: "assistant", content: null },
        { role: "tool", content: "t", tool_call_id: "c" },
      ],
    };
    const stable = toStablePayload("openai-completions", payload) as { messages: unknown[] };
    assert.deepEqual(stable.messages.slice(1), [
      { role: "user", content: [{ type: "text", text: "u" }] },
      { role: "assistant", content: [{ type: "text", text: "a" }], tool_calls: [] },
      { role: "assistant", content: null },
      { role: "tool", content: [{ type: "text", text: "t" }], tool_call_id: "c" },
    ]);
  });

  test("other bodies are sent as pi-ai built them", () => {
    const plain = { messages: [{ role: "user", content: "u" }] };
    assert.equal(toStablePayload("openai-completions", plain), undefined);
    assert.equal(toStablePayload("openai-responses", { input: [] }), undefined);
    assert.equal(toStablePayload("google-generative-ai", { contents: [] }), undefined);
  });
});
