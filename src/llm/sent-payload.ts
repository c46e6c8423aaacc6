/**
 * The provider body of one call, let go once its bytes were taken (issue #19, heap per open
 * stream).
 *
 * pi-ai builds the body as objects (`onPayload` sees it) and keeps it for as long as the call
 * streams, though the SDK serialises it once, before the request is sent. That body is a
 * converted copy of the whole conversation: new message and block objects, and for the OpenAI
 * APIs every tool call's arguments as a new JSON string. In a long agent conversation each open
 * stream held another copy of its history (measured, OpenAI: 40 tool-call rounds of ≈ 4 KB each,
 * +83 KiB per call in flight). Nothing sends it again (a second request of a call is refused,
 * exact-fetch.ts), so once the exact fetch has taken the body's bytes it is emptied:
 *
 * - Chat Completions and Responses (the OpenAI SDK): pi-ai keeps the value `onPayload` returns
 *   and uses it only to send it. That value is always our own object (a shallow copy when nothing
 *   else made one), and its members are set to undefined.
 * - Anthropic Messages: pi-ai sends, and keeps, a shallow copy of the value `onPayload` returns
 *   (with `stream: true`), and its own body (the one `onPayload` was given) stays reachable too
 *   (a finished loop's variable, held by its suspended function). Neither is read after the send:
 *   pi-ai reads the sent body again only to continue a message thread, which our calls never do
 *   (`disableContinuation`; docs: src/llm/README.md, pi-ai behaviour table). So the message lists
 *   of both are emptied in place (that empties the copy's too, which shares ours), and pi-ai's
 *   body's members are set to undefined. The tool list is left alone: it may be the one list
 *   shared by every call (shared-tools.ts).
 * - Gemini: pi-ai keeps the value `onPayload` returns and uses it only to send it; the Google SDK
 *   sends a converted copy and keeps a shallow copy of it (the same `contents` list) while the
 *   response streams, reading it again only for automatic function calling, which needs tools
 *   that are functions (ours are declarations: the SDK turns it off) or automatic continuation
 *   (pi-ai turns it off). So the `contents` lists are emptied in place; the rest is left as it
 *   is (the SDK's copy may be the very object pi-ai handed it).
 *
 * What pi-ai 1.6.0 and its SDKs do with the body was checked for each API (the pi-ai behaviour
 * table in src/llm/README.md); pi-ai is pinned to that version.
 */
import type { ApiKind } from "./config.ts";

export interface SentPayload {
  /**
   * What `onPayload` returns for pi-ai's `built` body, given the body to send (`built` or a
   * replacement): for the OpenAI APIs our own object, never pi-ai's.
   */
  adopt(built: unknown, toSend: unknown): unknown;
  /** Empties what `adopt` saw (once its bytes were taken). */
  release(): void;
}

export function createSentPayload(api: ApiKind): SentPayload {
  switch (api) {
    case "openai-chat":
    case "openai-compatible":
    case "openai-responses":
      return createOwnCopy();
    case "anthropic":
      return createEmptiedInPlace("messages", true);
    case "gemini":
      return createEmptiedInPlace("contents", false);
  }
}

/** The OpenAI APIs: pi-ai keeps what `onPayload` returns, so that is our own copy, emptied. */
function createOwnCopy(): SentPayload {
  let adopted: Record<string, unknown> | undefined;
  return {
    adopt(built, toSend) {
      if (!isRecord(toSend)) return toSend;
      adopted = toSend === built ? { ...toSend } : toSend;
      return adopted;
    },
    release() {
      if (adopted === undefined) return;
      clearMembers(adopted);
      adopted = undefined;
    },
  };
}

/**
 * Anthropic and Gemini (see the module comment): the bodies' `list` (their messages) emptied in
 * place, and with `clearBuilt` pi-ai's own body's members set to undefined.
 */
function createEmptiedInPlace(list: "messages" | "contents", clearBuilt: boolean): SentPayload {
  let built: Record<string, unknown> | undefined;
  let sent: Record<string, unknown> | undefined;
  return {
    adopt(builtBody, toSend) {
      if (isRecord(builtBody)) built = builtBody;
      if (isRecord(toSend)) sent = toSend;
      return toSend;
    },
    release() {
      for (const body of [sent, built]) {
        const messages = body?.[list];
        if (Array.isArray(messages)) messages.length = 0;
      }
      if (clearBuilt && built !== undefined) clearMembers(built);
      built = undefined;
      sent = undefined;
    },
  };
}

/**
 * Set to undefined, not deleted: deleting turns the object into a dictionary, which for a body's
 * dozen keys keeps ≈ 0.4 KiB of empty hash table per open stream (issue #19).
 */
function clearMembers(body: Record<string, unknown>): void {
  for (const key of Object.keys(body)) body[key] = undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
