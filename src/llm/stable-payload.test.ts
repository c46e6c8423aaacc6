import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
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

  test("Chat Completions bodies are changed exactly when the old text search finds a marker", () => {
    // The check walks the values; it must agree with finding `"cache_control"` in the JSON text
    // of each message and tool, as it did before issue #19.
    const key = fc.constantFrom("cache_control", "type", "text", "role", "x");
    const leaf = fc.oneof(
      fc.constantFrom("cache_control", "cache_control ", '"cache_control"', "u", undefined),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
    );
    const { value } = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        leaf,
        fc.array(tie("value"), { maxLength: 3 }),
        fc.dictionary(key, tie("value"), { maxKeys: 3 }),
      ),
    }));
    const message = fc.record({ role: fc.constant("user"), content: value });
    fc.assert(
      fc.property(
        fc.array(message, { maxLength: 3 }),
        fc.array(value, { maxLength: 3 }),
        (messages, tools) => {
          const oldCheck = [...messages, ...tools].some(
            (item) => JSON.stringify(item)?.includes('"cache_control"') === true,
          );
          const stable = toStablePayload("openai-completions", { messages, tools });
          assert.equal(stable !== undefined, oldCheck);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
