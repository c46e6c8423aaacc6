/**
 * The summary call's request (summary-request.ts): a transcript of exactly the messages being
 * compacted, after the previous summary; long tool outputs shortened; the whole within half the
 * smaller of the two models' input budgets; no tools.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { UserMessage } from "../llm/types.ts";
import { createConversation } from "./state.ts";
import {
  buildSummaryRequest,
  SUMMARY_SYSTEM_PROMPT,
  TRANSCRIPT_BLOCK_CHARS,
} from "./summary-request.ts";
import {
  assistantMessage,
  COMPACTING,
  CONVERSATION_ID,
  text,
  toolCall,
  toolResult,
  userMessage,
} from "./testing.ts";
import type { CompactionSettings, ConversationState } from "./types.ts";

const read = toolCall("tc-1", "read", { path: "src/parse.ts" });
const messages = [
  userMessage("fix the parser"),
  assistantMessage([text("Reading."), read]),
  toolResult(read, "y".repeat(10_000)),
  assistantMessage([text("Fixed src/parse.ts.")]),
  userMessage("now the tests"),
];
const state: ConversationState = {
  ...createConversation(CONVERSATION_ID).committed,
  settings: COMPACTING,
  messages,
};
const settings = { ...(COMPACTING.compaction as CompactionSettings), contextWindow: 100_000 };

function transcriptOf(request: ReturnType<typeof buildSummaryRequest>): string {
  const content = (request.messages[0] as UserMessage).content;
  return typeof content === "string" ? content : "";
}

test("the transcript covers the messages before the cut, tool outputs shortened", () => {
  const request = buildSummaryRequest(state, 4, settings);
  assert.equal(request.systemPrompt, SUMMARY_SYSTEM_PROMPT);
  assert.deepEqual(request.tools, []);
  const transcript = transcriptOf(request);
  assert.match(transcript, /\[user\]\nfix the parser/);
  assert.match(transcript, /\[tool call read\] \{"path":"src\/parse.ts"\}/);
  assert.match(transcript, /\[assistant\]\nFixed src\/parse.ts./);
  assert.doesNotMatch(transcript, /now the tests/, "the verbatim tail is not summarised");
  assert.match(transcript, /characters omitted/);
  assert.ok(!transcript.includes("y".repeat(TRANSCRIPT_BLOCK_CHARS)));
});

test("after a compaction: the previous summary, then only the messages after it", () => {
  const compacted: ConversationState = {
    ...state,
    compactions: [
      { callID: "c", upTo: 2, trigger: "threshold", summary: "EARLIER", at: 0, historyLength: 4 },
    ],
  };
  const transcript = transcriptOf(buildSummaryRequest(compacted, 4, settings));
  assert.match(transcript, /^Summary of the conversation before this part:\n\nEARLIER/);
  assert.doesNotMatch(transcript, /fix the parser/);
});

test("the transcript fits half of the smaller input budget", () => {
  const small = { ...settings, summaryInputBudget: 1_000 };
  const transcript = transcriptOf(buildSummaryRequest(state, 4, small));
  // 1,000 tokens × 4 characters / 2, plus the fixed framing
  assert.ok(transcript.length < 2_000 + 200, `${transcript.length} characters`);
});
