/**
 * Turns every API accepts, for the few histories that hold a turn with nothing to send
 * (README.md "Empty messages and turns without a reply").
 *
 * History is append-only and sent as it is (docs/design.md §9); two things in it are refused by
 * some providers on every later request of the conversation, so the request gets a stand-in:
 *
 * - **Blank text**: a user message or tool result with no image and no text but white space (a
 *   message of spaces or line breaks from the client, a tool that printed nothing). pi-ai drops
 *   such a user message for Anthropic (which refuses blank text), so the request ends with an
 *   assistant message (refused with thinking on, and by Claude 4.6 and later as a prefill) or
 *   holds no message at all; Gemini refuses an empty text part (`empty text parameter`);
 *   Anthropic refuses an error result with empty content. Such a message goes out as
 *   `EMPTY_USER_TEXT` (a result as `EMPTY_TOOL_RESULT_TEXT`), for every API; blank text blocks
 *   beside other content are left out.
 * - **A user message that follows another one with no reply between them**: a turn that failed
 *   or was canceled before the model finished its answer appends nothing (src/loop/README.md
 *   L14, L15, L20, L43, L46), a turn cut off after tool results ends with them (L12, L26), and
 *   pi-ai leaves out an assistant message with nothing it can send (only white space, another
 *   model's thinking).
 *   OpenAI, Anthropic (which joins the two) and Gemini accept that; chat templates that insist
 *   on alternating roles (Mistral's and Gemma's on vLLM or llama.cpp: "conversation roles must
 *   alternate user/assistant/user/assistant/...") refuse it. For OpenAI-compatible endpoints
 *   only, an assistant message `NO_REPLY_TEXT` goes in before the second user message.
 *
 * Both depend only on the message concerned and the ones before it, and insert nothing after
 * the last message, so request n stays a byte prefix of request n+1 (nothing earlier is
 * rewritten). A conversation without such turns is sent exactly as before: the same objects.
 */
import type { ApiKind } from "./config.ts";
import type { ImageContent, Message, RequestMessages, TextContent } from "./types.ts";

/** What a user message with nothing to send goes out as. */
export const EMPTY_USER_TEXT = "(empty message)";

/** What a tool result with nothing to send goes out as (pi-ai's own text on Chat Completions). */
export const EMPTY_TOOL_RESULT_TEXT = "(no tool output)";

/** The assistant message between two user messages that had no reply between them. */
export const NO_REPLY_TEXT = "(no reply: the turn ended before an answer)";

/** pi-ai's user message carrying a tool result's images on Chat Completions (part of the results). */
const TOOL_IMAGES_TEXT = "Attached image(s) from tool result:";

const NON_SPACE = /\S/;

type Block = TextContent | ImageContent;

/**
 * `request`, or a copy in which user messages and tool results carry no blank text block: one
 * with nothing else goes out as `EMPTY_USER_TEXT` (`EMPTY_TOOL_RESULT_TEXT`), and from one with
 * an image or other text the blank blocks are left out.
 */
export function withSendableMessages(request: RequestMessages): RequestMessages {
  const messages = request.messages;
  let out: Message[] | null = null;
  for (let index = 0; index < messages.length; index += 1) {
    const message = messages[index] as Message;
    const next = toSendable(message);
    if (next !== message) {
      out ??= messages.slice(0, index);
      out.push(next);
    } else if (out !== null) {
      out.push(message);
    }
  }
  return out === null ? request : { ...request, messages: out };
}

function toSendable(message: Message): Message {
  switch (message.role) {
    case "user": {
      const content = message.content;
      if (typeof content === "string") {
        return NON_SPACE.test(content) ? message : { ...message, content: EMPTY_USER_TEXT };
      }
      if (!content.some(isBlank)) return message;
      const kept = content.filter((block) => !isBlank(block));
      return { ...message, content: kept.length === 0 ? EMPTY_USER_TEXT : kept };
    }
    case "toolResult": {
      const content = message.content;
      if (content.length > 0 && !content.some(isBlank)) return message;
      const kept = content.filter((block) => !isBlank(block));
      return {
        ...message,
        content: kept.length === 0 ? [{ type: "text", text: EMPTY_TOOL_RESULT_TEXT }] : kept,
      };
    }
    default:
      return message;
  }
}

/** A text block of white space only. */
function isBlank(block: Block): boolean {
  return block.type === "text" && !NON_SPACE.test(block.text);
}

type JsonRecord = Record<string, unknown>;

/**
 * The Chat Completions `payload` of an OpenAI-compatible endpoint with `NO_REPLY_TEXT` before
 * each user message that follows another user message with no reply between them; the payload
 * itself when there is none (or for another API). What counts is what the strictest templates
 * check: the roles of the messages left once tool results and assistant messages with tool
 * calls are set aside must alternate, starting with a user message.
 */
export function withAlternatingRoles(api: ApiKind, payload: unknown): unknown {
  if (api !== "openai-compatible") return payload;
  if (!isRecord(payload) || !Array.isArray(payload.messages)) return payload;
  const messages: readonly unknown[] = payload.messages;
  let out: unknown[] | null = null;
  /** Whether a user message came after the last assistant reply (one without tool calls). */
  let awaitingReply = false;
  for (let index = 0; index < messages.length; index += 1) {
    const message = messages[index];
    const role = isRecord(message) ? message.role : undefined;
    if (role === "user" && !isToolImages(message as JsonRecord, messages[index - 1])) {
      if (awaitingReply) {
        out ??= messages.slice(0, index);
        out.push({ role: "assistant", content: NO_REPLY_TEXT });
      }
      awaitingReply = true;
    } else if (role === "assistant" && !hasToolCalls(message as JsonRecord)) {
      awaitingReply = false;
    }
    if (out !== null) out.push(message);
  }
  return out === null ? payload : { ...payload, messages: out };
}

function hasToolCalls(message: JsonRecord): boolean {
  return Array.isArray(message.tool_calls) && message.tool_calls.length > 0;
}

/** Whether `message` is pi-ai's carrier of tool result images, right after the results. */
function isToolImages(message: JsonRecord, previous: unknown): boolean {
  if (!isRecord(previous) || previous.role !== "tool" || !Array.isArray(message.content)) {
    return false;
  }
  const first: unknown = message.content[0];
  return isRecord(first) && first.type === "text" && first.text === TOOL_IMAGES_TEXT;
}

function isRecord(value: unknown): value is JsonRecord {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
