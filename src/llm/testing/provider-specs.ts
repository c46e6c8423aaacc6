/**
 * What each provider's recorded transcripts (`../fixtures/<provider>`) contain, and where its
 * request body keeps the things we check. The behaviour tests (behaviours.ts) are written once
 * against this description and run for every provider.
 */
import assert from "node:assert/strict";
import type { ModelConfigInput } from "../config.ts";
import { toPromptCacheKey } from "../llm.ts";
import type { AssistantMessage, ThinkingContent, Usage } from "../types.ts";

export type JsonRecord = Record<string, unknown>;

export const API_KEY = "sk-test-5f9c2e7a1b3d4c6e8f0a";
export const CONVERSATION_ID = "conv-7d1e";

export const TEXT = "Hello there! How can I help today?";
export const READ_ARGUMENTS = { path: 'src/say "hi".ts', note: "café" };
export const GREP_ARGUMENTS = { pattern: "TODO\n", path: "src" };
/** The argument text the transcripts stream for the read call, split inside strings and escapes. */
export const READ_ARGUMENTS_TEXT = '{"path": "src/say \\"hi\\".ts", "note": "caf\\u00e9"}';

export type ProviderID =
  | "openai-chat"
  | "openai-responses"
  | "anthropic"
  | "gemini"
  | "openai-compatible";

type UsageCounts = Pick<Usage, "input" | "output" | "cacheRead" | "cacheWrite">;

export interface ProviderSpec {
  readonly id: ProviderID;
  /** A model config pointing at the fake provider at `url`. */
  config(url: string): ModelConfigInput;
  /** Fixture names in `fixtures/<id>/`. */
  readonly fixtures: {
    readonly text: string;
    readonly oneTool: string;
    /** Two tool calls, with thinking where the API has it. */
    readonly tools: string;
    readonly length: string;
    readonly errorEvent: string;
    readonly noTerminal: string;
  };
  /** How many events of `fixtures.text` include at least one text delta (for drop/stall tests). */
  readonly midStreamEvents: number;
  readonly textResponseId: string;
  readonly textUsage: UsageCounts;
  readonly toolsUsage: UsageCounts;
  readonly oneToolID: string;
  /** The thought signature of that call, where the provider sends one (Gemini). */
  readonly oneToolSignature?: string;
  readonly toolIDs: readonly [string, string];
  /** The raw argument text of the read call as the provider streams it. */
  readonly readArgumentsText: string;
  /** Thinking blocks of `fixtures.tools`, or why the API has none. */
  readonly thinking: readonly Partial<ThinkingContent>[] | { readonly notApplicable: string };
  /** The message part of a request body: what must only grow from one call to the next. */
  messagesOf(body: JsonRecord): unknown[];
  /** Checks that `body` (the request after `first` was answered) carries `first` verbatim. */
  assertReplayed(body: JsonRecord, first: AssistantMessage): void;
  /** Checks the prompt-caching fields of a first-turn request body. */
  assertCaching(body: JsonRecord): void;
}

const TEXT_USAGE = { input: 86, output: 9, cacheRead: 1920, cacheWrite: 0 };

function list(value: unknown, what: string): unknown[] {
  assert.ok(Array.isArray(value), `${what} is not a list`);
  return value;
}

function record(value: unknown, what: string): JsonRecord {
  assert.ok(
    typeof value === "object" && value !== null && !Array.isArray(value),
    `${what} is not an object`,
  );
  return value as JsonRecord;
}

function toolCallsOf(message: AssistantMessage) {
  return message.content.filter((block) => block.type === "toolCall");
}

export const OPENAI_CHAT: ProviderSpec = {
  id: "openai-chat",
  config: (url) => ({
    name: "gpt",
    api: "openai-chat",
    model: "gpt-4.1",
    baseUrl: `${url}/v1`,
    apiKey: API_KEY,
  }),
  fixtures: {
    text: "text",
    oneTool: "one-tool",
    tools: "tools",
    length: "length",
    errorEvent: "error-event",
    noTerminal: "no-terminal",
  },
  midStreamEvents: 3,
  textResponseId: "chatcmpl-C4nLq2Wv8kTz1YhR3bXaP0dE7fGs",
  textUsage: TEXT_USAGE,
  toolsUsage: { input: 102, output: 61, cacheRead: 2048, cacheWrite: 0 },
  oneToolID: "call_Wd7fH1jK4mN8pQ2sT5vX9zB3",
  toolIDs: ["call_Qm3pX9sT2vW8yZ1aB4cD6eF0", "call_Lk8nR4dF6gH2jK0bM5nP7qR9"],
  readArgumentsText: READ_ARGUMENTS_TEXT,
  thinking: { notApplicable: "OpenAI Chat Completions does not return reasoning" },
  messagesOf: (body) => list(body.messages, "messages"),
  assertReplayed(body, first) {
    const messages = list(body.messages, "messages").map((m) => record(m, "message"));
    const assistant = messages.find((m) => m.role === "assistant");
    assert.ok(assistant !== undefined, "the assistant message is replayed");
    const calls = list(assistant.tool_calls, "tool_calls").map((c) => record(c, "tool call"));
    assert.deepEqual(
      calls.map((c) => c.id),
      toolCallsOf(first).map((c) => c.id),
    );
    const results = messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id);
    assert.deepEqual(results, [...OPENAI_CHAT.toolIDs]);
  },
  assertCaching(body) {
    assert.equal(body.prompt_cache_key, toPromptCacheKey(CONVERSATION_ID));
  },
};

export const OPENAI_COMPATIBLE: ProviderSpec = {
  id: "openai-compatible",
  config: (url) => ({
    name: "deepseek",
    api: "openai-compatible",
    provider: "deepseek",
    model: "deepseek-v4-pro",
    baseUrl: url,
    apiKey: API_KEY,
  }),
  fixtures: { ...OPENAI_CHAT.fixtures, tools: "thinking-tools" },
  midStreamEvents: 3,
  textResponseId: "5f1d6c2e-8a3b-4c7d-9e0f-1a2b3c4d5e6f",
  textUsage: TEXT_USAGE,
  toolsUsage: { input: 102, output: 97, cacheRead: 2048, cacheWrite: 0 },
  oneToolID: "call_00_Pq4rS6tU8vW0xY2zA4bC6dE8",
  toolIDs: ["call_00_Xk3mP8qR2sT6vW9yZ1aB4cD", "call_01_Lm5nQ7rS9tU2vX4yA6bC8dE"],
  readArgumentsText: READ_ARGUMENTS_TEXT,
  // DeepSeek's reasoning is plain text; pi-ai keeps the field it came in as the "signature".
  thinking: [
    {
      thinking: "The user wants two files read. I will call read_file and grep.",
      thinkingSignature: "reasoning_content",
    },
  ],
  messagesOf: (body) => list(body.messages, "messages"),
  assertReplayed(body, first) {
    const messages = list(body.messages, "messages").map((m) => record(m, "message"));
    const assistant = messages.find((m) => m.role === "assistant");
    assert.ok(assistant !== undefined, "the assistant message is replayed");
    const thinking = first.content.find((block) => block.type === "thinking");
    assert.equal(assistant.reasoning_content, thinking?.thinking, "reasoning_content comes back");
    const calls = list(assistant.tool_calls, "tool_calls").map((c) => record(c, "tool call"));
    assert.deepEqual(
      calls.map((c) => c.id),
      toolCallsOf(first).map((c) => c.id),
    );
  },
  assertCaching(body) {
    // DeepSeek caches prefixes on its own; an unknown field could be rejected by other servers.
    assert.equal(body.prompt_cache_key, undefined);
  },
};

const RESPONSES_ENCRYPTED =
  "gAAAAABowfO1x3Xk9Qz2L8mN4pR7sT0vW3yZ6bC9eF2hJ5kM8nP1qS4tV7wY0zA3cD6fG9iK2lN5oQ8rU1sX4uZ7aB0dE3gH6jL9mO2pR5sU8vX1yA4bD7eG0hJ3kM6nQ9rT2uW5xZ8aC1dF4gI7jL0mO3pS6tV9wY2zB5cE8fH1iK4lN7oQ0rT3uW6xZ9aB2dE5gH8jK1mN4pQ7sT0vW3yZ6bC9eF2h==";

export const OPENAI_RESPONSES: ProviderSpec = {
  id: "openai-responses",
  config: (url) => ({
    name: "gpt-5",
    api: "openai-responses",
    model: "gpt-5-mini",
    baseUrl: `${url}/v1`,
    apiKey: API_KEY,
  }),
  fixtures: { ...OPENAI_CHAT.fixtures, tools: "thinking-tools" },
  midStreamEvents: 6,
  textResponseId: "resp_68c1f2a3b4d5e6f70819a2b3c4d5e6f7081a2b3c4d5e6f70",
  textUsage: TEXT_USAGE,
  toolsUsage: { input: 102, output: 214, cacheRead: 2048, cacheWrite: 0 },
  oneToolID: "call_Hy6jK9mN2pQ5sT8vW1yZ4bC7|fc_68c1f7f9a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4e",
  toolIDs: [
    "call_Rv4sT7wX0zA3bC6dE9fG2hJ5|fc_68c1f3b7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2c",
    "call_Km2nP5qR8sT1uV4wX7yZ0aB3|fc_68c1f3b8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3d",
  ],
  readArgumentsText: READ_ARGUMENTS_TEXT,
  // The whole reasoning item, encrypted content included, is kept as the signature.
  thinking: [
    {
      thinking:
        "**Planning file reads**\n\nThe user wants both files. I'll call read_file, then grep.",
      thinkingSignature: JSON.stringify({
        id: "rs_68c1f3b5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8a",
        type: "reasoning",
        encrypted_content: RESPONSES_ENCRYPTED,
        summary: [
          {
            type: "summary_text",
            text: "**Planning file reads**\n\nThe user wants both files. I'll call read_file, then grep.",
          },
        ],
      }),
    },
  ],
  messagesOf: (body) => list(body.input, "input"),
  assertReplayed(body) {
    const items = list(body.input, "input").map((item) => record(item, "input item"));
    const reasoning = items.find((item) => item.type === "reasoning");
    assert.equal(reasoning?.id, "rs_68c1f3b5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8a");
    assert.equal(
      reasoning?.encrypted_content,
      RESPONSES_ENCRYPTED,
      "encrypted reasoning comes back",
    );
    const message = items.find((item) => item.type === "message");
    assert.equal(
      message?.id,
      "msg_68c1f3b6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091b",
      "output item id",
    );
    const calls = items.filter((item) => item.type === "function_call");
    assert.deepEqual(
      calls.map((call) => `${String(call.call_id)}|${String(call.id)}`),
      [...OPENAI_RESPONSES.toolIDs],
    );
    const outputs = items.filter((item) => item.type === "function_call_output");
    assert.deepEqual(
      outputs.map((output) => output.call_id),
      OPENAI_RESPONSES.toolIDs.map((id) => id.split("|")[0]),
    );
  },
  assertCaching(body) {
    assert.equal(body.prompt_cache_key, toPromptCacheKey(CONVERSATION_ID));
    assert.equal(body.store, false);
  },
};

const ANTHROPIC_SIGNATURE =
  "EqQBCkYIBxgCKkBZ3p2sJ7nK8vL1mQ4rT6wY9zB2cE5fH8jK0lN3oP6qS9tV2wX5yA8bD1eG4hJ7kM0nQ3rT6uW9xZ2aC5dF8gI1jL4mO7pR0sU3vX6yZ9aB2cD5eF8gH1iJ4kL7mN0oP3qR6sT9uV2wX5yZ8aB1cD4eF7gH0iJ3kL6mN9oP2qR5sT8uV1wX4yZ7aB0cD3eF6gH9iJ2kL5mN8oP1qR4sT7uV0wX3yZ6EgzMpVwQjK8sT1uV4wX7GgyJh3tR6yU9iO2pA5sD8fG1hJ4kL7zX0cV3bN6mQ9wE2rT5yU8iO1pA4sD7fG0hJ3kL6==";
const ANTHROPIC_REDACTED =
  "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj2pLmN8ZPjR3EkLxYzW6sT9uV2wX5yZ8aB1cD4eF7gH0iJ3kL6mN9oP2qR5sT8uV1wX4yZ7aB0cD3eF6gH9iJ2kL5mN8==";

export const ANTHROPIC: ProviderSpec = {
  id: "anthropic",
  config: (url) => ({
    name: "claude",
    api: "anthropic",
    model: "claude-sonnet-4-5",
    baseUrl: url,
    apiKey: API_KEY,
  }),
  fixtures: { ...OPENAI_CHAT.fixtures, tools: "thinking-tools" },
  midStreamEvents: 5,
  textResponseId: "msg_01XFDUDYJgAACzvnptvVoYEL",
  textUsage: { input: 12, output: 15, cacheRead: 0, cacheWrite: 1850 },
  toolsUsage: { input: 24, output: 187, cacheRead: 4120, cacheWrite: 310 },
  oneToolID: "toolu_01CyL8oR3nX0qS5uW7yB9dF2",
  toolIDs: ["toolu_01A09q90qw90lq917835lq9Z", "toolu_01BxK7nQ2mW9pR4sT6vY8zA3"],
  readArgumentsText: READ_ARGUMENTS_TEXT,
  thinking: [
    {
      thinking: "The user wants two files read. I'll call read_file and grep.",
      thinkingSignature: ANTHROPIC_SIGNATURE,
    },
    { thinking: "[Reasoning redacted]", thinkingSignature: ANTHROPIC_REDACTED, redacted: true },
  ],
  messagesOf: (body) => list(body.messages, "messages"),
  assertReplayed(body) {
    const messages = list(body.messages, "messages").map((m) => record(m, "message"));
    const assistant = messages.find((m) => m.role === "assistant");
    assert.ok(assistant !== undefined, "the assistant message is replayed");
    const blocks = list(assistant.content, "content").map((b) => record(b, "block"));
    assert.deepEqual(
      blocks.map((b) => b.type),
      ["thinking", "redacted_thinking", "text", "tool_use", "tool_use"],
    );
    assert.equal(blocks[0]?.signature, ANTHROPIC_SIGNATURE, "thinking signature comes back");
    assert.equal(blocks[1]?.data, ANTHROPIC_REDACTED, "redacted thinking comes back");
    assert.deepEqual(
      blocks.filter((b) => b.type === "tool_use").map((b) => b.id),
      [...ANTHROPIC.toolIDs],
    );
    const results = list(messages.at(-1)?.content, "tool results").map((b) => record(b, "block"));
    assert.deepEqual(
      results.map((b) => b.tool_use_id),
      [...ANTHROPIC.toolIDs],
    );
  },
  assertCaching(body) {
    const ephemeral = { type: "ephemeral" };
    const system = list(body.system, "system").map((b) => record(b, "system block"));
    assert.deepEqual(system.at(-1)?.cache_control, ephemeral, "breakpoint on the system prompt");
    const tools = list(body.tools, "tools").map((t) => record(t, "tool"));
    assert.deepEqual(tools.at(-1)?.cache_control, ephemeral, "breakpoint on the last tool");
    const last = record(list(body.messages, "messages").at(-1), "last message");
    const blocks = list(last.content, "content").map((b) => record(b, "block"));
    assert.deepEqual(blocks.at(-1)?.cache_control, ephemeral, "breakpoint on the last message");
  },
};

const GEMINI_TEXT_SIGNATURE =
  "CiQB0e2Kb7wYx3TnP8qR2sV5uW9yZ1aC4dF7gJ0kM3nQ6rT9uW2xZ5aB8dE1gH4jK7mN0pQ3sT6vY9bC2eF5hI8kL1nO4qR7tU0wX3zA6cD9fG2iJ5lM8oP1rS4uV7xY0bE3hK6nQ9tW2zC5fI8lO1rU4xA7dG0jM3pS6vY9";
const GEMINI_CALL_SIGNATURE =
  "EuwCCukCAdHtimB3kX7nQ1sV5yA9cE3gI7kM1oQ5sU9wY3aC7eG1iK5mO9qS3uW7yA1cE5gI9kM3oQ7sU1wY5aC9eG3iK7mO1qS5uW9yA3cE7gI1kM5oQ9sU3wY7aC1eG5iK9mO3qS7uW1yA5cE9gI3kM7oQ1sU5wY9aC3eG7iK1mO5qS9uW3yA7cE1gI5kM9oQ3sU7wY1aC5eG9iK3mO7qS1uW5yA9cE3gI7kM1oQ5sU9wY3aC7eG1iK5mO9qS3uW7yA1cE5gI9kA==";

export const GEMINI: ProviderSpec = {
  id: "gemini",
  config: (url) => ({
    name: "gemini",
    api: "gemini",
    model: "gemini-3-flash-preview",
    baseUrl: `${url}/v1beta`,
    apiKey: API_KEY,
  }),
  fixtures: { ...OPENAI_CHAT.fixtures, tools: "thinking-tools" },
  midStreamEvents: 1,
  textResponseId: "mG1haKDFLIuTz7IP2ZqU2Ak",
  textUsage: TEXT_USAGE,
  toolsUsage: { input: 102, output: 89, cacheRead: 2048, cacheWrite: 0 },
  oneToolID: "k2v9w4nb",
  oneToolSignature: GEMINI_CALL_SIGNATURE,
  toolIDs: ["rf8h2k1q", "g7p3m0xz"],
  // Gemini sends each call whole; pi-ai reports its arguments as one re-serialised delta.
  readArgumentsText: JSON.stringify(READ_ARGUMENTS),
  thinking: [
    {
      thinking: "**Reading the files**\n\nThe user wants both files; I'll call read_file and grep.",
    },
  ],
  messagesOf: (body) => list(body.contents, "contents"),
  assertReplayed(body) {
    const contents = list(body.contents, "contents").map((c) => record(c, "content"));
    const model = contents.find((c) => c.role === "model");
    assert.ok(model !== undefined, "the model turn is replayed");
    const parts = list(model.parts, "parts").map((p) => record(p, "part"));
    const text = parts.find((p) => p.text === "I'll look at both.");
    assert.equal(
      text?.thoughtSignature,
      GEMINI_TEXT_SIGNATURE,
      "text thought signature comes back",
    );
    const calls = parts.filter((p) => p.functionCall !== undefined);
    assert.equal(
      calls[0]?.thoughtSignature,
      GEMINI_CALL_SIGNATURE,
      "call thought signature comes back",
    );
    assert.deepEqual(
      calls.map((p) => record(p.functionCall, "functionCall").id),
      [...GEMINI.toolIDs],
    );
    const responses = list(contents.at(-1)?.parts, "parts").map((p) =>
      record(record(p, "part").functionResponse, "functionResponse"),
    );
    assert.deepEqual(
      responses.map((r) => r.id),
      [...GEMINI.toolIDs],
    );
  },
  assertCaching(body) {
    // Gemini caches implicitly; its body has no cache fields (cached tokens show in usage).
    assert.equal(JSON.stringify(body).includes("cache"), false);
  },
};

export const PROVIDERS: readonly ProviderSpec[] = [
  OPENAI_CHAT,
  OPENAI_RESPONSES,
  ANTHROPIC,
  GEMINI,
  OPENAI_COMPATIBLE,
];
