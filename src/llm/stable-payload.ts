/**
 * Keeps the message part of a provider body byte-stable across the calls of a conversation
 * (docs/design.md §9), where pi-ai's serialisation alone does not.
 *
 * Anthropic-style cache breakpoints sit on the last message. To attach one to a message whose
 * content is a plain string, pi-ai rewrites that content as a one-block array; in the next
 * request the same message has no breakpoint and goes out as a string again. The tokens are the
 * same, but the bytes of an earlier message change, so "request n is a prefix of request n+1"
 * fails at the body level. We send such contents as one-block arrays in every request instead:
 * equivalent for the API, and identical bytes whether or not a breakpoint is attached.
 *
 * Applies to Anthropic Messages, and to Chat Completions bodies that carry Anthropic-style
 * `cache_control` markers (OpenRouter's Anthropic models). Other bodies are returned unchanged.
 */
import type { Api } from "@earendil-works/pi-ai";

type JsonRecord = Record<string, unknown>;

/** The payload to send instead of `payload`, or `undefined` to send it unchanged. */
export function toStablePayload(api: Api, payload: unknown): unknown {
  if (!isRecord(payload) || !Array.isArray(payload.messages)) return undefined;
  if (api === "anthropic-messages") {
    return { ...payload, messages: payload.messages.map((m) => toBlockContent(m, ["user"])) };
  }
  if (api === "openai-completions" && hasCacheControl(payload)) {
    const roles = ["user", "assistant", "tool"];
    return { ...payload, messages: payload.messages.map((m) => toBlockContent(m, roles)) };
  }
  return undefined;
}

function toBlockContent(message: unknown, roles: readonly string[]): unknown {
  if (!isRecord(message) || typeof message.role !== "string" || !roles.includes(message.role)) {
    return message;
  }
  const content = message.content;
  if (typeof content !== "string" || content.length === 0) return message;
  return { ...message, content: [{ type: "text", text: content }] };
}

/**
 * Whether a message or tool of the payload carries `cache_control`: a member of that name, or the
 * string "cache_control" (what finding `"cache_control"` in their JSON text matched), found by
 * walking the values instead of serialising them (issue #19: ≈60 µs per request with Cursor's
 * tools). Members `JSON.stringify` leaves out (undefined, functions, symbols) do not count.
 */
function hasCacheControl(payload: JsonRecord): boolean {
  for (const list of [payload.messages, payload.tools]) {
    if (Array.isArray(list) && list.some(mentionsCacheControl)) return true;
  }
  return false;
}

function mentionsCacheControl(value: unknown): boolean {
  if (typeof value === "string") return value === CACHE_CONTROL;
  if (typeof value !== "object" || value === null) return false;
  if (Array.isArray(value)) return value.some(mentionsCacheControl);
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const member: unknown = (value as JsonRecord)[key];
    if (member === undefined || typeof member === "function" || typeof member === "symbol") {
      continue;
    }
    if (key === CACHE_CONTROL || mentionsCacheControl(member)) return true;
  }
  return false;
}

const CACHE_CONTROL = "cache_control";

function isRecord(value: unknown): value is JsonRecord {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
