/**
 * The assistant message a failed or aborted call ends with when the provider gave no content:
 * empty content, zero usage, the stop reason and the error text.
 */
import type { AssistantMessage } from "./types.ts";

export interface ErrorMessageFields {
  readonly api: string;
  readonly provider: string;
  readonly model: string;
  readonly reason: "error" | "aborted";
  readonly errorMessage: string;
  /** Epoch milliseconds. */
  readonly timestamp: number;
}

/** A new usage of nothing (a new object each time: a message's usage is its own). */
export function toZeroUsage(): AssistantMessage["usage"] {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

export function toErrorMessage(fields: ErrorMessageFields): AssistantMessage {
  return {
    role: "assistant",
    content: [],
    api: fields.api,
    provider: fields.provider,
    model: fields.model,
    usage: toZeroUsage(),
    stopReason: fields.reason,
    errorMessage: fields.errorMessage,
    timestamp: fields.timestamp,
  };
}
