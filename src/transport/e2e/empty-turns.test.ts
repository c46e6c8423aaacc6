/**
 * Turns that leave nothing to send, through the real server (src/llm/README.md "Empty messages
 * and turns without a reply"): a turn that failed or was canceled before the
 * model answered leaves its user message with no reply after it, and a message of white space
 * has no text at all. The fake providers refuse what the real ones do: the OpenAI-compatible one
 * plays a server whose chat template wants alternating roles (vLLM with a Mistral template) and,
 * when the body turns DeepSeek's thinking on, an assistant message without `reasoning_content`;
 * the Anthropic one a request that ends with an assistant message while thinking is on. Without
 * the stand-ins every later turn of such a conversation failed.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { readFixture } from "../../llm/testing/fake-provider.ts";
import { API_KEY, type Harness, MODEL, startHarness } from "./test-harness.ts";

const NO_REPLY = "(no reply: the turn ended before an answer)";
const EMPTY = "(empty message)";
/** Attempts per call in the harness's retry policy. */
const ATTEMPTS = 3;

function models(url: string) {
  return [
    {
      name: MODEL,
      api: "openai-compatible",
      model: "scripted-model",
      baseUrl: url,
      apiKey: API_KEY,
    },
    // Thinking on by default (medium): a request may not end with an assistant message.
    { name: "claude", api: "anthropic", model: "claude-sonnet-4-5", baseUrl: url, apiKey: API_KEY },
    // Thinking on by default: every assistant message needs `reasoning_content`.
    {
      name: "deepseek",
      api: "openai-compatible",
      provider: "deepseek",
      model: "deepseek-v4-pro",
      baseUrl: url,
      apiKey: API_KEY,
    },
  ];
}

interface ChatMessage {
  readonly role: string;
  readonly content: unknown;
}

/** The messages of request `index` (Chat Completions or Anthropic). */
function messagesOf(harness: Harness, index: number): ChatMessage[] {
  const request = harness.provider.requests[index];
  assert.ok(request !== undefined, `request ${index} was sent`);
  return (JSON.parse(request.body) as { messages: ChatMessage[] }).messages;
}

function textOf(message: ChatMessage | undefined): string {
  const content = message?.content;
  if (typeof content === "string") return content;
  return (Array.isArray(content) ? (content as { text?: string }[]) : [])
    .map((block) => block.text ?? "")
    .join("");
}

describe("turns that leave nothing to send, end to end", () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({ models });
  });
  after(() => harness.close());

  test("after a failed turn and a canceled one, the next turns of an OpenAI-compatible conversation are accepted", async () => {
    const conversationId = "e0000000-0000-4000-8000-000000000001";
    const client = harness.client();
    // Turn 1 fails before the model answers: only its user message is history.
    harness.provider.reply(
      ...Array.from({ length: ATTEMPTS }, () => ({ type: "status" as const, status: 500 })),
    );
    const failed = await client.startTurn({ conversationId, text: "Read a.ts.", modelId: MODEL })
      .done;
    assert.ok(failed.error !== undefined || failed.view.turnEnded !== undefined);
    // Turn 2 is canceled before the first token.
    const first = harness.provider.requests.length;
    harness.provider.reply({ type: "hang" });
    const canceled = client.startTurn({
      conversationId,
      text: "Read a.ts, please.",
      modelId: MODEL,
    });
    await harness.provider.request(first);
    await canceled.cancel("the user pressed stop");
    await canceled.done;
    // Turn 3 is answered, and so is turn 4.
    harness.reply({ text: "It exports a." });
    const third = await client.startTurn({ conversationId, text: "Well?", modelId: MODEL }).done;
    assert.equal(third.error, undefined, "the third turn is accepted");
    assert.equal(third.view.text, "It exports a.");
    const thirdRequest = harness.provider.requests.length - 1;
    harness.reply({ text: "Yes." });
    const fourth = await client.startTurn({ conversationId, text: "Sure?", modelId: MODEL }).done;
    assert.equal(fourth.error, undefined);

    // The first user message carries the turn's context before its text.
    const sent = messagesOf(harness, thirdRequest).filter((message) => message.role !== "system");
    assert.deepEqual(
      sent.map((message) => [
        message.role,
        textOf(message).replace(/^<environment>[\s\S]*<\/environment>/, ""),
      ]),
      [
        ["user", "Read a.ts."],
        ["assistant", NO_REPLY],
        ["user", "Read a.ts, please."],
        ["assistant", NO_REPLY],
        ["user", "Well?"],
      ],
    );
    // Nothing earlier is rewritten: each request is a prefix of the next.
    const canceledRequest = messagesOf(harness, first);
    const third_ = messagesOf(harness, thirdRequest);
    const fourth_ = messagesOf(harness, harness.provider.requests.length - 1);
    assert.deepEqual(third_.slice(0, canceledRequest.length), canceledRequest);
    assert.deepEqual(fourth_.slice(0, third_.length), third_);
  });

  test("a message of white space to Claude with thinking on: sent as a stand-in, and the conversation goes on", async () => {
    const conversationId = "e0000000-0000-4000-8000-000000000002";
    const client = harness.client();
    harness.provider.reply({ type: "sse", body: readFixture("anthropic", "text") });
    const first = await client.startTurn({ conversationId, text: "hi", modelId: "claude" }).done;
    assert.equal(first.error, undefined);
    for (const text of ["  \n ", "And now?"]) {
      harness.provider.reply({ type: "sse", body: readFixture("anthropic", "text") });
      const turn = await client.startTurn({ conversationId, text, modelId: "claude" }).done;
      assert.equal(turn.error, undefined, `the turn "${text}" is accepted`);
      assert.match(turn.view.text, /^Hello there!/);
    }
    const sent = messagesOf(harness, harness.provider.requests.length - 1);
    assert.deepEqual(
      sent.map((message) => message.role),
      ["user", "assistant", "user", "assistant", "user"],
    );
    assert.equal(textOf(sent[2]), EMPTY);
  });

  test("DeepSeek with thinking on: after a failed turn the stand-in reply carries reasoning_content, and later turns are accepted", async () => {
    const conversationId = "e0000000-0000-4000-8000-000000000003";
    const client = harness.client();
    harness.reply({ text: "Hello." });
    const first = await client.startTurn({ conversationId, text: "hi", modelId: "deepseek" }).done;
    assert.equal(first.error, undefined);
    harness.provider.reply(
      ...Array.from({ length: ATTEMPTS }, () => ({ type: "status" as const, status: 500 })),
    );
    await client.startTurn({ conversationId, text: "Read a.ts.", modelId: "deepseek" }).done;
    for (const text of ["Well?", "Sure?"]) {
      harness.reply({ text: "Yes." });
      const turn = await client.startTurn({ conversationId, text, modelId: "deepseek" }).done;
      assert.equal(turn.error, undefined, `the turn "${text}" is accepted`);
      assert.equal(turn.view.text, "Yes.");
    }
    const body = JSON.parse(harness.provider.requests.at(-1)?.body ?? "{}") as {
      thinking?: { type?: string };
      messages: (ChatMessage & { reasoning_content?: unknown })[];
    };
    assert.equal(body.thinking?.type, "enabled");
    assert.deepEqual(
      body.messages
        .filter((message) => message.role === "assistant")
        .map((message) => [textOf(message), message.reasoning_content]),
      [
        ["Hello.", ""],
        [NO_REPLY, ""],
        ["Yes.", ""],
      ],
    );
  });
});
