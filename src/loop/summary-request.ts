/**
 * The request of a summary call (docs/compaction.md): a system prompt that says what an agent needs
 * to continue, and one user message holding the earlier summary (if any) and a plain-text
 * transcript of the messages being compacted.
 *
 * The transcript is text, not the native messages: a request without tools must not carry tool
 * calls for some providers, and the summary model may be another provider. Large tool-result
 * bodies are shortened, and the whole transcript is kept within the summary model's budget
 * (head and end kept, the middle elided) so that a summary call after a context-length error
 * fits where the failed request did not.
 */
import type { Message, RequestMessages } from "../llm/types.ts";
import { inputBudget, lastCompaction } from "./compaction.ts";
import type { CompactionSettings, ConversationState } from "./types.ts";

export const SUMMARY_SYSTEM_PROMPT = [
  "You summarise a conversation between a user and a coding agent so that the agent can continue",
  "the work from your summary alone; the original messages will no longer be visible to it.",
  "Write a precise, factual summary in Markdown with these sections:",
  "1. Goals and constraints: what the user wants, in their terms, and every requirement,",
  "   preference or restriction they stated.",
  "2. Decisions: what was decided and why.",
  "3. Files: every file read, created or changed, with its path and what was learned or changed.",
  "4. Commands: commands run and their outcomes (pass/fail, key output).",
  "5. Errors: errors met and whether they were resolved.",
  "6. State and open to-dos: what is done, what is in progress, what remains, in order.",
  "Keep exact identifiers, paths, names and numbers. Do not invent anything. Do not address the",
  "user; output only the summary.",
].join("\n");

/** The longest tool result or tool-call argument text kept in a transcript, in characters. */
export const TRANSCRIPT_BLOCK_CHARS = 4_000;

/** The request of a summary call compacting `state.messages[from .. upTo)`. */
export function buildSummaryRequest(
  state: ConversationState,
  upTo: number,
  settings: CompactionSettings,
): RequestMessages {
  const previous = lastCompaction(state);
  const from = previous?.upTo ?? 0;
  const transcript = state.messages.slice(from, upTo).map(renderMessage).join("\n\n");
  // Half the budget for the transcript leaves room for the prompt, the summary and estimate error;
  // the budget is the smaller of this model's and the summary model's.
  const budget = Math.min(inputBudget(settings), settings.summaryInputBudget ?? Infinity);
  const maxChars = Math.floor((budget / 2) * settings.charsPerToken);
  const parts = [
    previous === null
      ? ""
      : `Summary of the conversation before this part:\n\n${previous.summary}\n\n`,
    `Transcript to summarise:\n\n${fitWithin(transcript, maxChars)}\n\n`,
    "Write the summary now.",
  ];
  return {
    systemPrompt: SUMMARY_SYSTEM_PROMPT,
    messages: [{ role: "user", content: parts.join(""), timestamp: 0 }],
    tools: [],
  };
}

function renderMessage(message: Message): string {
  switch (message.role) {
    case "user":
      return `[user]\n${
        typeof message.content === "string"
          ? message.content
          : message.content.map((b) => (b.type === "text" ? b.text : "[image]")).join("\n")
      }`;
    case "assistant":
      return `[assistant]\n${message.content
        .map((block) => {
          switch (block.type) {
            case "text":
              return block.text;
            case "thinking":
              return "";
            case "toolCall":
              return `[tool call ${block.name}] ${shorten(JSON.stringify(block.arguments))}`;
          }
          return "";
        })
        .filter((part) => part !== "")
        .join("\n")}`;
    case "toolResult":
      return `[tool result ${message.toolName}${message.isError ? ", error" : ""}]\n${shorten(
        message.content.map((b) => (b.type === "text" ? b.text : "[image]")).join("\n"),
      )}`;
  }
}

function shorten(text: string): string {
  if (text.length <= TRANSCRIPT_BLOCK_CHARS) return text;
  const keep = TRANSCRIPT_BLOCK_CHARS / 2;
  return `${text.slice(0, keep)}\n[… ${text.length - 2 * keep} characters omitted …]\n${text.slice(-keep)}`;
}

function fitWithin(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const keep = Math.max(0, Math.floor(maxChars / 2) - 40);
  return `${text.slice(0, keep)}\n[… ${text.length - 2 * keep} characters omitted …]\n${text.slice(-keep)}`;
}
