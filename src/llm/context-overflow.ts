/**
 * Whether a failed call failed because its request did not fit the model's context window
 * (docs/compaction.md). The runner marks such an `error` event for the loop, which then compacts
 * once and repeats the call.
 *
 * pi-ai's classifier knows the messages of the major providers and of common OpenAI-compatible
 * servers (OpenAI, Anthropic, Gemini, vLLM, llama.cpp, LM Studio, OpenRouter, …); we add the
 * OpenAI error code, which some proxies pass through with a message of their own. Rate limits
 * are never overflows.
 */
import { isContextOverflow as isPiContextOverflow } from "@earendil-works/pi-ai";
import type { AssistantMessage } from "./types.ts";

const EXTRA_PATTERNS = [/context_length_exceeded/i];
const NOT_OVERFLOW = [/rate limit/i, /too many requests/i];

export function isContextOverflow(error: AssistantMessage): boolean {
  if (error.stopReason !== "error") return false;
  const text = error.errorMessage ?? "";
  if (NOT_OVERFLOW.some((pattern) => pattern.test(text))) return false;
  return isPiContextOverflow(error) || EXTRA_PATTERNS.some((pattern) => pattern.test(text));
}
