import assert from "node:assert/strict";
import { test } from "node:test";
import { Code } from "@connectrpc/connect";
import { assistantMessage, text } from "../../loop/testing.ts";
import type { AgentServerMessage } from "./gen/agent/v1/agent_stream_pb.js";
import { ErrorDetails_Error, ErrorDetailsSchema } from "./gen/aiserver/v1/error_details_pb.js";
import { callClient, T0, turnState } from "./testing.ts";
import { startToolCall } from "./tool-session.ts";
import { toEndedTurnError, toTurnEnd } from "./turn-end.ts";
import { ZERO_USAGE } from "./turn-state.ts";

function kinds(messages: readonly AgentServerMessage[]): string[] {
  return messages.map((message) =>
    message.message.case === "interactionUpdate"
      ? (message.message.value.message.case ?? "")
      : (message.message.case ?? ""),
  );
}

const USAGE = { input: 100, output: 20, cacheRead: 80, cacheWrite: 5, reasoning: 7 };

test("final: checkpoint, then turn_ended with the turn's usage; no error", () => {
  const end = toTurnEnd(
    turnState({ usage: USAGE }),
    { type: "final", message: assistantMessage([text("ok")]) },
    { at: T0 },
  );
  assert.deepEqual(kinds(end.messages), ["conversationCheckpointUpdate", "turnEnded"]);
  assert.equal(end.error, null);
  const ended = end.messages[1]?.message;
  assert.ok(ended?.case === "interactionUpdate" && ended.value.message.case === "turnEnded");
  assert.deepEqual(ended.value.message.value, {
    ...ended.value.message.value,
    inputTokens: 100n,
    outputTokens: 20n,
    cacheReadTokens: 80n,
    cacheWriteTokens: 5n,
    reasoningTokens: 7n,
  });
});

test("failed: checkpoint, turn_ended, then a Connect error with ErrorDetails", () => {
  const failed = { ...assistantMessage([], "error"), errorMessage: "429 Too Many Requests" };
  const end = toTurnEnd(
    turnState({ usage: ZERO_USAGE }),
    { type: "failed", message: failed },
    { at: T0 },
  );
  assert.deepEqual(kinds(end.messages), ["conversationCheckpointUpdate", "turnEnded"]);
  assert.equal(end.error?.code, Code.Unavailable);
  const [details] = end.error?.findDetails(ErrorDetailsSchema) ?? [];
  assert.equal(details?.error, ErrorDetails_Error.PROVIDER_ERROR);
  assert.equal(details?.details?.isRetryable, true);
});

test("canceled: abort the running exec, close the call, checkpoint, turn_ended, canceled error", () => {
  const started = startToolCall(turnState(), callClient("read_file", { path: "a.ts" }), {
    at: T0,
    inputID: "i",
  });
  const end = toTurnEnd(
    started.state,
    { type: "canceled", reason: "user canceled" },
    { at: T0 + 1 },
  );
  assert.deepEqual(kinds(end.messages), [
    "execServerControlMessage",
    "toolCallCompleted",
    "conversationCheckpointUpdate",
    "turnEnded",
  ]);
  assert.equal(end.error?.code, Code.Canceled);
  assert.deepEqual(end.state.open, []);
  const checkpoint = end.messages[2]?.message;
  assert.ok(checkpoint?.case === "conversationCheckpointUpdate");
  assert.deepEqual(checkpoint.value.pendingToolCalls, []);
  const [details] = end.error?.findDetails(ErrorDetailsSchema) ?? [];
  assert.equal(details?.error, ErrorDetails_Error.USER_ABORTED_REQUEST);
  assert.equal(details?.details?.isRetryable, false);
});

test("canceled with no tool running sends no abort", () => {
  const end = toTurnEnd(turnState(), { type: "canceled", reason: "x" }, { at: T0 });
  assert.deepEqual(kinds(end.messages), ["conversationCheckpointUpdate", "turnEnded"]);
});

test("a stream that comes to a failed turn late gets its error, never marked retryable", () => {
  const late = toEndedTurnError({
    type: "failed",
    message: "429 Too Many Requests",
    provider: "openai",
  });
  assert.equal(late?.code, Code.Unavailable);
  const [details] = late?.findDetails(ErrorDetailsSchema) ?? [];
  assert.equal(details?.error, ErrorDetails_Error.PROVIDER_ERROR);
  assert.match(details?.details?.detail ?? "", /429/);
  assert.equal(details?.details?.isRetryable, false);
  assert.equal(toEndedTurnError({ type: "final" }), null);
});
