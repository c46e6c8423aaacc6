/**
 * Short texts the client asks for outside a conversation: a chat title (`NameAgent`), a
 * transcript overview (`CreateTranscriptOverview`), a commit message (`WriteGitCommitMessage`)
 * and a branch name (`WriteGitBranchName`). Pure: each
 * request becomes one small model prompt, and the model's text becomes the reply; the transport
 * makes the call. Inputs are cut to bounded sizes so the call stays small and cheap.
 */
import { create } from "@bufbuild/protobuf";
import {
  type CreateTranscriptOverviewResponse,
  CreateTranscriptOverviewResponseSchema,
  type NameAgentResponse,
  NameAgentResponseSchema,
} from "./gen/agent/v1/name_agent_pb.js";
import {
  type WriteGitBranchNameRequest,
  type WriteGitBranchNameResponse,
  WriteGitBranchNameResponseSchema,
  type WriteGitCommitMessageRequest,
  type WriteGitCommitMessageResponse,
  WriteGitCommitMessageResponseSchema,
} from "./gen/aiserver/v1/git_text_pb.js";

/** One small model call: a fixed instruction and the user's material. */
export interface HelperPrompt {
  readonly systemPrompt: string;
  readonly userText: string;
}

/** Characters of a first message shown to the title model. */
export const TITLE_INPUT_CHARS = 4_000;
/** Characters of diff shown to the commit-message and branch-name model. */
export const DIFF_INPUT_CHARS = 60_000;
const TITLE_MAX_CHARS = 60;
const TITLE_FALLBACK_WORDS = 6;
const BRANCH_MAX_CHARS = 50;

export function toTitlePrompt(userMessage: string): HelperPrompt {
  return {
    systemPrompt:
      "You name chats. Reply with a title of 2 to 6 words for the conversation that starts with " +
      "the user's message: no quotes, no trailing punctuation, no explanation.",
    userText: cut(userMessage, TITLE_INPUT_CHARS),
  };
}

/**
 * The model's title cleaned to one short line; the first words of the message when the model
 * gave nothing usable (`modelText` undefined: the call failed).
 */
export function toNameAgentResponse(
  userMessage: string,
  modelText: string | undefined,
): NameAgentResponse {
  const fromModel = modelText === undefined ? "" : toTitleLine(modelText);
  return create(NameAgentResponseSchema, {
    name: fromModel !== "" ? fromModel : toFallbackTitle(userMessage),
  });
}

/** The first words of the message, cut to a title's length. */
export function toFallbackTitle(userMessage: string): string {
  const words = userMessage.trim().split(/\s+/).filter(Boolean).slice(0, TITLE_FALLBACK_WORDS);
  const title = clip(words.join(" "), TITLE_MAX_CHARS);
  return title === "" ? "New chat" : title;
}

/** Characters of a transcript shown to the overview model. */
export const TRANSCRIPT_INPUT_CHARS = 60_000;

export function toOverviewPrompt(formattedConversation: string): HelperPrompt {
  return {
    systemPrompt:
      "You summarize coding-agent conversations. Reply with two to four sentences: what the user " +
      "wanted, what was done, and what is still open. Plain text, no headings, no lists.",
    userText: cut(formattedConversation, TRANSCRIPT_INPUT_CHARS),
  };
}

export function toOverviewResponse(modelText: string): CreateTranscriptOverviewResponse {
  return create(CreateTranscriptOverviewResponseSchema, {
    overview: stripFence(modelText).trim(),
  });
}

export function toCommitMessagePrompt(request: WriteGitCommitMessageRequest): HelperPrompt {
  const parts = [`Changes (unified diff):\n${cut(request.diffs.join("\n"), DIFF_INPUT_CHARS)}`];
  const previous = request.previousCommitMessages.slice(0, 10);
  if (previous.length > 0) {
    parts.push(
      `Recent commit messages of this repository, newest first:\n${previous.join("\n---\n")}`,
    );
  }
  const context = request.explicitContext?.context.trim() ?? "";
  if (context !== "") parts.push(`Instructions from the user:\n${cut(context, 4_000)}`);
  return {
    systemPrompt:
      "You write git commit messages. Reply with only the commit message for the changes: a " +
      "summary line of at most 72 characters, then, if the change needs it, a blank line and a " +
      "short body. Follow the style of the repository's recent messages when they are given. " +
      "No code fences, no quotes, no explanation.",
    userText: parts.join("\n\n"),
  };
}

export function toCommitMessageResponse(modelText: string): WriteGitCommitMessageResponse {
  return create(WriteGitCommitMessageResponseSchema, {
    commitMessage: stripFence(modelText).trim(),
  });
}

export function toBranchNamePrompt(request: WriteGitBranchNameRequest): HelperPrompt {
  const parts = [`Changes (unified diff):\n${cut(request.diffs, DIFF_INPUT_CHARS)}`];
  const context = request.context?.trim() ?? "";
  if (context !== "") parts.push(`What the work is about:\n${cut(context, 4_000)}`);
  return {
    systemPrompt:
      "You name git branches. Reply with one branch name for the work: lower-case words joined " +
      "by hyphens, at most 5 words, optionally prefixed by a type such as feat/ or fix/. " +
      "Nothing else.",
    userText: parts.join("\n\n"),
  };
}

/** A valid git branch name from the model's text, or `undefined` when nothing usable is left. */
export function toBranchName(modelText: string): string | undefined {
  const line = stripFence(modelText).trim().split("\n")[0] ?? "";
  const name = line
    .toLowerCase()
    .replace(/[`'"]/g, "")
    .replace(/[^a-z0-9/._-]+/g, "-")
    .replace(/\/{2,}/g, "/")
    .replace(/\.{2,}/g, ".")
    .replace(/-{2,}/g, "-")
    .replace(/^[-/.]+|[-/.]+$/g, "")
    .replace(/\.lock$/, "");
  const clipped = name.slice(0, BRANCH_MAX_CHARS).replace(/[-/.]+$/g, "");
  return clipped === "" ? undefined : clipped;
}

export function toBranchNameResponse(branchName: string): WriteGitBranchNameResponse {
  return create(WriteGitBranchNameResponseSchema, { branchName });
}

function toTitleLine(text: string): string {
  const line = stripFence(text).trim().split("\n")[0] ?? "";
  const cleaned = line
    .replace(/^(title|name)\s*:\s*/i, "")
    .replace(/^["'`*#\s]+|["'`*\s]+$/g, "")
    .replace(/[.!]+$/, "")
    .trim();
  return clip(cleaned, TITLE_MAX_CHARS);
}

function stripFence(text: string): string {
  const match = /^\s*```[^\n]*\n([\s\S]*?)\n?```\s*$/.exec(text);
  return match?.[1] ?? text;
}

/** Cuts long input in the middle, saying how much was left out. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const half = Math.floor(max / 2);
  return `${text.slice(0, half)}\n[… ${text.length - 2 * half} characters left out …]\n${text.slice(-half)}`;
}

/** Shortens to `max` characters at a word boundary, with an ellipsis. */
function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cutAt = text.lastIndexOf(" ", max - 1);
  return `${text.slice(0, cutAt > max / 2 ? cutAt : max - 1).trimEnd()}…`;
}
