/**
 * The behaviour matrix (README.md) for an OpenAI-compatible endpoint (DeepSeek dialect), over recorded transcripts in
 * `fixtures/openai-compatible/` served by a fake provider on 127.0.0.1.
 */
import { describe, test } from "node:test";
import {
  abortsBeforeHeaders,
  abortsMidStream,
  cachesPrompts,
  capturesExactRequest,
  exhaustsServerErrors,
  failsOnDroppedConnection,
  failsOnErrorEvent,
  failsWithoutTerminalMarker,
  isDeterministic,
  keepsPrefix,
  replaysSavedBody,
  replaysVerbatim,
  reportsUsage,
  retriesRateLimit,
  sendsNothingWhenBeforeSendFails,
  stopsOnLength,
  streamsOneToolCall,
  streamsText,
  streamsThinking,
  streamsToolCalls,
} from "./testing/behaviours.ts";
import { OPENAI_COMPATIBLE as spec } from "./testing/provider-specs.ts";

describe("openai-compatible", { timeout: 20_000 }, () => {
  test("text", () => streamsText(spec));
  test("thinking with signatures", () => streamsThinking(spec));
  test("one tool call, arguments split inside strings and escapes", () => streamsOneToolCall(spec));
  test("several tool calls", () => streamsToolCalls(spec));
  test("usage with cache reads and writes", () => reportsUsage(spec));
  test("length stop", () => stopsOnLength(spec));
  test("429 then success, same body", () => retriesRateLimit(spec));
  test("500 until attempts run out", () => exhaustsServerErrors(spec));
  test("SSE error event", () => failsOnErrorEvent(spec));
  test("connection dropped mid-stream", () => failsOnDroppedConnection(spec));
  test("no terminal marker", () => failsWithoutTerminalMarker(spec));
  test("abort before headers", () => abortsBeforeHeaders(spec));
  test("abort mid-stream", () => abortsMidStream(spec));
  test("verbatim replay", () => replaysVerbatim(spec));
  test("deterministic body", () => isDeterministic(spec));
  test("prefix at the provider body", () => keepsPrefix(spec));
  test("prompt caching on by default", () => cachesPrompts(spec));
  test("exact request captured before sending", () => capturesExactRequest(spec));
  test("beforeSend failure sends nothing", () => sendsNothingWhenBeforeSendFails(spec));
  test("replay sends the saved body", () => replaysSavedBody(spec));
});
