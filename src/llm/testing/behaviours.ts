/**
 * The behaviour matrix of README.md, written once and run for every provider: each function
 * starts a fake provider on 127.0.0.1 replaying the provider's recorded transcripts, runs model
 * calls through `createLLM`, and checks events, request bodies and retries.
 *
 * Why one file of about 640 lines: the behaviour matrix is one suite run for every provider;
 * splitting it would let providers drift apart.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import { createModelConfig } from "../config.ts";
import { createLLM, type LLM } from "../llm.ts";
import type {
  AssistantMessage,
  ExactRequest,
  LLMCall,
  LLMStream,
  RequestMessages,
  ResponseEvent,
  Tool,
  ToolCall,
  ToolResultMessage,
} from "../types.ts";
import { type FakeProvider, readFixture, startFakeProvider } from "./fake-provider.ts";
import {
  API_KEY,
  CONVERSATION_ID,
  GREP_ARGUMENTS,
  type JsonRecord,
  type ProviderSpec,
  READ_ARGUMENTS,
  TEXT,
} from "./provider-specs.ts";
import { collect, collectChecked, recordingSleep, terminalOf } from "./streams.ts";

// ---------------------------------------------------------------------------------------------
// A conversation to replay
// ---------------------------------------------------------------------------------------------

const T0 = 1_767_225_600_000;
const SYSTEM_PROMPT = "You are a careful coding agent.";
const TOOLS: Tool[] = [
  {
    name: "read_file",
    description: "Read a file of the workspace.",
    parameters: {
      type: "object",
      properties: { path: { type: "string" }, note: { type: "string" } },
      required: ["path"],
    },
  },
  {
    name: "grep",
    description: "Search the workspace with a regular expression.",
    parameters: {
      type: "object",
      properties: { pattern: { type: "string" }, path: { type: "string" } },
      required: ["pattern"],
    },
  },
];

export function firstRequest(): RequestMessages {
  return {
    systemPrompt: SYSTEM_PROMPT,
    tools: TOOLS,
    messages: [{ role: "user", content: 'Read src/say "hi".ts and grep for TODO.', timestamp: T0 }],
  };
}

function toolResults(message: AssistantMessage): ToolResultMessage[] {
  return message.content
    .filter((block): block is ToolCall => block.type === "toolCall")
    .map((call, index) => ({
      role: "toolResult",
      toolCallId: call.id,
      toolName: call.name,
      content: [{ type: "text", text: `result ${index + 1} of ${call.name}` }],
      isError: false,
      timestamp: T0 + 10 + index,
    }));
}

function withMessages(
  request: RequestMessages,
  ...messages: RequestMessages["messages"]
): RequestMessages {
  return { ...request, messages: [...request.messages, ...messages] };
}

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

interface Harness {
  readonly fake: FakeProvider;
  readonly llm: LLM;
  readonly delays: number[];
  fixture(name: string): string;
  call(request: RequestMessages, extra?: Partial<LLMCall>): LLMStream;
  /** A new LLM over the same fake provider (e.g. a restarted process). */
  restart(): LLM;
}

let calls = 0;

async function withProvider(spec: ProviderSpec, run: (h: Harness) => Promise<void>): Promise<void> {
  const fake = await startFakeProvider();
  const { sleep, delays } = recordingSleep();
  const create = () =>
    createLLM({
      models: [createModelConfig(spec.config(fake.url))],
      retry: { sleep, random: () => 0 },
    });
  const llm = create();
  const model = createModelConfig(spec.config(fake.url)).name;
  try {
    await run({
      fake,
      llm,
      delays,
      fixture: (name) => readFixture(spec.id, name),
      call: (request, extra = {}) =>
        llm.stream({
          callID: `call-${++calls}`,
          model,
          request,
          conversationID: CONVERSATION_ID,
          ...extra,
        }),
      restart: create,
    });
  } finally {
    await fake.close();
  }
}

function done(events: readonly ResponseEvent[]): AssistantMessage {
  const last = terminalOf(events);
  assert.equal(last.type, "done", last.type === "error" ? last.error.errorMessage : undefined);
  return last.message;
}

function errorOf(events: readonly ResponseEvent[]): Extract<ResponseEvent, { type: "error" }> {
  const last = terminalOf(events);
  assert.equal(last.type, "error");
  return last;
}

function deltasOf(events: readonly ResponseEvent[], type: "text_delta" | "thinking_delta"): string {
  return events.map((e) => (e.type === type ? e.delta : "")).join("");
}

function textOf(message: AssistantMessage): string {
  return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

function toolCallsOf(message: AssistantMessage): ToolCall[] {
  return message.content.filter((block): block is ToolCall => block.type === "toolCall");
}

/** Runs the first turn (two tool calls) and returns its assistant message. */
async function firstTurn(h: Harness, spec: ProviderSpec): Promise<AssistantMessage> {
  h.fake.reply({ type: "sse", body: h.fixture(spec.fixtures.tools) });
  return done(await collect(h.call(firstRequest())));
}

/** The message part of a body, cache markers removed, serialised as sent. */
function messageBytes(spec: ProviderSpec, body: string): string {
  const messages = spec.messagesOf(JSON.parse(body) as JsonRecord);
  return JSON.stringify(messages, (key, value: unknown) =>
    key === "cache_control" ? undefined : value,
  );
}

// ---------------------------------------------------------------------------------------------
// Behaviours
// ---------------------------------------------------------------------------------------------

/** Text streams as snapshots; deltas add up to the final text; response id kept. */
export function streamsText(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    h.fake.reply({ type: "sse", body: h.fixture(spec.fixtures.text) });
    const events = await collectChecked(h.call(firstRequest()));
    assert.equal(events[0]?.type, "start");
    const message = done(events);
    assert.equal(message.stopReason, "stop");
    assert.equal(textOf(message), TEXT);
    assert.equal(deltasOf(events, "text_delta"), TEXT);
    assert.equal(message.responseId, spec.textResponseId);
  });
}

/** Thinking blocks arrive with their signatures (or redacted payloads) exactly as sent. */
export function streamsThinking(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    assert.ok(Array.isArray(spec.thinking), `${spec.id} has no thinking`);
    h.fake.reply({ type: "sse", body: h.fixture(spec.fixtures.tools) });
    const events = await collectChecked(h.call(firstRequest()));
    const thinking = done(events).content.filter((block) => block.type === "thinking");
    assert.equal(thinking.length, spec.thinking.length);
    spec.thinking.forEach((expected, i) => {
      const actual: Record<string, unknown> = { ...thinking[i] };
      for (const [field, value] of Object.entries(expected)) {
        assert.deepEqual(actual[field], value, `thinking ${i}.${field}`);
      }
    });
    assert.ok(
      events.some((e) => e.type === "thinking_delta"),
      "thinking streams as deltas",
    );
  });
}

/** One tool call whose arguments are split inside strings and escapes. */
export function streamsOneToolCall(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    h.fake.reply({ type: "sse", body: h.fixture(spec.fixtures.oneTool) });
    const stream = h.call(firstRequest());
    const events = await collectChecked(stream);
    const message = done(events);
    assert.equal(message.stopReason, "toolUse");
    const [call, ...rest] = toolCallsOf(message);
    assert.equal(rest.length, 0);
    assert.deepEqual(call, {
      type: "toolCall",
      id: spec.oneToolID,
      name: "read_file",
      arguments: READ_ARGUMENTS,
      ...(spec.oneToolSignature === undefined ? {} : { thoughtSignature: spec.oneToolSignature }),
    });
    const index = message.content.indexOf(call as ToolCall);
    assert.equal(stream.toolCallArgumentsText(index), spec.readArgumentsText);
    const deltas = events.filter((e) => e.type === "toolcall_delta" && e.contentIndex === index);
    assert.equal(
      deltas.map((e) => (e.type === "toolcall_delta" ? e.delta : "")).join(""),
      spec.readArgumentsText,
    );
  });
}

/** Several tool calls, each with its own id, name and arguments, in content order. */
export function streamsToolCalls(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    h.fake.reply({ type: "sse", body: h.fixture(spec.fixtures.tools) });
    const stream = h.call(firstRequest());
    const message = done(await collectChecked(stream));
    const toolCalls = toolCallsOf(message);
    assert.deepEqual(
      toolCalls.map((c) => [c.id, c.name, c.arguments]),
      [
        [spec.toolIDs[0], "read_file", READ_ARGUMENTS],
        [spec.toolIDs[1], "grep", GREP_ARGUMENTS],
      ],
    );
    const readIndex = message.content.indexOf(toolCalls[0] as ToolCall);
    assert.equal(stream.toolCallArgumentsText(readIndex), spec.readArgumentsText);
  });
}

/** Usage with cached reads (and writes where the provider reports them), priced. */
export function reportsUsage(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    h.fake.reply(
      { type: "sse", body: h.fixture(spec.fixtures.text) },
      { type: "sse", body: h.fixture(spec.fixtures.tools) },
    );
    for (const expected of [spec.textUsage, spec.toolsUsage]) {
      const { usage } = done(await collect(h.call(firstRequest())));
      assert.deepEqual(
        {
          input: usage.input,
          output: usage.output,
          cacheRead: usage.cacheRead,
          cacheWrite: usage.cacheWrite,
        },
        expected,
      );
      assert.ok(usage.cost.total > 0, "priced from the catalogue");
    }
  });
}

/** A response cut off by the output limit ends with `done(length)`. */
export function stopsOnLength(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    h.fake.reply({ type: "sse", body: h.fixture(spec.fixtures.length) });
    const events = await collectChecked(h.call(firstRequest()));
    const last = terminalOf(events);
    assert.ok(last.type === "done" && last.reason === "length");
    assert.equal(textOf(last.message), "The list goes on: one, two, three,");
  });
}

const RATE_LIMITED =
  '{"error":{"message":"Rate limit reached. Please try again in 2s.","type":"rate_limit_error"}}';
const SERVER_ERROR = '{"error":{"message":"Internal server error","type":"server_error"}}';

/** 429 with Retry-After, then success: the wait is honoured and the same bytes are sent again. */
export function retriesRateLimit(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    h.fake.reply(
      { type: "status", status: 429, headers: { "retry-after": "2" }, body: RATE_LIMITED },
      { type: "sse", body: h.fixture(spec.fixtures.text) },
    );
    const stream = h.call(firstRequest());
    const events = await collectChecked(stream);
    assert.equal(textOf(done(events)), TEXT);
    assert.equal(h.fake.requests.length, 2);
    assert.equal(
      h.fake.requests[1]?.body,
      h.fake.requests[0]?.body,
      "the retry sends the same bytes",
    );
    assert.deepEqual(h.delays, [2000]);
    assert.deepEqual(stream.attempts, [
      { attempt: 1, status: 429, retryDelayMs: 2000 },
      { attempt: 2, status: 200 },
    ]);
  });
}

/** 500 on every attempt: bounded retries with backoff, then one terminal error. */
export function exhaustsServerErrors(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    const error = { type: "status", status: 500, body: SERVER_ERROR } as const;
    h.fake.reply(error, error, error, error, error);
    const stream = h.call(firstRequest());
    const events = await collectChecked(stream);
    assert.equal(events.length, 1, "no start: the provider never answered");
    assert.equal(errorOf(events).reason, "error");
    assert.equal(h.fake.requests.length, 4, "four attempts");
    assert.equal(new Set(h.fake.requests.map((r) => r.body)).size, 1, "identical bodies");
    assert.deepEqual(h.delays, [1000, 2000, 4000]);
    assert.deepEqual(
      stream.attempts.map((a) => a.status),
      [500, 500, 500, 500],
    );
  });
}

/** An error event inside the stream ends it with `error`, not retried (output had started). */
export function failsOnErrorEvent(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    h.fake.reply(
      { type: "sse", body: h.fixture(spec.fixtures.errorEvent) },
      { type: "sse", body: h.fixture(spec.fixtures.text) },
    );
    const events = await collectChecked(h.call(firstRequest()));
    assert.equal(events[0]?.type, "start");
    assert.ok(events.some((e) => e.type === "text_delta"));
    const error = errorOf(events);
    assert.equal(error.reason, "error");
    assert.ok((error.error.errorMessage ?? "").length > 0);
    assert.equal(h.fake.requests.length, 1, "no retry after the first event");
  });
}

/** The connection drops mid-stream: a terminal error, nothing to commit, no retry. */
export function failsOnDroppedConnection(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    h.fake.reply(
      { type: "drop", body: h.fixture(spec.fixtures.text), events: spec.midStreamEvents },
      { type: "sse", body: h.fixture(spec.fixtures.text) },
    );
    const events = await collectChecked(h.call(firstRequest()));
    assert.ok(
      events.some((e) => e.type === "text_delta"),
      "output had started",
    );
    assert.equal(
      events.some((e) => e.type === "done"),
      false,
      "no done: nothing can be committed",
    );
    assert.equal(errorOf(events).reason, "error");
    assert.equal(h.fake.requests.length, 1, "no retry after the first event");
  });
}

/** The stream ends without the provider's terminal marker: an error, not a silent success. */
export function failsWithoutTerminalMarker(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    h.fake.reply({ type: "sse", body: h.fixture(spec.fixtures.noTerminal) });
    const events = await collectChecked(h.call(firstRequest()));
    assert.ok(events.some((e) => e.type === "text_delta"));
    assert.equal(errorOf(events).reason, "error");
  });
}

/** Abort while waiting for the response headers: `error(aborted)` alone; the socket is closed. */
export function abortsBeforeHeaders(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    h.fake.reply({ type: "hang" });
    const stream = h.call(firstRequest());
    const request = await h.fake.request(0);
    stream.abort();
    const events = await collectChecked(stream);
    assert.deepEqual(
      events.map((e) => e.type),
      ["error"],
    );
    assert.equal(errorOf(events).reason, "aborted");
    await request.closed;
  });
}

/** Abort mid-stream: `error(aborted)` with the partial content; the socket is closed. */
export function abortsMidStream(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    h.fake.reply({
      type: "stall",
      body: h.fixture(spec.fixtures.text),
      events: spec.midStreamEvents,
    });
    const stream = h.call(firstRequest());
    const seen: ResponseEvent[] = [];
    for (let event = await stream.recv(); event !== undefined; event = await stream.recv()) {
      seen.push(event);
      if (event.type === "text_delta") break;
    }
    assert.equal(seen.at(-1)?.type, "text_delta", "output had started");
    stream.abort();
    const rest = await collect(stream);
    const error = errorOf([...seen, ...rest]);
    assert.equal(error.reason, "aborted");
    assert.ok(textOf(error.error).startsWith("Hello"), "partial content kept on the error");
    await (await h.fake.request(0)).closed;
  });
}

/** Ids, signatures and response item ids come back byte for byte in the next request. */
export function replaysVerbatim(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    const first = await firstTurn(h, spec);
    assert.deepEqual(
      toolCallsOf(first).map((c) => c.id),
      [...spec.toolIDs],
    );
    h.fake.reply({ type: "sse", body: h.fixture(spec.fixtures.text) });
    done(await collect(h.call(withMessages(firstRequest(), first, ...toolResults(first)))));
    spec.assertReplayed(JSON.parse(h.fake.requests[1]?.body ?? "") as JsonRecord, first);
  });
}

/** The same history gives a byte-identical body, in this process and in a new one. */
export function isDeterministic(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    const first = await firstTurn(h, spec);
    const second = withMessages(firstRequest(), first, ...toolResults(first));
    const text = h.fixture(spec.fixtures.text);
    h.fake.reply(
      { type: "sse", body: text },
      { type: "sse", body: text },
      { type: "sse", body: text },
    );
    done(await collect(h.call(second)));
    done(await collect(h.call(structuredClone(second))));
    const restarted = h.restart();
    const model = restarted.listModels()[0]?.name ?? "";
    done(
      await collect(
        restarted.stream({
          callID: "again",
          model,
          request: structuredClone(second),
          conversationID: CONVERSATION_ID,
        }),
      ),
    );
    const bodies = h.fake.requests.slice(1).map((r) => r.body);
    assert.equal(bodies.length, 3);
    assert.equal(bodies[1], bodies[0]);
    assert.equal(bodies[2], bodies[0]);
  });
}

/** Request n's message part is a byte prefix of request n+1's, cache markers aside. */
export function keepsPrefix(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    const first = await firstTurn(h, spec);
    const second = withMessages(firstRequest(), first, ...toolResults(first));
    h.fake.reply({ type: "sse", body: h.fixture(spec.fixtures.text) });
    const answer = done(await collect(h.call(second)));
    const third = withMessages(second, answer, {
      role: "user",
      content: "Thanks. Now grep for FIXME.",
      timestamp: T0 + 100,
    });
    h.fake.reply({ type: "sse", body: h.fixture(spec.fixtures.text) });
    done(await collect(h.call(third)));
    const parts = h.fake.requests.map((r) => messageBytes(spec, r.body));
    assert.equal(parts.length, 3);
    for (let n = 0; n + 1 < parts.length; n++) {
      const before = parts[n] as string;
      const after = parts[n + 1] as string;
      const prefix = before.slice(0, -1); // without the closing "]"
      assert.ok(after.length > before.length, `request ${n + 2} adds messages`);
      assert.equal(
        after.slice(0, prefix.length),
        prefix,
        `request ${n + 1} is a prefix of request ${n + 2}`,
      );
    }
  });
}

/** Prompt caching is on by default, with the per-provider fields, stable per conversation. */
export function cachesPrompts(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    const text = h.fixture(spec.fixtures.text);
    h.fake.reply(
      { type: "sse", body: text },
      { type: "sse", body: text },
      { type: "sse", body: text },
    );
    done(await collect(h.call(firstRequest())));
    done(await collect(h.call(firstRequest())));
    done(await collect(h.call(firstRequest(), { conversationID: "another-conversation" })));
    const bodies = h.fake.requests.map((r) => JSON.parse(r.body) as JsonRecord);
    spec.assertCaching(bodies[0] as JsonRecord);
    assert.equal(
      bodies[1]?.prompt_cache_key,
      bodies[0]?.prompt_cache_key,
      "stable within a conversation",
    );
    if (bodies[0]?.prompt_cache_key !== undefined) {
      assert.notEqual(bodies[2]?.prompt_cache_key, bodies[0]?.prompt_cache_key, "per conversation");
    }
  });
}

/** `beforeSend` gets the exact body before anything is sent; the stream exposes it too. */
export function capturesExactRequest(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    h.fake.reply({ type: "sse", body: h.fixture(spec.fixtures.text) });
    const seen: { exact: ExactRequest; requestsSoFar: number }[] = [];
    const stream = h.call(firstRequest(), {
      beforeSend: async (exact) => {
        seen.push({ exact, requestsSoFar: h.fake.requests.length });
      },
    });
    done(await collect(stream));
    assert.equal(seen.length, 1);
    const { exact, requestsSoFar } = seen[0] as (typeof seen)[number];
    assert.equal(requestsSoFar, 0, "the hook ran before the request was sent");
    assert.equal(exact.body, h.fake.requests[0]?.body, "the body sent is the body captured");
    assert.equal(exact.bodyHash, createHash("sha256").update(exact.body).digest("hex"));
    assert.equal(exact.replayed, false);
    assert.equal(
      new URL(exact.url).pathname,
      new URL(`http://x${h.fake.requests[0]?.url}`).pathname,
    );
    // The stream keeps what was sent, without the body (SentRequest, issue #19).
    const { body: _body, ...sent } = exact;
    assert.deepEqual(stream.exactRequest, sent);
    assert.equal(JSON.stringify(exact).includes(API_KEY), false, "no key in the exact request");
  });
}

/** A failing `beforeSend` ends the call with an error and nothing goes upstream. */
export function sendsNothingWhenBeforeSendFails(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    h.fake.reply({ type: "sse", body: h.fixture(spec.fixtures.text) });
    const stream = h.call(firstRequest(), {
      beforeSend: () => Promise.reject(new Error("disk full")),
    });
    const events = await collectChecked(stream);
    assert.equal(events.length, 1);
    assert.equal(errorOf(events).error.errorMessage, "beforeSend failed: disk full");
    assert.equal(h.fake.requests.length, 0);
  });
}

/** A replay sends the saved body byte for byte, not a rebuilt one. */
export function replaysSavedBody(spec: ProviderSpec): Promise<void> {
  return withProvider(spec, async (h) => {
    const first = await firstTurn(h, spec);
    // Saved bytes that no serialiser of ours would produce: the first body, re-indented.
    const saved = JSON.stringify(JSON.parse(h.fake.requests[0]?.body ?? ""), null, 2);
    h.fake.reply({ type: "sse", body: h.fixture(spec.fixtures.text) });
    const seen: ExactRequest[] = [];
    const stream = h.call(withMessages(firstRequest(), first, ...toolResults(first)), {
      replay: { body: saved },
      beforeSend: async (exact) => {
        seen.push(exact);
      },
    });
    done(await collect(stream));
    assert.equal(h.fake.requests[1]?.body, saved);
    assert.equal(seen[0]?.body, saved);
    assert.equal(seen[0]?.replayed, true);
    assert.equal(Number(h.fake.requests[1]?.headers["content-length"]), Buffer.byteLength(saved));
  });
}

/** One behaviour of the matrix in README.md: its row name and the check, run per provider. */
export interface Behaviour {
  readonly name: string;
  readonly run: (spec: ProviderSpec) => Promise<void>;
}

/** The rows of the behaviour matrix, in README order. */
export const BEHAVIOURS: readonly Behaviour[] = [
  { name: "text", run: streamsText },
  { name: "thinking with signatures", run: streamsThinking },
  { name: "one tool call, arguments split inside strings and escapes", run: streamsOneToolCall },
  { name: "several tool calls", run: streamsToolCalls },
  { name: "usage with cache reads and writes", run: reportsUsage },
  { name: "length stop", run: stopsOnLength },
  { name: "429 then success, same body", run: retriesRateLimit },
  { name: "500 until attempts run out", run: exhaustsServerErrors },
  { name: "SSE error event", run: failsOnErrorEvent },
  { name: "connection dropped mid-stream", run: failsOnDroppedConnection },
  { name: "no terminal marker", run: failsWithoutTerminalMarker },
  { name: "abort before headers", run: abortsBeforeHeaders },
  { name: "abort mid-stream", run: abortsMidStream },
  { name: "verbatim replay", run: replaysVerbatim },
  { name: "deterministic body", run: isDeterministic },
  { name: "prefix at the provider body", run: keepsPrefix },
  { name: "prompt caching on by default", run: cachesPrompts },
  { name: "exact request captured before sending", run: capturesExactRequest },
  { name: "beforeSend failure sends nothing", run: sendsNothingWhenBeforeSendFails },
  { name: "replay sends the saved body", run: replaysSavedBody },
];

/** Why `behaviour` does not apply to the provider of `spec`, or null when it does. */
export function toNotApplicable(spec: ProviderSpec, behaviour: Behaviour): string | null {
  if (behaviour.run === streamsThinking && "notApplicable" in spec.thinking) {
    return spec.thinking.notApplicable;
  }
  return null;
}

/** Registers the provider's column of the matrix: one test per applicable behaviour. */
export function registerBehaviourMatrix(spec: ProviderSpec): void {
  describe(spec.id, { timeout: 20_000 }, () => {
    for (const behaviour of BEHAVIOURS) {
      if (toNotApplicable(spec, behaviour) === null)
        test(behaviour.name, () => behaviour.run(spec));
    }
  });
}
