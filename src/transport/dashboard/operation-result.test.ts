import assert from "node:assert/strict";
import { test } from "node:test";
import type { OperationView } from "../../store/index.ts";
import { SHOWN_RESULT_CHARACTERS, toShortOperation } from "./operation-result.ts";

const operation = (content: unknown[]): OperationView => ({
  operationID: "op-1",
  turnID: "t1",
  toolCallID: "call_1",
  request: { name: "read", arguments: { path: "big.log" } },
  status: "completed",
  result: { role: "toolResult", toolCallId: "call_1", toolName: "read", content, isError: false },
  createdAt: 1,
  updatedAt: 2,
});

test("a long result is sent cut to what the page shows, and says so", () => {
  const long = operation([
    { type: "text", text: "a".repeat(1_500) },
    { type: "text", text: "b".repeat(100_000) },
    { type: "image", mimeType: "image/png", data: "x".repeat(50_000) },
  ]);
  const short = toShortOperation(long);
  assert.equal(short.resultShortened, true);
  const content = (short.result as { content: { text?: string; data?: string }[] }).content;
  assert.equal(content.map((block) => block.text ?? "").join("").length, SHOWN_RESULT_CHARACTERS);
  assert.equal(content[2]?.data, undefined);
  assert.ok(JSON.stringify(short).length < 3_000);
  assert.equal((long.result as { content: { text: string }[] }).content[1]?.text.length, 100_000);
});

test("a result that fits, or no result yet, is sent as it is", () => {
  const small = operation([{ type: "text", text: "ok" }]);
  assert.equal(toShortOperation(small), small);
  const pending = { ...small, status: "sent" as const, result: null };
  assert.equal(toShortOperation(pending), pending);
});
