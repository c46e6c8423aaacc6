/**
 * The provider body of one call, let go once its bytes were taken (issue #19, heap per open
 * stream).
 *
 * pi-ai builds the body as objects (`onPayload` sees it) and keeps the value `onPayload` returns
 * for as long as the call streams, though the SDK serialises it once, before the request is sent.
 * That body is a converted copy of the whole conversation: new message objects, and every tool
 * call's arguments as a new JSON string. In a long agent conversation each open stream held
 * another copy of its history (measured: 40 tool-call rounds of ≈ 4 KB each, +83 KiB per call in
 * flight). Here the value handed back to pi-ai is always our own object (a shallow copy when
 * nothing else made one), and it is emptied when the exact fetch has taken the body: nothing
 * sends it again (a second request of a call is refused, exact-fetch.ts), and nothing reads it
 * after sending.
 *
 * Only for the APIs where that was checked in pi-ai 1.6.0 and the SDK it calls (src/llm/README.md,
 * pi-ai behaviour table): Chat Completions and Responses through the OpenAI SDK use the body only
 * to send it. Not for Anthropic (pi-ai keeps a copy of its own, and reads it after the stream)
 * nor Gemini (the Google SDK's automatic function calling reads the request again).
 */
import type { ApiKind } from "./config.ts";

const RELEASED: ReadonlySet<ApiKind> = new Set([
  "openai-chat",
  "openai-compatible",
  "openai-responses",
]);

export interface SentPayload {
  /**
   * What `onPayload` returns for pi-ai's `built` body, given the body to send (`built` or a
   * replacement): for a released API our own object, never pi-ai's.
   */
  adopt(built: unknown, toSend: unknown): unknown;
  /** Empties the adopted body (once its bytes were taken). */
  release(): void;
}

export function createSentPayload(api: ApiKind): SentPayload {
  let adopted: Record<string, unknown> | undefined;
  return {
    adopt(built, toSend) {
      if (!RELEASED.has(api) || !isRecord(toSend)) return toSend;
      adopted = toSend === built ? { ...toSend } : toSend;
      return adopted;
    },
    release() {
      if (adopted === undefined) return;
      // Set to undefined, not deleted: deleting turns the object into a dictionary, which for a
      // body's dozen keys keeps ≈ 0.4 KiB of empty hash table per open stream (issue #19).
      for (const key of Object.keys(adopted)) adopted[key] = undefined;
      adopted = undefined;
    },
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
