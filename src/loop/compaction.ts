/**
 * Compaction decisions (docs/compaction.md): what a request sends once the history has been
 * summarised, when to summarise, and where the verbatim tail starts. Pure functions of state.
 *
 * The history is never edited: a compaction is an appended record `{ summary, upTo }` and a
 * request after it is `system + tools + [summary] + messages[upTo ..]`. Between two compactions
 * every request therefore extends the previous one byte for byte, so the provider's prompt cache
 * is broken once per compaction and stays warm otherwise.
 */
import type { Message, Tool, UserMessage } from "../llm/types.ts";
import type {
  Compaction,
  CompactionSettings,
  ConversationState,
  Elision,
  TurnSettings,
} from "./types.ts";

/** The text that introduces the summary in requests after a compaction. */
export const SUMMARY_PREFIX =
  "The earlier part of this conversation was summarised to fit the model's context window. " +
  "Summary:\n\n";

/** Used for a compaction the client asks for when the model has no compaction settings. */
export const DEFAULT_COMPACTION: Omit<CompactionSettings, "summaryModel"> = {
  auto: false,
  contextWindow: 128_000,
  outputReserve: 16_000,
  threshold: 0.8,
  tailMessages: 6,
  charsPerToken: 4,
};

/** Rough token cost of an image block, whatever its size (providers bill 85–1600). */
const IMAGE_TOKENS = 1_200;

export function compactionsOf(state: ConversationState): readonly Compaction[] {
  return state.compactions ?? [];
}

export function lastCompaction(state: ConversationState): Compaction | null {
  const all = compactionsOf(state);
  return all[all.length - 1] ?? null;
}

/** The settings of a compaction for `settings`, explicit or default. */
export function compactionSettingsOf(settings: TurnSettings): CompactionSettings {
  return settings.compaction ?? { ...DEFAULT_COMPACTION, summaryModel: settings.model };
}

/**
 * The messages a request sends: the whole history, or after a compaction the summary followed by
 * the messages from its `upTo`. When the first verbatim message is a user message the summary
 * becomes its leading text block, so user and assistant turns still alternate.
 */
export function toRequestMessages(state: ConversationState): Message[] {
  const compaction = lastCompaction(state);
  const from = compaction?.upTo ?? 0;
  const elidedUpTo = activeElision(state)?.upTo ?? 0;
  const tail = state.messages
    .slice(from)
    .map((message, i) => (from + i < elidedUpTo ? toElided(message) : message));
  if (compaction === null) return tail;
  const summary = { type: "text" as const, text: `${SUMMARY_PREFIX}${compaction.summary}` };
  const first = tail[0];
  if (first?.role === "user") {
    const content =
      typeof first.content === "string"
        ? [{ type: "text" as const, text: first.content }]
        : first.content;
    const merged: UserMessage = { ...first, content: [summary, ...content] };
    return [merged, ...tail.slice(1)];
  }
  const summaryMessage: UserMessage = {
    role: "user",
    content: [summary],
    timestamp: compaction.at,
  };
  return [summaryMessage, ...tail];
}

/** Tool results longer than this are elided at a compaction point (characters of text). */
export const ELIDE_MIN_CHARS = 1_000;

/** The elision record in force: the last one, if no summary compaction came after it. */
export function activeElision(state: ConversationState): Elision | null {
  const last = state.elisions?.at(-1);
  return last !== undefined && last.afterCompactions === compactionsOf(state).length ? last : null;
}

/** A tool result with its large text replaced by a note; other messages unchanged. */
function toElided(message: Message): Message {
  if (message.role !== "toolResult") return message;
  const chars = messageChars(message) - message.toolName.length;
  if (chars <= ELIDE_MIN_CHARS) return message;
  const note =
    `[The output of ${message.toolName} (${chars} characters) is no longer shown, to fit the ` +
    "context window. Run the tool again if you need it.]";
  return { ...message, content: [{ type: "text", text: note }] };
}

// ---------------------------------------------------------------------------------------------
// The estimate
// ---------------------------------------------------------------------------------------------

/** Characters of a message as a provider would see them (text, thinking, tool calls, results). */
export function messageChars(message: Message): number {
  if (typeof message.content === "string") return message.content.length;
  let chars = 0;
  for (const block of message.content) {
    switch (block.type) {
      case "text":
        chars += block.text.length;
        break;
      case "thinking":
        chars += block.thinking.length;
        break;
      case "toolCall":
        chars += block.name.length + JSON.stringify(block.arguments).length;
        break;
      case "image":
        chars += IMAGE_TOKENS * 4;
        break;
    }
  }
  return chars + (message.role === "toolResult" ? message.toolName.length : 0);
}

/** Tokenizer-free estimate of `messages`, with a small per-message overhead. */
export function estimateMessages(messages: readonly Message[], charsPerToken: number): number {
  let tokens = 0;
  for (const message of messages) tokens += Math.ceil(messageChars(message) / charsPerToken) + 4;
  return tokens;
}

/** Tokens of a usage report: everything the request held plus what the response added. */
function usageTokens(message: Message): number {
  if (message.role !== "assistant") return 0;
  const { input, output, cacheRead, cacheWrite } = message.usage;
  return input + output + cacheRead + cacheWrite;
}

/**
 * The estimated input of the next request: the usage the provider last reported for a request
 * built like the next one (it counted system, tools and everything before it), plus the estimate
 * of what was appended since. Reports from before the last compaction counted the uncompacted
 * request and are not used. Without a usable report, the whole request is estimated.
 */
export function estimateNextRequest(
  state: ConversationState,
  settings: CompactionSettings,
): number {
  const window = toRequestMessages(state);
  const last = lastCompaction(state);
  const from = Math.max(
    last?.upTo ?? 0,
    last?.historyLength ?? 0,
    activeElision(state)?.historyLength ?? 0,
  );
  const offset = state.messages.length - window.length;
  for (let index = state.messages.length - 1; index >= from; index -= 1) {
    const message = state.messages[index] as Message;
    const reported = usageTokens(message);
    if (reported > 0) {
      return reported + estimateMessages(window.slice(index + 1 - offset), settings.charsPerToken);
    }
  }
  const fixed = toFixedChars(state.settings);
  return (
    Math.ceil(fixed / settings.charsPerToken) + estimateMessages(window, settings.charsPerToken)
  );
}

/** Characters of the system prompt and tool definitions (as `JSON.stringify` writes them). */
function toFixedChars(settings: TurnSettings | null): number {
  if (settings === null) return 0;
  let chars = fixedChars.get(settings);
  if (chars === undefined) {
    // The length of `JSON.stringify(settings.tools)`: brackets, commas and each tool's text.
    chars = settings.systemPrompt.length + 2 + Math.max(0, settings.tools.length - 1);
    for (const tool of settings.tools) chars += toToolChars(tool);
    fixedChars.set(settings, chars);
  }
  return chars;
}

/** The length of `JSON.stringify(tool)` as an array member. */
function toToolChars(tool: Tool): number {
  if (typeof tool !== "object" || tool === null) return (JSON.stringify(tool) ?? "null").length;
  let chars = toolChars.get(tool);
  if (chars === undefined) {
    chars = (JSON.stringify(tool) ?? "null").length;
    toolChars.set(tool, chars);
  }
  return chars;
}

/**
 * `toFixedChars` by settings value and each tool's length by tool: settings are immutable and
 * shared by the states of a turn, the tool definitions by every turn, and serialising Cursor's
 * tools (about 12 KB) on every model call, then once per turn, showed in profiles (#19).
 */
const fixedChars = new WeakMap<TurnSettings, number>();
const toolChars = new WeakMap<Tool, number>();

/** The input budget a request may use before it is compacted. */
export function inputBudget(settings: CompactionSettings): number {
  return Math.max(0, settings.contextWindow - settings.outputReserve);
}

/** True when the next request should be preceded by a compaction. */
export function isOverThreshold(state: ConversationState, settings: CompactionSettings): boolean {
  return estimateNextRequest(state, settings) > settings.threshold * inputBudget(settings);
}

// ---------------------------------------------------------------------------------------------
// The cut
// ---------------------------------------------------------------------------------------------

/**
 * Where the verbatim tail starts, or null when a compaction would cover nothing new.
 *
 * The tail holds at least `tailMessages` messages, never starts with a tool result (its call
 * would be summarised away), and is moved later while it alone would take more than half the
 * input budget — down to no tail at all, when one huge message is the last one.
 */
export function chooseCut(state: ConversationState, settings: CompactionSettings): number | null {
  const messages = state.messages;
  const from = lastCompaction(state)?.upTo ?? 0;
  const fits = (cut: number) =>
    estimateMessages(messages.slice(cut), settings.charsPerToken) <= inputBudget(settings) / 2;
  let cut = Math.max(from, messages.length - settings.tailMessages);
  while (cut > from && messages[cut]?.role === "toolResult") cut -= 1;
  while (cut < messages.length && (!fits(cut) || messages[cut]?.role === "toolResult")) cut += 1;
  return cut > from ? cut : null;
}

/**
 * The cheaper step first: the state with an elision at `cut` (or earlier: never a tool result the
 * model has not answered yet), when no longer re-sending the large tool results before it brings
 * the estimate under half the threshold (so it is not needed again soon); null when it would not,
 * or when it would elide nothing new.
 */
export function tryElision(
  state: ConversationState,
  settings: CompactionSettings,
  cut: number,
): ConversationState | null {
  // Only what the model has already read: nothing after its last answer.
  let lastAnswer = state.messages.length - 1;
  while (lastAnswer >= 0 && state.messages[lastAnswer]?.role !== "assistant") lastAnswer -= 1;
  const upTo = Math.min(cut, Math.max(0, lastAnswer));
  const start = Math.max(lastCompaction(state)?.upTo ?? 0, activeElision(state)?.upTo ?? 0);
  const newlyElided = state.messages
    .slice(start, Math.max(start, upTo))
    .some((message) => toElided(message) !== message);
  if (!newlyElided) return null;
  const elision: Elision = {
    upTo,
    historyLength: state.messages.length,
    afterCompactions: compactionsOf(state).length,
  };
  const elided = { ...state, elisions: [...(state.elisions ?? []), elision] };
  const limit = 0.5 * settings.threshold * inputBudget(settings);
  return estimateNextRequest(elided, settings) <= limit ? elided : null;
}
