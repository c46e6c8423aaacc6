/**
 * Turns with nothing to send, sent to each API we speak (sendable-turns.ts, README.md "Empty
 * messages and turns without a reply"): a turn that failed before the model answered (its user
 * message followed by the next one), a turn canceled after its tool results, a user message of
 * white space, an answer pi-ai cannot send (another model's thinking only). Against the strict
 * fakes (`testing/provider-rules.ts`): Anthropic refuses a request ending with an assistant
 * message when thinking is on, Gemini an empty text part, and the OpenAI-compatible fake plays a
 * server whose chat template wants alternating roles. Each request of the conversation must be
 * accepted and stay a byte prefix of the next.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type Model, normalizeContext } from "@earendil-works/pi-ai";
import { streamSimple } from "@earendil-works/pi-ai/api/openai-completions";
import { createModelConfig, type ModelConfigInput } from "./config.ts";
import { createLLM } from "./llm.ts";
import { toPiModel } from "./pi-model.ts";
import {
  EMPTY_TOOL_RESULT_TEXT,
  EMPTY_USER_TEXT,
  NO_REPLY_TEXT,
  withAlternatingRoles,
  withSendableMessages,
} from "./sendable-turns.ts";
import { readFixture, startFakeProvider } from "./testing/fake-provider.ts";
import { findRuleBreak } from "./testing/provider-rules.ts";
import {
  CONVERSATION_ID,
  type JsonRecord,
  PROVIDERS,
  type ProviderSpec,
} from "./testing/provider-specs.ts";
import { collect, terminalOf } from "./testing/streams.ts";
import type {
  AssistantMessage,
  ImageContent,
  Message,
  RequestMessages,
  TextContent,
  Tool,
} from "./types.ts";

const T0 = 1_767_225_600_000;
const TOOLS: Tool[] = [
  {
    name: "read_file",
    description: "Reads a file.",
    parameters: { type: "object", properties: { path: { type: "string" } } },
  },
];
const USAGE = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};
/** Another model (none of the specs' own): its thinking is not sent to them. */
const OTHER = { api: "openai-completions", provider: "fireworks", model: "kimi-k3" } as const;

function user(text: string, at: number): Message {
  return { role: "user", content: text, timestamp: T0 + at };
}

function assistant(
  content: AssistantMessage["content"],
  stopReason: AssistantMessage["stopReason"],
  at: number,
): AssistantMessage {
  return { role: "assistant", content, ...OTHER, usage: USAGE, stopReason, timestamp: T0 + at };
}

/**
 * A conversation as the loop appends it, in steps; each step ends where a model call is made
 * (the request is the history so far).
 */
function steps(): Message[][] {
  return [
    // Turn 1 failed before the model answered: nothing of it but its user message.
    [user("Read a.ts.", 1)],
    // Turn 2: the same question again; a tool call, then the user pressed stop.
    [user("Read a.ts, please.", 2)],
    [
      assistant(
        [
          { type: "text", text: "Reading it." },
          { type: "toolCall", id: "call_1", name: "read_file", arguments: { path: "a.ts" } },
        ],
        "toolUse",
        3,
      ),
      {
        role: "toolResult",
        toolCallId: "call_1",
        toolName: "read_file",
        // A tool that failed and printed nothing.
        content: [{ type: "text", text: "" }],
        isError: true,
        timestamp: T0 + 4,
      },
    ],
    // Turn 3 after the canceled one; an answer.
    [user("Summarise a.ts.", 5)],
    // Turn 4: a message of white space only.
    [assistant([{ type: "text", text: "What should I summarise?" }], "stop", 6), user("  \n ", 7)],
    // Turn 5: the model only thought (nothing pi-ai sends to another model).
    [
      assistant([{ type: "thinking", thinking: "It is one constant." }], "stop", 8),
      user("Well?", 9),
    ],
  ];
}

/** The OpenAI-compatible spec's model: DeepSeek V4 Pro, thinking on (catalogue default). */
const COMPATIBLE_SPEC = PROVIDERS.find((spec) => spec.id === "openai-compatible") as ProviderSpec;
const COMPATIBLE = COMPATIBLE_SPEC.config("http://127.0.0.1:9/");
/** A local server with a strict template (no DeepSeek rules in pi-ai). */
const LOCAL: ModelConfigInput = {
  name: "mistral",
  api: "openai-compatible",
  provider: "vllm",
  model: "mistral-7b-instruct-v0.3",
  baseUrl: "http://127.0.0.1:9/v1",
  apiKey: "sk-local",
};

function piModel(config: ModelConfigInput) {
  return toPiModel(createModelConfig(config));
}

function records(value: unknown): JsonRecord[] {
  return Array.isArray(value) ? (value as JsonRecord[]) : [];
}

/** The Chat Completions body `config`'s model is sent for `messages` through our LLM layer. */
async function chatBody(config: ModelConfigInput, messages: Message[]): Promise<JsonRecord> {
  const fake = await startFakeProvider();
  try {
    const model = createModelConfig({ ...config, baseUrl: fake.url });
    fake.reply({
      type: "sse",
      body: readFixture(COMPATIBLE_SPEC.id, COMPATIBLE_SPEC.fixtures.text),
    });
    const llm = createLLM({ models: [model] });
    await collect(
      llm.stream({
        callID: "body",
        model: model.name,
        request: request(messages),
        conversationID: CONVERSATION_ID,
      }),
    );
    return JSON.parse(fake.requests.at(-1)?.body ?? "null") as JsonRecord;
  } finally {
    await fake.close();
  }
}

/** The messages pi-ai itself makes of `messages` for `config`'s model (nothing of ours added). */
async function piMessages(config: ModelConfigInput, messages: Message[]): Promise<JsonRecord[]> {
  const fake = await startFakeProvider();
  try {
    const model = toPiModel(createModelConfig({ ...config, baseUrl: fake.url }));
    assert.equal(model.api, "openai-completions");
    fake.reply({
      type: "sse",
      body: readFixture(COMPATIBLE_SPEC.id, COMPATIBLE_SPEC.fixtures.text),
    });
    await streamSimple(model as Model<"openai-completions">, normalizeContext(request(messages)), {
      apiKey: "sk-test",
      maxRetries: 0,
    }).result();
    const body = JSON.parse(fake.requests.at(-1)?.body ?? "null") as JsonRecord;
    return records(body.messages).filter((message) => message.role !== "system");
  } finally {
    await fake.close();
  }
}

function request(messages: Message[]): RequestMessages {
  return { systemPrompt: "You are a careful coding agent.", tools: TOOLS, messages };
}

/** The message part of a body, cache markers removed, each message serialised as sent. */
function messageBytes(spec: ProviderSpec, body: string): string[] {
  return spec
    .messagesOf(JSON.parse(body) as JsonRecord)
    .map((message) =>
      JSON.stringify(message, (key, value: unknown) =>
        key === "cache_control" ? undefined : value,
      ),
    );
}

async function sendSteps(spec: ProviderSpec): Promise<string[]> {
  const fake = await startFakeProvider();
  try {
    const config = createModelConfig(spec.config(fake.url));
    const llm = createLLM({ models: [config] });
    const bodies: string[] = [];
    let history: Message[] = [];
    for (const [index, step] of steps().entries()) {
      history = [...history, ...step];
      fake.reply({ type: "sse", body: readFixture(spec.id, spec.fixtures.text) });
      const last = terminalOf(
        await collect(
          llm.stream({
            callID: `empty-${index}`,
            model: config.name,
            request: request(history),
            conversationID: CONVERSATION_ID,
          }),
        ),
      );
      assert.equal(
        last.type,
        "done",
        last.type === "error"
          ? `${spec.id}, request ${index + 1} refused: ${last.error.errorMessage}`
          : undefined,
      );
      const sent = fake.requests.at(-1);
      assert.ok(sent !== undefined);
      bodies.push(sent.body);
    }
    return bodies;
  } finally {
    await fake.close();
  }
}

describe("turns with nothing to send, sent to each API", () => {
  for (const spec of PROVIDERS) {
    test(`${spec.id}: every request accepted, each a byte prefix of the next`, async () => {
      const bodies = await sendSteps(spec);
      for (let index = 1; index < bodies.length; index += 1) {
        const before = messageBytes(spec, bodies[index - 1] as string);
        const after = messageBytes(spec, bodies[index] as string);
        assert.deepEqual(
          after.slice(0, before.length),
          before,
          `request ${index} is a prefix of request ${index + 1}`,
        );
      }
      const last = bodies.at(-1) as string;
      // The message of white space goes out as the stand-in (pi-ai left it out for Anthropic).
      assert.ok(last.includes(JSON.stringify(EMPTY_USER_TEXT)), "the blank message's stand-in");
      assert.ok(!last.includes("  \\n "), "no blank text is sent");
      assert.ok(last.includes(EMPTY_TOOL_RESULT_TEXT), "the empty result's stand-in");
      const noReplies = last.split(JSON.stringify(NO_REPLY_TEXT)).length - 1;
      // Only the OpenAI-compatible server gets an assistant message between two user messages:
      // after the failed turn, after the canceled tool call, after the thinking-only answer.
      assert.equal(noReplies, spec.id === "openai-compatible" ? 3 : 0);
    });
  }
});

describe("the stand-ins (sendable-turns.ts)", () => {
  test("a conversation without empty or unanswered turns is the same object", () => {
    const history = request([
      user("hi", 1),
      assistant([{ type: "text", text: "Hello." }], "stop", 2),
      user("bye", 3),
    ]);
    assert.equal(withSendableMessages(history), history);
    const image = { type: "image" as const, data: "iVBORw0KGgo=", mimeType: "image/png" };
    const withTools = request([
      user("hi", 1),
      assistant([{ type: "toolCall", id: "c", name: "read_file", arguments: {} }], "toolUse", 2),
      // A result with an image: pi-ai sends its images as a user message after the results.
      {
        role: "toolResult",
        toolCallId: "c",
        toolName: "read_file",
        content: [{ type: "text", text: "r" }, image],
        isError: false,
        timestamp: T0 + 3,
      },
      assistant([{ type: "text", text: "done" }], "stop", 4),
      user("bye", 5),
    ]);
    assert.equal(
      withAlternatingRoles("openai-compatible", piModel(COMPATIBLE), withTools),
      withTools,
    );
  });

  test("blank user messages: white space only, as a string or as text blocks; an image is not blank", () => {
    const image = { type: "image" as const, data: "iVBORw0KGgo=", mimeType: "image/png" };
    const sent = withSendableMessages(
      request([
        user("", 1),
        { role: "user", content: [{ type: "text", text: " \t" }], timestamp: T0 },
        { role: "user", content: [], timestamp: T0 },
        { role: "user", content: [image], timestamp: T0 },
        user(" x ", 2),
      ]),
    ).messages.map((message) => message.content);
    assert.deepEqual(sent, [EMPTY_USER_TEXT, EMPTY_USER_TEXT, EMPTY_USER_TEXT, [image], " x "]);
    const withImage = withSendableMessages(
      request([{ role: "user", content: [{ type: "text", text: "" }, image], timestamp: T0 }]),
    ).messages[0];
    assert.deepEqual(withImage?.content, [image]);
  });

  test("tool results: empty or blank content gets the stand-in, blank text beside an image is left out", () => {
    const image = { type: "image" as const, data: "iVBORw0KGgo=", mimeType: "image/png" };
    const result = (content: (TextContent | ImageContent)[]): Message => ({
      role: "toolResult",
      toolCallId: "c",
      toolName: "read_file",
      content,
      isError: true,
      timestamp: T0,
    });
    const sent = withSendableMessages(
      request([
        result([]),
        result([{ type: "text", text: " " }, image]),
        result([{ type: "text", text: "ok" }]),
      ]),
    ).messages.map((message) => message.content);
    assert.deepEqual(sent, [
      [{ type: "text", text: EMPTY_TOOL_RESULT_TEXT }],
      [image],
      [{ type: "text", text: "ok" }],
    ]);
  });

  test("only OpenAI-compatible endpoints get the assistant stand-in; tool results do not count as a reply", () => {
    const history = request([
      user("a", 1),
      assistant([{ type: "toolCall", id: "c", name: "read_file", arguments: {} }], "toolUse", 2),
      {
        role: "toolResult",
        toolCallId: "c",
        toolName: "read_file",
        content: [{ type: "text", text: "r" }],
        isError: false,
        timestamp: T0 + 3,
      },
      user("b", 4),
      user("c", 5),
    ]);
    const chat = { ...LOCAL, api: "openai-chat", provider: "openai" } as const;
    assert.equal(withAlternatingRoles("openai-chat", piModel(chat), history), history);
    const model = piModel(COMPATIBLE);
    const sent = withAlternatingRoles("openai-compatible", model, history).messages;
    assert.deepEqual(
      sent.map((message) => [message.role, message.timestamp - T0]),
      [
        ["user", 1],
        ["assistant", 2],
        ["toolResult", 3],
        ["assistant", 4],
        ["user", 4],
        ["assistant", 5],
        ["user", 5],
      ],
    );
    // The stand-in is an answer of the current model, so pi-ai sends it as one of its own.
    assert.deepEqual(sent[3], {
      role: "assistant",
      content: [{ type: "text", text: NO_REPLY_TEXT }],
      api: model.api,
      provider: model.provider,
      model: model.id,
      usage: USAGE,
      stopReason: "stop",
      timestamp: T0 + 4,
    });
  });

  test("the stand-in follows pi-ai's Chat conversion: what it leaves out, its own bridge, DeepSeek's reasoning_content", async () => {
    const model = piModel(COMPATIBLE);
    const mine = { api: model.api, provider: model.provider, model: model.id };
    const sentOf = piMessages;
    // Answers pi-ai leaves out count as no reply; the ones it sends do.
    const cases: { answer: AssistantMessage; sent: boolean }[] = [
      { answer: assistant([{ type: "text", text: "Yes." }], "stop", 2), sent: true },
      { answer: assistant([{ type: "text", text: " \n" }], "stop", 2), sent: false },
      { answer: assistant([{ type: "text", text: "Partial" }], "aborted", 2), sent: false },
      { answer: assistant([{ type: "text", text: "Partial" }], "error", 2), sent: false },
      { answer: assistant([{ type: "thinking", thinking: "Hm." }], "stop", 2), sent: false },
      {
        answer: { ...assistant([{ type: "thinking", thinking: "Hm." }], "stop", 2), ...mine },
        sent: false,
      },
    ];
    for (const { answer, sent } of cases) {
      const messages = [user("a", 1), answer, user("b", 3)];
      const body = await sentOf(COMPATIBLE, messages);
      assert.equal(body.length, sent ? 3 : 2, JSON.stringify(answer.content));
      const withStandIn = withAlternatingRoles("openai-compatible", model, request(messages));
      assert.equal(withStandIn.messages.length, sent ? 3 : 4, JSON.stringify(answer.content));
    }
    // Thinking sent as text (the model's own, under requiresThinkingAsText) is a reply.
    const asText = { ...COMPATIBLE, compat: { requiresThinkingAsText: true } };
    const thought = { ...assistant([{ type: "thinking", thinking: "Hm." }], "stop", 2), ...mine };
    const thoughtOnly = [user("a", 1), thought, user("b", 3)];
    assert.equal((await sentOf(asText, thoughtOnly)).length, 3);
    const asTextModel = piModel(asText);
    assert.equal(
      withAlternatingRoles("openai-compatible", asTextModel, request(thoughtOnly)).messages.length,
      3,
    );
    // Under requiresAssistantAfterToolResult pi-ai's own bridge is the reply after results.
    const bridged = { ...LOCAL, compat: { requiresAssistantAfterToolResult: true } };
    const cut = [
      user("a", 1),
      assistant([{ type: "toolCall", id: "c", name: "read_file", arguments: {} }], "toolUse", 2),
      {
        role: "toolResult",
        toolCallId: "c",
        toolName: "read_file",
        content: [{ type: "text", text: "r" }],
        isError: false,
        timestamp: T0 + 3,
      } satisfies Message,
      user("b", 4),
    ];
    const bridgedModel = piModel(bridged);
    const bridgedRequest = withAlternatingRoles("openai-compatible", bridgedModel, request(cut));
    assert.equal(bridgedRequest.messages.length, cut.length);
    const bridgedBody = await chatBody(bridged, cut);
    assert.deepEqual(
      records(bridgedBody.messages).map((message) => message.role),
      ["system", "user", "assistant", "tool", "assistant", "user"],
    );
    assert.ok(!JSON.stringify(bridgedBody).includes(NO_REPLY_TEXT));
    assert.equal(findRuleBreak("/chat/completions", JSON.stringify(bridgedBody)), null);
    // DeepSeek with thinking: the stand-in carries reasoning_content like every assistant message.
    const failedTurn = [
      user("hi", 1),
      assistant([{ type: "text", text: "Hello." }], "stop", 2),
      user("a", 3),
      user("b", 4),
    ];
    const deepSeek = await chatBody(COMPATIBLE, failedTurn);
    assert.equal((deepSeek.thinking as JsonRecord | undefined)?.type, "enabled");
    const assistants = records(deepSeek.messages).filter((m) => m.role === "assistant");
    assert.deepEqual(
      assistants.map((m) => [m.content, m.reasoning_content]),
      [
        ["Hello.", ""],
        [NO_REPLY_TEXT, ""],
      ],
    );
    assert.equal(findRuleBreak("/chat/completions", JSON.stringify(deepSeek)), null);
  });
});

describe("the fake providers refuse what the real ones refuse (empty and unanswered turns)", () => {
  const refused = (path: string, body: unknown) => {
    const reply = findRuleBreak(path, JSON.stringify(body));
    return reply?.type === "status" ? reply.body : null;
  };

  test("a strict chat template: roles must alternate once tool messages are set aside", () => {
    const twoUsers = { messages: [user("a", 1), user("b", 2)].map(toChat) };
    assert.match(refused("/chat/completions", twoUsers) ?? "", /roles must alternate/);
    // OpenAI itself accepts two user messages in a row.
    assert.equal(refused("/v1/chat/completions", twoUsers), null);
    const afterResults = {
      messages: [
        { role: "user", content: "a" },
        { role: "assistant", content: null, tool_calls: [{ id: "c", type: "function" }] },
        { role: "tool", tool_call_id: "c", content: "r" },
        { role: "user", content: "b" },
      ],
    };
    assert.match(refused("/chat/completions", afterResults) ?? "", /roles must alternate/);
  });

  test("DeepSeek in thinking mode: every assistant message carries reasoning_content", () => {
    const messages = [
      { role: "user", content: "hi" },
      { role: "assistant", content: "Hello.", reasoning_content: "" },
      { role: "user", content: "a" },
      { role: "assistant", content: "(no reply)" },
      { role: "user", content: "b" },
    ];
    const thinking = { thinking: { type: "enabled" } };
    const reply = findRuleBreak("/chat/completions", JSON.stringify({ messages, ...thinking }));
    assert.equal(reply?.type, "status");
    assert.equal(reply.type === "status" ? reply.status : 0, 400);
    assert.deepEqual(reply.type === "status" ? JSON.parse(reply.body ?? "null") : null, {
      error: {
        message: "The `reasoning_content` in the thinking mode must be passed back to the API.",
        type: "invalid_request_error",
        param: null,
        code: "invalid_request_error",
      },
    });
    // Thinking off, or every assistant message with the field: accepted.
    assert.equal(refused("/chat/completions", { messages, thinking: { type: "disabled" } }), null);
    const filled = messages.map((m) =>
      m.role === "assistant" ? { reasoning_content: "", ...m } : m,
    );
    assert.equal(refused("/chat/completions", { messages: filled, ...thinking }), null);
  });

  test("Anthropic: a request ending with an assistant message, with budget thinking or on Claude 4.6+", () => {
    const messages = [
      { role: "user", content: [{ type: "text", text: "hi" }] },
      { role: "assistant", content: [{ type: "text", text: "Hello." }] },
    ];
    const thinking = { thinking: { type: "enabled", budget_tokens: 1024 } };
    assert.match(
      refused("/v1/messages", { model: "claude-sonnet-4-5", messages, ...thinking }) ?? "",
      /final `assistant` message must start with a thinking block/,
    );
    assert.equal(refused("/v1/messages", { model: "claude-sonnet-4-5", messages }), null);
    for (const model of [
      "claude-opus-4-6",
      "claude-sonnet-5",
      "claude-fable-5-1",
      "claude-haiku-4-7-20260101",
    ]) {
      assert.match(
        refused("/v1/messages", { model, messages }) ?? "",
        /does not support assistant message prefill/,
        model,
      );
    }
    for (const model of [
      "claude-opus-4-20250514",
      "claude-sonnet-4-5-20250929",
      "claude-3-5-sonnet-20241022",
    ]) {
      assert.equal(refused("/v1/messages", { model, messages }), null, model);
    }
  });

  test("Anthropic: an error result with empty content", () => {
    const messages = [
      { role: "user", content: [{ type: "text", text: "hi" }] },
      { role: "assistant", content: [{ type: "tool_use", id: "c", name: "read_file", input: {} }] },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "c", content: "", is_error: true }],
      },
    ];
    const body = { model: "claude-sonnet-4-5", messages, tools: TOOLS };
    assert.match(
      refused("/v1/messages", body) ?? "",
      /content cannot be empty if `is_error` is true/,
    );
  });

  test("Gemini: an empty text part", () => {
    const body = { contents: [{ role: "user", parts: [{ text: "" }] }] };
    assert.match(
      refused("/v1beta/models/gemini-2.5-flash:streamGenerateContent", body) ?? "",
      /contents\[0\]\.parts\[0\]\.data: required oneof field 'data' must have one initialized field/,
    );
  });
});

function toChat(message: Message): JsonRecord {
  return { role: message.role, content: message.role === "user" ? message.content : "" };
}
