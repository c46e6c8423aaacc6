/**
 * What the e2e tests of rewinds, forks and resumed turns read from the fake provider: the messages
 * of the request a turn's model call sent (OpenAI chat shape), and one turn run to its end.
 */
import assert from "node:assert/strict";
import type { CursorClient } from "../testing/index.ts";
import { type Harness, MODEL } from "./test-harness.ts";

interface WireMessage {
  readonly role: string;
  readonly content: string | readonly { readonly type: string; readonly text?: string }[] | null;
}

export function messagesOf(body: string): WireMessage[] {
  return (JSON.parse(body) as { messages: WireMessage[] }).messages;
}

/** The last text of each message of `role` (a user message's context comes before its text). */
export function textsOf(body: string, role: "user" | "assistant"): string[] {
  return messagesOf(body)
    .filter((message) => message.role === role)
    .map((message) =>
      typeof message.content === "string"
        ? message.content
        : ((message.content ?? []).filter((part) => part.type === "text").at(-1)?.text ?? ""),
    );
}

/** The request's messages as bytes: a request that extends another starts with its bytes. */
export function messagesBytes(body: string): string {
  return messagesOf(body)
    .map((message) => JSON.stringify(message))
    .join("\n");
}

/**
 * Runs one turn answered with `answer` (one model call, no error); returns the body the provider
 * received for it.
 */
export async function runTurn(
  harness: Harness,
  client: CursorClient,
  init: Parameters<CursorClient["startTurn"]>[0],
  answer: string,
  requestId?: string,
): Promise<string> {
  harness.reply({ text: answer });
  const before = harness.provider.requests.length;
  const result = await client.startTurn(init, requestId === undefined ? {} : { requestId }).done;
  assert.equal(result.error, undefined, `turn "${answer}" ended with an error`);
  assert.equal(result.view.text, answer);
  assert.equal(harness.provider.requests.length, before + 1, "one model call per turn");
  return harness.provider.requests[before]?.body ?? "";
}

/** A user message `text` (bubble id `messageId`) in `conversationId`, on the test model. */
export const turn = (conversationId: string, text: string, messageId: string) => ({
  conversationId,
  text,
  messageId,
  modelId: MODEL,
});
