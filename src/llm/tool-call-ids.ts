/**
 * Tool call ids that the model of a call accepts, for history another model (or the client's
 * checkpoint, `api: "cursor-checkpoint"`) produced: docs/protocol.md "Rewinds" (imports) and
 * README.md "Tool calls another model made".
 *
 * pi-ai keeps the ids of the call's own model verbatim and normalises the others per API
 * (Anthropic: `[a-zA-Z0-9_-]`, 64 characters; OpenAI: 40; Responses: `call_id|item_id`), but it
 * never makes them unique: two calls whose ids normalise alike (`read.0` and `read:0`, a long
 * prefix cut at the same length) or that were alike to begin with (Kimi's `functions.read:0`
 * and some servers' `call_0` restart with every response) reach the provider as one id, and
 * Anthropic refuses the request (`tool_use ids must be unique`), OpenAI pairs results wrongly.
 *
 * Here, before pi-ai sees the history, every tool call of a message the call's model did not
 * produce gets an id that is valid for every API we speak (`[a-zA-Z0-9_-]`, at most 40
 * characters, no trailing `_`, which pi-ai's own normalisers leave as it is) and unique in the
 * request; its results follow it. Ids that already are are kept, so a conversation with one
 * model changes nothing. Deterministic and only looking back: a call's id depends on it and on
 * the calls before it, never on later messages, so request n's messages stay a byte prefix of
 * request n+1's (docs/design.md §9).
 */
import type { Api, Model } from "@earendil-works/pi-ai";
import type { AssistantMessage, Message, RequestMessages, ToolCall } from "./types.ts";

/** The longest id we make: OpenAI's limit on Chat Completions tool call ids. */
export const MAX_TOOL_CALL_ID = 40;

const SAFE = /^[a-zA-Z0-9_-]*[a-zA-Z0-9-]$/;

/** `request`, or a copy whose foreign tool call ids (and their results' ids) are rewritten. */
export function withWireToolCallIds(
  model: Pick<Model<Api>, "api" | "provider" | "id">,
  request: RequestMessages,
): RequestMessages {
  const messages = request.messages;
  // The common case, one model all along: nothing to do, nothing allocated.
  if (!messages.some((message) => message.role === "assistant" && !isOwn(model, message))) {
    return request;
  }
  const used = new Set<string>();
  const repeats = new Map<string, number>();
  /** The ids of the latest assistant message whose calls were renamed: original → sent. */
  let renamed: Map<string, string> | null = null;
  let out: Message[] | null = null;
  for (let index = 0; index < messages.length; index += 1) {
    const message = messages[index] as Message;
    let next: Message = message;
    if (message.role === "assistant") {
      renamed = null;
      const own = isOwn(model, message);
      let content: AssistantMessage["content"] | null = null;
      for (let block = 0; block < message.content.length; block += 1) {
        const call = message.content[block] as AssistantMessage["content"][number];
        if (call.type !== "toolCall") continue;
        const id = own ? call.id : toWireId(call.id, used, repeats);
        used.add(id);
        if (id === call.id) continue;
        renamed ??= new Map();
        renamed.set(call.id, id);
        content ??= [...message.content];
        content[block] = { ...call, id } satisfies ToolCall;
      }
      if (content !== null) next = { ...message, content };
    } else if (message.role === "toolResult" && renamed !== null) {
      const id = renamed.get(message.toolCallId);
      if (id !== undefined) next = { ...message, toolCallId: id };
    }
    if (next !== message) {
      out ??= messages.slice(0, index);
      out.push(next);
    } else if (out !== null) {
      out.push(message);
    }
  }
  return out === null ? request : { ...request, messages: out };
}

/** Whether the call's model made `message` (pi-ai's test for keeping it verbatim). */
function isOwn(
  model: Pick<Model<Api>, "api" | "provider" | "id">,
  message: AssistantMessage,
): boolean {
  return (
    message.provider === model.provider && message.api === model.api && message.model === model.id
  );
}

/**
 * `id` when it is safe and unused; else its safe form (of the call id alone for a Responses
 * `call_id|item_id`: `[^a-zA-Z0-9_-]` → `_`, no trailing `_`), and when that is taken or too
 * long, a prefix of it with a hash of `id` and, when that is taken too, the next free count.
 */
function toWireId(id: string, used: ReadonlySet<string>, repeats: Map<string, number>): string {
  if (id.length <= MAX_TOOL_CALL_ID && SAFE.test(id) && !used.has(id)) return id;
  // OpenAI Responses ids are `call_id|item_id` (pi-ai): the call id is the call's name.
  const pipe = id.indexOf("|");
  const safe = toSafe(pipe > 0 ? id.slice(0, pipe) : id);
  if (safe !== "" && safe.length <= MAX_TOOL_CALL_ID && !used.has(safe)) return safe;
  const hash = fnv1a(id);
  // 24 + "_" + 8 leaves room for "_" and a count of up to six digits.
  const prefix = (safe === "" ? "call" : safe).slice(0, 24).replace(/_+$/, "") || "call";
  const base = `${prefix}_${hash}`;
  // The smallest free count; those below where the last search ended are taken already.
  for (let repeat = repeats.get(base) ?? 0; ; repeat += 1) {
    const candidate = repeat === 0 ? base : `${base}_${repeat}`;
    if (!used.has(candidate)) {
      repeats.set(base, repeat + 1);
      return candidate;
    }
  }
}

function toSafe(id: string): string {
  return id.replace(/[^a-zA-Z0-9_-]/g, "_").replace(/_+$/, "");
}

/**
 * FNV-1a (32 bits) of the id's UTF-16 units as 8 hex digits: a stable tag that keeps two long
 * ids with one prefix apart. Not for security; equal tags are told apart by the count.
 */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, "0");
}
