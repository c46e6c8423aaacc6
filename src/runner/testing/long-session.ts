/**
 * A long scripted agent session through the real runner, loop, store and LLM layer, against a
 * fake provider on 127.0.0.1 with a small context window (docs/compaction.md). Used by the
 * compaction tests and `npm run bench:cache`.
 *
 * The provider counts a request's tokens as its body's bytes / 4 and answers a request over its
 * window with its kind's real context-length error (`OVERFLOW_ERRORS`). Otherwise it answers a
 * summary request with a summary, and an agent request with `toolsPerTurn` tool calls (one per
 * request) and then a final text, reporting the request's size as input usage.
 */
import { createLLM, createModelConfigs } from "../../llm/index.ts";
import { type FakeProvider, startFakeProvider } from "../../llm/testing/fake-provider.ts";
import { OVERFLOW_ERRORS } from "../../llm/testing/overflow-errors.ts";
import type { ProviderID } from "../../llm/testing/provider-specs.ts";
import { toScriptedSse } from "../../llm/testing/scripted-sse.ts";
import {
  type CompactionSettings,
  type ConversationState,
  SUMMARY_SYSTEM_PROMPT,
  type ToolResultMessage,
  type TurnSettings,
} from "../../loop/index.ts";
import { createMemoryStore, type Store } from "../../store/index.ts";
import { createRunner } from "../runner.ts";
import type { TurnOutcome, TurnOutput } from "../types.ts";

export interface LongSessionOptions {
  readonly kind: ProviderID;
  readonly turns: number;
  readonly toolsPerTurn: number;
  /** Characters of each tool result. */
  readonly toolOutputChars: number;
  /** The configured window (tokens) and output reserve. */
  readonly contextWindow: number;
  readonly maxOutput: number;
  /** The window the provider really enforces (tokens); default `contextWindow`. */
  readonly providerWindow?: number;
  readonly threshold?: number;
  readonly tailMessages?: number;
  /** The first this many summary requests get an HTTP 500 (the summary call fails). */
  readonly failSummaries?: number;
  readonly store?: Store;
}

export interface SentRequest {
  readonly body: string;
  readonly tokens: number;
  readonly summary: boolean;
  readonly overflow: boolean;
}

export interface LongSessionResult {
  readonly requests: readonly SentRequest[];
  readonly outcomes: readonly TurnOutcome[];
  readonly state: ConversationState | null;
  /** Input tokens of each call the runner reported through `countUsage` (summary calls). */
  readonly countedUsage: readonly number[];
}

export const TOOL = {
  name: "read",
  description: "Read a file.",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};

/** Tokens the fake provider counts for a request body. */
export function countTokens(body: string): number {
  return Math.ceil(Buffer.byteLength(body) / 4);
}

export async function runLongSession(options: LongSessionOptions): Promise<LongSessionResult> {
  const provider = await startFakeProvider();
  try {
    return await drive(provider, options);
  } finally {
    await provider.close();
  }
}

async function drive(
  provider: FakeProvider,
  options: LongSessionOptions,
): Promise<LongSessionResult> {
  const window = options.providerWindow ?? options.contextWindow;
  const requests: SentRequest[] = [];
  let toolsLeft = 0;
  let callNumber = 0;
  let summariesToFail = options.failSummaries ?? 0;
  provider.answer((request) => {
    const tokens = countTokens(request.body);
    const summary = request.body.includes(JSON.stringify(SUMMARY_SYSTEM_PROMPT).slice(1, 60));
    if (tokens > window) {
      requests.push({ body: request.body, tokens, summary, overflow: true });
      const error = OVERFLOW_ERRORS[options.kind];
      return { type: "status", status: error.status, body: error.body };
    }
    requests.push({ body: request.body, tokens, summary, overflow: false });
    if (summary && summariesToFail > 0) {
      summariesToFail -= 1;
      return { type: "status", status: 500, body: '{"error":{"message":"upstream overloaded"}}' };
    }
    const usage = { input: tokens, output: 40 };
    if (summary) {
      const text = `Goals: finish the scripted task. Files: f0.ts … f${callNumber}.ts read. To-dos: continue.`;
      return { type: "sse", body: toScriptedSse(options.kind, { text, usage }) };
    }
    callNumber += 1;
    if (toolsLeft > 0) {
      toolsLeft -= 1;
      const call = {
        id: `call_${callNumber}`,
        name: "read",
        arguments: { path: `f${callNumber}.ts` },
      };
      return {
        type: "sse",
        body: toScriptedSse(options.kind, { text: "Reading.", toolCalls: [call], usage }),
      };
    }
    return {
      type: "sse",
      body: toScriptedSse(options.kind, { text: `Done ${callNumber}.`, usage }),
    };
  });

  const store = options.store ?? createMemoryStore();
  const name = "small";
  const llm = createLLM({
    models: createModelConfigs([
      {
        name,
        api: options.kind,
        model: "scripted-model",
        baseUrl: options.kind === "gemini" ? `${provider.url}/v1beta` : `${provider.url}/v1`,
        apiKey: "sk-test-long-session",
        contextWindow: options.contextWindow,
        maxOutput: options.maxOutput,
        ...(options.kind === "anthropic" ? { reasoning: false } : {}),
      },
    ]),
    retry: { maxAttempts: 1 },
  });
  const model = llm.findModel(name);
  if (model === undefined) throw new Error("model not configured");
  const compaction: CompactionSettings = {
    auto: true,
    contextWindow: options.contextWindow,
    outputReserve: options.maxOutput,
    threshold: options.threshold ?? model.compaction.threshold,
    summaryModel: name,
    tailMessages: options.tailMessages ?? model.compaction.tailMessages,
    charsPerToken: model.compaction.charsPerToken,
  };
  const settings: TurnSettings = {
    model: name,
    systemPrompt: "You are a scripted test agent. Read the files you are asked to read.",
    tools: [TOOL],
    compaction,
  };
  const runner = createRunner({ store, llm, now: () => 1_767_225_600_000 });
  const conversationID = `long-${options.kind}`;
  const outcomes: TurnOutcome[] = [];
  const countedUsage: number[] = [];
  const body = "x".repeat(options.toolOutputChars);
  for (let turn = 0; turn < options.turns; turn += 1) {
    toolsLeft = options.toolsPerTurn;
    const ended = Promise.withResolvers<TurnOutcome>();
    const output: TurnOutput = {
      publish() {},
      countUsage: (usage) => countedUsage.push(usage.input),
      runTool: (command) =>
        Promise.resolve<ToolResultMessage>({
          role: "toolResult",
          toolCallId: command.toolCall.id,
          toolName: command.toolCall.name,
          content: [{ type: "text", text: `${command.toolCall.id}: ${body}` }],
          isError: false,
          timestamp: 1_767_225_600_000,
        }),
      end: (outcome) => ended.resolve(outcome),
    };
    const text = `Turn ${turn}: read the next ${options.toolsPerTurn} files and report.`;
    const userMessage = { role: "user" as const, content: text, timestamp: 1_767_225_600_000 };
    await runner.submit(
      conversationID,
      turn === 0
        ? { type: "start", inputID: `in-${turn}`, at: 0, userMessage, context: [], settings }
        : { type: "user_message", inputID: `in-${turn}`, at: 0, message: userMessage },
      output,
    );
    outcomes.push(await ended.promise);
  }
  await runner.shutdown();
  const loaded = await store.load(conversationID);
  return { requests, outcomes, state: loaded?.state ?? null, countedUsage };
}

/**
 * Share of input tokens that were a cached prefix of the previous request: for each request, the
 * bytes it shares as a prefix with the request before it, over all bytes (the provider caches by
 * prefix; bytes stand in for tokens).
 */
export function cachedShare(requests: readonly SentRequest[]): number {
  let cached = 0;
  let total = 0;
  let previous = "";
  for (const request of requests) {
    total += request.body.length;
    cached += commonPrefix(previous, request.body);
    previous = request.body;
  }
  return total === 0 ? 0 : cached / total;
}

function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i += 1;
  return i;
}
