/**
 * Why a model call failed, for model routing (loop/model-route.ts) and model health
 * (model-health.ts), from what the call saw: the HTTP status of its last send attempt, a
 * connection failure, or an error the provider streamed after answering 200 (Anthropic's
 * `overloaded_error`, a rate-limit error event).
 *
 * `cooling_down` is our own refusal (model-health.ts), recognised by its message prefix.
 */
import type { FailureKind, RequestAttempt } from "./types.ts";

/** The start of the error message of a call refused because its model is cooling down. */
export const COOLING_DOWN_PREFIX = "cooling down:";

export function toFailureKind(
  attempts: readonly RequestAttempt[],
  errorMessage: string | undefined,
): FailureKind {
  const message = errorMessage ?? "";
  if (message.startsWith(COOLING_DOWN_PREFIX)) return "cooling_down";
  const last = attempts.at(-1);
  const status = last?.status;
  if (status === 429) return "rate_limited";
  if (status === 529 || status === 503) return "overloaded";
  if (status !== undefined && status >= 500 && status <= 599) return "server_error";
  if (last !== undefined && status === undefined && last.error !== undefined) return "connection";
  // Streamed after a 200: the provider's own words.
  if (/overloaded/i.test(message)) return "overloaded";
  if (/rate.?limit|too many requests|resource.?exhausted/i.test(message)) return "rate_limited";
  return "other";
}
