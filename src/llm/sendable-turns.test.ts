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
import { createModelConfig } from "./config.ts";
import { createLLM } from "./llm.ts";
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
    const payload = {
      messages: [
        { role: "system", content: "s" },
        { role: "user", content: "hi" },
        { role: "assistant", content: null, tool_calls: [{ id: "c" }] },
        { role: "tool", tool_call_id: "c", content: "r" },
        {
          role: "user",
          content: [{ type: "text", text: "Attached image(s) from tool result:" }],
        },
        { role: "assistant", content: "done" },
        { role: "user", content: "bye" },
      ],
    };
    assert.equal(withAlternatingRoles("openai-compatible", payload), payload);
  });

  test("blank user messages: white space only, as a string or as text blocks; an image is not blank", () => {
    const image = { type: "image" as const, data: "iVBORw0KGgo=", mimeType: "image/png" };
    const sent = withSendableMessages(
      request([
        user("", 1),
        { role: "user", content: [{ type: "text", text: " \t" }], timestamp: T0 },
        { role: "user", content: [image], timestamp: T0 },
        user(" x ", 2),
      ]),
    ).messages.map((message) => message.content);
    assert.deepEqual(sent, [EMPTY_USER_TEXT, EMPTY_USER_TEXT, [image], " x "]);
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
    const payload = {
      messages: [
        { role: "user", content: "a" },
        { role: "assistant", content: null, tool_calls: [{ id: "c" }] },
        { role: "tool", tool_call_id: "c", content: "r" },
        { role: "user", content: "b" },
        { role: "user", content: "c" },
      ],
    };
    assert.equal(withAlternatingRoles("openai-chat", payload), payload);
    const roles = (withAlternatingRoles("openai-compatible", payload) as typeof payload).messages;
    assert.deepEqual(
      roles.map((message) => [message.role, message.content]),
      [
        ["user", "a"],
        ["assistant", null],
        ["tool", "r"],
        ["assistant", NO_REPLY_TEXT],
        ["user", "b"],
        ["assistant", NO_REPLY_TEXT],
        ["user", "c"],
      ],
    );
    assert.equal(findRuleBreak("/chat/completions", JSON.stringify({ messages: roles })), null);
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
    assert.match(
      refused("/v1/messages", { model: "claude-opus-4-6", messages }) ?? "",
      /does not support assistant message prefill/,
    );
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
      /empty text parameter/,
    );
  });
});

function toChat(message: Message): JsonRecord {
  return { role: message.role, content: message.role === "user" ? message.content : "" };
}
