/**
 * History another model made, sent to each API we speak (README.md "Tool calls another model
 * made"): a conversation that moved between providers mid-turn (a fallback) or between turns
 * (the user's switch), with tool calls and their results in it, against fake providers that
 * refuse what the real ones refuse (`testing/provider-rules.ts`: Anthropic's id pattern and
 * unique ids, results paired with calls, OpenAI's 40-character ids, Gemini 3's thought
 * signatures on the current turn's calls). Each request must be accepted, keep every call with
 * its result, and stay a byte prefix of the next one.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { withThinkingAllowed } from "./anthropic-thinking.ts";
import { createModelConfig } from "./config.ts";
import { createLLM } from "./llm.ts";
import { readFixture, startFakeProvider } from "./testing/fake-provider.ts";
import { findRuleBreak, GEMINI_SKIP_SIGNATURE } from "./testing/provider-rules.ts";
import {
  CONVERSATION_ID,
  type JsonRecord,
  PROVIDERS,
  type ProviderSpec,
} from "./testing/provider-specs.ts";
import { collect, terminalOf } from "./testing/streams.ts";
import { MAX_TOOL_CALL_ID, withWireToolCallIds } from "./tool-call-ids.ts";
import type {
  AssistantMessage,
  Message,
  RequestMessages,
  Tool,
  ToolCall,
  ToolResultMessage,
} from "./types.ts";
import { SKIP_SIGNATURE, withSignedCalls } from "./unsigned-calls.ts";

const T0 = 1_767_225_600_000;
const TOOLS: Tool[] = ["read_file", "grep", "mcp_github_create_pull_request_review"].map(
  (name) => ({
    name,
    description: `The ${name} tool.`,
    parameters: { type: "object", properties: { path: { type: "string" } } },
  }),
);

type Origin = Pick<AssistantMessage, "api" | "provider" | "model">;

const RESPONSES: Origin = { api: "openai-responses", provider: "openai", model: "gpt-5-mini" };
const ANTHROPIC: Origin = {
  api: "anthropic-messages",
  provider: "anthropic",
  model: "claude-sonnet-4-5",
};
const GEMINI_2: Origin = {
  api: "google-generative-ai",
  provider: "google",
  model: "gemini-2.5-flash",
};
const GEMINI_3: Origin = {
  api: "google-generative-ai",
  provider: "google",
  model: "gemini-3-flash-preview",
};
/** Kimi K3 behind an OpenAI-compatible server: ids `name:position`, restarting every message. */
const KIMI: Origin = { api: "openai-completions", provider: "fireworks", model: "kimi-k3" };
const DEEPSEEK: Origin = {
  api: "openai-completions",
  provider: "deepseek",
  model: "deepseek-v4-pro",
};
const CHECKPOINT: Origin = { api: "cursor-checkpoint", provider: "cursor", model: "imported" };

const USAGE = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

let clock = T0;

/** The next message time: the histories are rebuilt the same for every test. */
function tick(): number {
  clock += 1;
  return clock;
}

function user(text: string): Message {
  return { role: "user", content: text, timestamp: tick() };
}

function assistant(
  origin: Origin,
  content: AssistantMessage["content"],
  stopReason: AssistantMessage["stopReason"] = "toolUse",
): AssistantMessage {
  return {
    role: "assistant",
    content,
    ...origin,
    usage: USAGE,
    stopReason,
    timestamp: tick(),
  };
}

function call(id: string, name = "read_file", extra: Partial<ToolCall> = {}): ToolCall {
  return { type: "toolCall", id, name, arguments: { path: `${name}.ts` }, ...extra };
}

/** The result of each call of `message`, in order. */
function results(message: AssistantMessage): ToolResultMessage[] {
  return message.content
    .filter((block): block is ToolCall => block.type === "toolCall")
    .map((block) => ({
      role: "toolResult",
      toolCallId: block.id,
      toolName: block.name,
      content: [{ type: "text", text: `result of ${block.id}` }],
      isError: false,
      timestamp: tick(),
    }));
}

function step(message: AssistantMessage): Message[] {
  return [message, ...results(message)];
}

const RESPONSES_SIGNATURE = JSON.stringify({
  id: "rs_68c1f3b5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8a",
  type: "reasoning",
  encrypted_content: "gAAAAABowfO1x3Xk9Qz2L8mN4pR7sT0vW3yZ6bC9eF2h==",
  summary: [],
});
const ANTHROPIC_SIGNATURE = "EqQBCkYIBxgCKkBZ3p2sJ7nK8vL1mQ4rT6wY9zB2cE5fH8jK0lN3oP6qS9tV2w==";
const GEMINI_SIGNATURE = "CiQB0e2Kb7wYx3TnP8qR2sV5uW9yZ1aC4dF7gJ0kM3nQ6rT9uW2xZ5aB8dE1gH4j";

/**
 * One conversation that went through every kind of model, each leaving its kind of ids: the
 * Responses API's `call_…|fc_…` (81 characters), Anthropic's `toolu_…`, Gemini 2.5's made-up
 * `<name>_<time>_<n>` (two parallel calls of a long MCP name, equal for 40 characters), Kimi's
 * `read_file:0` in two messages, DeepSeek's, and the client's checkpoint (an import). The last
 * step is a tool result: the next call continues the turn (a fallback mid-turn).
 */
function mixedHistory(): Message[] {
  clock = T0;
  return [
    user("Read a.ts, then review the PR."),
    ...step(assistant(CHECKPOINT, [{ type: "text", text: "Reading it." }, call("imported_1_2")])),
    assistant(CHECKPOINT, [{ type: "text", text: "It exports a." }], "stop"),
    user("Now with tools, please."),
    ...step(
      assistant(RESPONSES, [
        { type: "thinking", thinking: "", thinkingSignature: RESPONSES_SIGNATURE },
        call("call_Rv4sT7wX0zA3bC6dE9fG2hJ5|fc_68c1f3b7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2c"),
        call(
          "call_Km2nP5qR8sT1uV4wX7yZ0aB3|fc_68c1f3b8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3d",
          "grep",
        ),
      ]),
    ),
    ...step(
      assistant(ANTHROPIC, [
        { type: "thinking", thinking: "Next the PR.", thinkingSignature: ANTHROPIC_SIGNATURE },
        { type: "text", text: "Now the review." },
        call("toolu_01A09q90qw90lq917835lq9Z", "mcp_github_create_pull_request_review"),
      ]),
    ),
    ...step(
      assistant(GEMINI_2, [
        call(
          "mcp_github_create_pull_request_review_1764561600000_1",
          "mcp_github_create_pull_request_review",
        ),
        call(
          "mcp_github_create_pull_request_review_1764561600000_2",
          "mcp_github_create_pull_request_review",
        ),
      ]),
    ),
    ...step(assistant(KIMI, [call("read_file:0"), call("functions.grep:1", "grep")])),
    ...step(assistant(KIMI, [call("read_file:0")])),
    ...step(assistant(DEEPSEEK, [call("call_00_Xk3mP8qR2sT6vW9yZ1aB4cD")])),
    ...step(
      assistant(GEMINI_3, [
        { type: "text", text: "Checking once more.", textSignature: GEMINI_SIGNATURE },
        call("rf8h2k1q", "read_file", { thoughtSignature: GEMINI_SIGNATURE }),
      ]),
    ),
    ...step(
      assistant(ANTHROPIC, [
        { type: "thinking", thinking: "One more.", thinkingSignature: ANTHROPIC_SIGNATURE },
        call("toolu_01BxK7nQ2mW9pR4sT6vY8zA3"),
      ]),
    ),
    ...step(
      assistant(RESPONSES, [
        call("call_Lk8nR4dF6gH2jK0bM5nP7qR9|fc_68c1f3b9a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4e"),
      ]),
    ),
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

async function sendTwice(spec: ProviderSpec, history: Message[]) {
  const fake = await startFakeProvider();
  try {
    const config = createModelConfig(spec.config(fake.url));
    const llm = createLLM({ models: [config] });
    const bodies: string[] = [];
    let messages = history;
    for (const callID of ["switch-1", "switch-2"]) {
      fake.reply({ type: "sse", body: readFixture(spec.id, spec.fixtures.text) });
      const events = await collect(
        llm.stream({
          callID,
          model: config.name,
          request: request(messages),
          conversationID: CONVERSATION_ID,
        }),
      );
      const last = terminalOf(events);
      const request_ = fake.requests.at(-1);
      assert.ok(request_ !== undefined);
      bodies.push(request_.body);
      assert.equal(
        last.type,
        "done",
        last.type === "error" ? `${spec.id} refused: ${last.error.errorMessage}` : undefined,
      );
      assert.ok(last.type === "done");
      messages = [...messages, last.message, user("And now?")];
    }
    return bodies;
  } finally {
    await fake.close();
  }
}

describe("history from other models and from the client's checkpoint, sent to each API", () => {
  for (const spec of PROVIDERS) {
    test(`${spec.id}: accepted, every call paired with its result, a prefix of the next request`, async () => {
      const [first, second] = await sendTwice(spec, mixedHistory());
      assert.ok(first !== undefined && second !== undefined);
      assertGolden(spec, first);
      const before = messageBytes(spec, first);
      const after = messageBytes(spec, second);
      assert.deepEqual(after.slice(0, before.length), before, "request 1 is a prefix of request 2");
      const ids = sentCallIds(spec, JSON.parse(first) as JsonRecord);
      assert.equal(ids.calls.length, 13, "every call is sent");
      assert.deepEqual(ids.results, ids.calls, "each call with its result, in order");
      assert.equal(new Set(ids.calls).size, ids.calls.length, "ids are unique");
      for (const id of ids.calls) assert.match(id, /^[a-zA-Z0-9_-]{1,64}$/);
      if (spec.id === "anthropic") {
        // The switch mid-turn ends with another model's calls: no thinking for that request.
        const thinking = (body: string) =>
          (JSON.parse(body) as { thinking?: { type?: string } }).thinking?.type;
        assert.deepEqual([thinking(first), thinking(second)], ["disabled", "enabled"]);
      }
      if (spec.id === "gemini") {
        // Gemini's own call keeps its signature; every other model turn's first call gets
        // Google's placeholder.
        const signatures = (spec.messagesOf(JSON.parse(first) as JsonRecord) as JsonRecord[])
          .filter((content) => content.role === "model")
          .map((content) =>
            (content.parts as JsonRecord[]).find((p) => p.functionCall !== undefined),
          )
          .filter((part) => part !== undefined)
          .map((part) => part.thoughtSignature);
        assert.deepEqual(signatures, [
          SKIP_SIGNATURE,
          SKIP_SIGNATURE,
          SKIP_SIGNATURE,
          SKIP_SIGNATURE,
          SKIP_SIGNATURE,
          SKIP_SIGNATURE,
          SKIP_SIGNATURE,
          GEMINI_SIGNATURE,
          SKIP_SIGNATURE,
          SKIP_SIGNATURE,
        ]);
      }
    });
  }
});

/**
 * The message part of the first request, pinned in `fixtures/<provider>/model-switch.request.json`
 * so that a change in what a switched history is sent as (ours or pi-ai's) shows in review.
 * Regenerate deliberately with `UPDATE_GOLDEN=1 node --test src/llm/model-switch.test.ts`.
 */
function assertGolden(spec: ProviderSpec, body: string): void {
  const path = join(import.meta.dirname, "fixtures", spec.id, "model-switch.request.json");
  const actual = `${JSON.stringify(spec.messagesOf(JSON.parse(body) as JsonRecord), null, 2)}\n`;
  if (process.env.UPDATE_GOLDEN === "1") writeFileSync(path, actual);
  assert.ok(existsSync(path), `missing ${path} (run with UPDATE_GOLDEN=1 to create it)`);
  assert.equal(actual, readFileSync(path, "utf8"), `${spec.id}: the request differs from ${path}`);
}

/** The call ids a body sends, and the ids its results answer, in order. */
function sentCallIds(spec: ProviderSpec, body: JsonRecord): { calls: string[]; results: string[] } {
  const calls: string[] = [];
  const results: string[] = [];
  for (const item of spec.messagesOf(body) as JsonRecord[]) {
    switch (spec.id) {
      case "anthropic":
        for (const block of (Array.isArray(item.content) ? item.content : []) as JsonRecord[]) {
          if (block.type === "tool_use") calls.push(String(block.id));
          if (block.type === "tool_result") results.push(String(block.tool_use_id));
        }
        break;
      case "openai-responses":
        if (item.type === "function_call") calls.push(String(item.call_id));
        if (item.type === "function_call_output") results.push(String(item.call_id));
        break;
      case "gemini":
        for (const part of (item.parts ?? []) as JsonRecord[]) {
          const fc = part.functionCall as JsonRecord | undefined;
          const fr = part.functionResponse as JsonRecord | undefined;
          if (fc !== undefined) calls.push(String(fc.id));
          if (fr !== undefined) results.push(String(fr.id));
        }
        break;
      default:
        for (const c of (item.tool_calls ?? []) as JsonRecord[]) calls.push(String(c.id));
        if (item.role === "tool") results.push(String(item.tool_call_id));
    }
  }
  return { calls, results };
}

describe("what is sent for a call another model made", () => {
  test("the call's own model's ids are kept; others made safe and unique; results follow", () => {
    const history = mixedHistory();
    const sent = withWireToolCallIds(
      { api: "anthropic-messages", provider: "anthropic", id: "claude-sonnet-4-5" },
      request(history),
    ).messages;
    const calls = sent.flatMap((m) =>
      m.role === "assistant" ? m.content.filter((b) => b.type === "toolCall").map((b) => b.id) : [],
    );
    const answered = sent.flatMap((m) => (m.role === "toolResult" ? [m.toolCallId] : []));
    assert.deepEqual(answered, calls);
    assert.equal(new Set(calls).size, calls.length);
    for (const id of calls) {
      assert.ok(id.length <= MAX_TOOL_CALL_ID, id);
      assert.match(id, /^[a-zA-Z0-9_-]*[a-zA-Z0-9-]$/);
    }
    // Anthropic's own ids verbatim; a foreign id that is already safe and unused too.
    assert.ok(calls.includes("toolu_01A09q90qw90lq917835lq9Z"));
    assert.ok(calls.includes("imported_1_2"));
    assert.ok(calls.includes("call_00_Xk3mP8qR2sT6vW9yZ1aB4cD"));
    // Kimi's repeated `read_file:0`: the first becomes `read_file_0`, the second another id.
    assert.equal(calls.filter((id) => id.startsWith("read_file_0")).length, 2);
    assert.ok(calls.includes("read_file_0"));
  });

  test("deterministic and looking back only: a longer history keeps the ids of its prefix", () => {
    const model = { api: "openai-completions", provider: "openai", id: "gpt-4.1" } as const;
    const history = mixedHistory();
    const whole = withWireToolCallIds(model, request(history)).messages;
    for (let length = 1; length < history.length; length += 1) {
      const part = withWireToolCallIds(model, request(history.slice(0, length))).messages;
      assert.deepEqual(part, whole.slice(0, length));
    }
    assert.deepEqual(withWireToolCallIds(model, request(history)).messages, whole);
  });

  test("a conversation with one model is sent as it is (the same object)", () => {
    clock = T0;
    const own = request([
      user("hi"),
      ...step(assistant(ANTHROPIC, [call("toolu_01A09q90qw90lq917835lq9Z")])),
    ]);
    const model = {
      api: "anthropic-messages",
      provider: "anthropic",
      id: "claude-sonnet-4-5",
    } as const;
    assert.equal(withWireToolCallIds(model, own), own);
  });
});

describe("what is added for another model's calls, and only then", () => {
  const use = { type: "tool_use", id: "a", name: "read_file", input: {} };
  const results = {
    role: "user",
    content: [{ type: "tool_result", tool_use_id: "a", content: "ok" }],
  };
  const anthropic = (thinking: string, final: unknown[], last: unknown = results) => ({
    thinking: { type: thinking, budget_tokens: 1024 },
    messages: [{ role: "user", content: "hi" }, { role: "assistant", content: final }, last],
  });

  test("Anthropic: thinking off only for budget thinking ending with results of a message without thinking", () => {
    const foreign = anthropic("enabled", [use]);
    assert.deepEqual((withThinkingAllowed("anthropic-messages", foreign) as JsonRecord).thinking, {
      type: "disabled",
    });
    for (const unchanged of [
      anthropic("enabled", [{ type: "thinking", thinking: "t", signature: "s" }, use]),
      anthropic("enabled", [{ type: "redacted_thinking", data: "d" }, use]),
      anthropic("adaptive", [use]),
      anthropic("enabled", [use], { role: "user", content: "a new turn" }),
    ]) {
      assert.equal(withThinkingAllowed("anthropic-messages", unchanged), unchanged);
    }
    assert.equal(withThinkingAllowed("openai-completions", foreign), foreign);
  });

  test("Gemini: the placeholder only on Gemini 3, only on a model turn's first unsigned call", () => {
    const payload = {
      contents: [
        { role: "user", parts: [{ text: "hi" }] },
        {
          role: "model",
          parts: [
            { text: "two calls" },
            { functionCall: { name: "read_file", args: {} } },
            { functionCall: { name: "grep", args: {} } },
          ],
        },
        {
          role: "model",
          parts: [{ functionCall: { name: "grep", args: {} }, thoughtSignature: "c2ln" }],
        },
      ],
    };
    const gemini3 = { api: "google-generative-ai", id: "gemini-3-flash-preview" } as const;
    const signed = withSignedCalls(gemini3, payload) as typeof payload;
    assert.deepEqual(
      signed.contents.map((c) =>
        c.parts.map((p) => ("thoughtSignature" in p ? p.thoughtSignature : null)),
      ),
      [[null], [null, SKIP_SIGNATURE, null], ["c2ln"]],
    );
    assert.equal(withSignedCalls(gemini3, signed), signed, "nothing left to add: the same payload");
    assert.equal(
      withSignedCalls({ api: "google-generative-ai", id: "gemini-2.5-flash" }, payload),
      payload,
    );
    assert.equal(
      withSignedCalls({ api: "openai-completions", id: "gemini-3-pro" }, payload),
      payload,
    );
  });
});

describe("the fake providers refuse what the real ones refuse", () => {
  const anthropic = (messages: unknown[]) =>
    findRuleBreak("/v1/messages", JSON.stringify({ tools: [{ name: "read_file" }], messages }));
  const refusal = (reply: ReturnType<typeof findRuleBreak>) => {
    assert.ok(reply?.type === "status" && reply.status === 400, "refused with a 400");
    return String(reply.body);
  };
  const use = (id: string) => ({ type: "tool_use", id, name: "read_file", input: {} });
  const result = (id: string) => ({ type: "tool_result", tool_use_id: id, content: "ok" });

  test("Anthropic: id pattern, unique ids, results right after their calls", () => {
    assert.equal(
      anthropic([
        { role: "user", content: "hi" },
        { role: "assistant", content: [use("toolu_1")] },
        { role: "user", content: [result("toolu_1")] },
      ]),
      null,
    );
    assert.match(
      refusal(
        anthropic([
          { role: "user", content: "hi" },
          { role: "assistant", content: [use("read_file:0")] },
          { role: "user", content: [result("read_file:0")] },
        ]),
      ),
      /"type":"invalid_request_error".*should match pattern/,
    );
    assert.match(
      refusal(
        anthropic([
          { role: "user", content: "hi" },
          { role: "assistant", content: [use("a")] },
          { role: "user", content: [result("a")] },
          { role: "assistant", content: [use("a")] },
          { role: "user", content: [result("a")] },
        ]),
      ),
      /ids must be unique/,
    );
    assert.match(
      refusal(
        anthropic([
          { role: "user", content: "hi" },
          { role: "assistant", content: [use("a")] },
          { role: "user", content: "next" },
        ]),
      ),
      /without `tool_result` blocks immediately after/,
    );
    assert.match(
      refusal(anthropic([{ role: "user", content: [result("a")] }])),
      /unexpected `tool_use_id`/,
    );
    const ending = (thinking: string) =>
      findRuleBreak(
        "/v1/messages",
        JSON.stringify({
          tools: [{ name: "read_file" }],
          thinking: { type: thinking, budget_tokens: 1024 },
          messages: [
            { role: "user", content: "hi" },
            { role: "assistant", content: [use("a")] },
            { role: "user", content: [result("a")] },
          ],
        }),
      );
    assert.match(refusal(ending("enabled")), /must start with a thinking block/);
    assert.equal(ending("disabled"), null);
  });

  test("OpenAI: 40-character ids on OpenAI itself, every call answered; Responses pairing and item ids", () => {
    const chat = (path: string, id: string) =>
      findRuleBreak(
        path,
        JSON.stringify({
          messages: [
            { role: "user", content: "hi" },
            { role: "assistant", tool_calls: [{ id, type: "function" }] },
            { role: "tool", tool_call_id: id, content: "ok" },
          ],
        }),
      );
    const long = "x".repeat(41);
    assert.match(refusal(chat("/v1/chat/completions", long)), /maximum length 40/);
    assert.equal(chat("/chat/completions", long), null);
    assert.match(
      refusal(
        findRuleBreak(
          "/v1/responses",
          JSON.stringify({
            input: [{ type: "function_call_output", call_id: "call_1", output: "ok" }],
          }),
        ),
      ),
      /No tool call found for function call output with call_id call_1/,
    );
    assert.match(
      refusal(
        findRuleBreak(
          "/v1/responses",
          JSON.stringify({
            input: [
              {
                type: "function_call",
                id: "call_1",
                call_id: "call_1",
                name: "f",
                arguments: "{}",
              },
              { type: "function_call_output", call_id: "call_1", output: "ok" },
            ],
          }),
        ),
      ),
      /Expected an ID that begins with 'fc'/,
    );
  });

  test("Gemini 3: the current turn's calls need a signature (or Google's placeholder)", () => {
    const body = (signature: string | undefined) =>
      JSON.stringify({
        contents: [
          { role: "user", parts: [{ text: "hi" }] },
          {
            role: "model",
            parts: [
              {
                functionCall: { name: "read_file", args: {} },
                ...(signature ? { thoughtSignature: signature } : {}),
              },
            ],
          },
          { role: "user", parts: [{ functionResponse: { name: "read_file", response: {} } }] },
        ],
      });
    const path = "/v1beta/models/gemini-3-flash-preview:streamGenerateContent";
    assert.match(refusal(findRuleBreak(path, body(undefined))), /missing a thought_signature/);
    assert.equal(findRuleBreak(path, body(GEMINI_SKIP_SIGNATURE)), null);
    assert.equal(
      findRuleBreak(path.replace("gemini-3-flash-preview", "gemini-2.5-flash"), body(undefined)),
      null,
    );
  });
});
