/**
 * The context-length error of every provider kind, sent by a fake provider on 127.0.0.1 in the
 * provider's own shape, arrives as one terminal `error` event that `isContextOverflow` classifies;
 * other failures (rate limit, server error, bad request) are not overflows.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createModelConfig } from "./config.ts";
import { isContextOverflow } from "./context-overflow.ts";
import { createLLM } from "./llm.ts";
import { startFakeProvider } from "./testing/fake-provider.ts";
import { OVERFLOW_ERRORS } from "./testing/overflow-errors.ts";
import { CONVERSATION_ID, PROVIDERS, type ProviderSpec } from "./testing/provider-specs.ts";
import type { AssistantMessage, ResponseEvent } from "./types.ts";

async function failWith(
  spec: ProviderSpec,
  status: number,
  body: string,
): Promise<AssistantMessage> {
  const fake = await startFakeProvider();
  try {
    fake.reply({ type: "status", status, body });
    const config = createModelConfig(spec.config(fake.url));
    const llm = createLLM({ models: [config], retry: { maxAttempts: 1 } });
    const events: ResponseEvent[] = [];
    for await (const event of llm.stream({
      callID: "call-1",
      model: config.name,
      request: {
        systemPrompt: "s",
        tools: [],
        messages: [{ role: "user", content: "hi", timestamp: 0 }],
      },
      conversationID: CONVERSATION_ID,
    })) {
      events.push(event);
    }
    const last = events.at(-1);
    assert.equal(last?.type, "error");
    return (last as Extract<ResponseEvent, { type: "error" }>).error;
  } finally {
    await fake.close();
  }
}

describe("isContextOverflow", () => {
  for (const spec of PROVIDERS) {
    test(`${spec.id}: the provider's context-length error is classified`, async () => {
      const { status, body } = OVERFLOW_ERRORS[spec.id];
      const error = await failWith(spec, status, body);
      assert.ok(isContextOverflow(error), `not classified: ${error.errorMessage}`);
    });

    test(`${spec.id}: a rate limit, a server error and another bad request are not`, async () => {
      const others: [number, string][] = [
        [429, '{"error":{"message":"Rate limit reached: too many tokens per minute"}}'],
        [500, '{"error":{"message":"internal error"}}'],
        [
          400,
          '{"error":{"message":"Invalid value for tools[0].name","type":"invalid_request_error"}}',
        ],
      ];
      for (const [status, body] of others) {
        const error = await failWith(spec, status, body);
        assert.equal(isContextOverflow(error), false, error.errorMessage);
      }
    });
  }
});
