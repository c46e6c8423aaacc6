/**
 * The one error type at the wire edge: a Connect error carrying an `aiserver.v1.ErrorDetails`
 * detail, which the client renders (title, detail) and uses to decide whether to replay the
 * request (`is_retryable`). Retryable is set only where a replay can succeed (rate limits,
 * timeouts, overload, network); a replay re-sends the same user message as a new run, so the
 * runner should recognise it by its `message_id`.
 *
 * Every failure uses Connect code `unavailable` for provider problems (peers found the client
 * handles it well; `resource_exhausted` risks the client's own usage-limit UI), `canceled` for
 * cancels, `invalid_argument` for unusable client input and `internal` for our own faults.
 * Messages pass through `redactSecrets` so provider errors that echo a key never reach the client.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorDetails_Error, ErrorDetailsSchema } from "./gen/aiserver/v1/error_details_pb.js";

export type FailureKind =
  | "rate_limited"
  | "timeout"
  | "overloaded"
  | "network"
  | "auth"
  | "bad_model"
  | "context_length"
  | "bad_request"
  | "provider"
  | "bad_input"
  | "internal"
  | "canceled";

export interface WireFailure {
  readonly kind: FailureKind;
  /** Safe to show: already redacted. */
  readonly detail: string;
}

const TITLES: Record<FailureKind, string> = {
  rate_limited: "The model provider is rate limiting requests",
  timeout: "The model provider timed out",
  overloaded: "The model provider is overloaded or unavailable",
  network: "Could not reach the model provider",
  auth: "The model provider rejected the API key",
  bad_model: "The model provider does not know this model",
  context_length: "The conversation is too long for this model",
  bad_request: "The model provider rejected the request",
  provider: "The model provider returned an error",
  bad_input: "The server could not use the client's request",
  internal: "Internal server error",
  canceled: "Canceled",
};

const RETRYABLE: ReadonlySet<FailureKind> = new Set([
  "rate_limited",
  "timeout",
  "overloaded",
  "network",
]);

export function isRetryable(kind: FailureKind): boolean {
  return RETRYABLE.has(kind);
}

/** Classifies a provider error message (pi-ai's `errorMessage`) by what a retry could change. */
export function classifyProviderError(errorMessage: string): WireFailure {
  const text = errorMessage.toLowerCase();
  const detail = redactSecrets(errorMessage).slice(0, 2000);
  const is = (pattern: RegExp) => pattern.test(text);
  let kind: FailureKind = "provider";
  if (is(/\b429\b|rate.?limit|too many requests|quota exceeded|resource.?exhausted/))
    kind = "rate_limited";
  else if (
    is(
      /\b(401|403)\b|unauthori[sz]ed|invalid.{0,20}api.?key|incorrect api key|authentication|permission denied|forbidden/,
    )
  )
    kind = "auth";
  else if (
    is(
      /context.{0,20}(length|window)|too many tokens|maximum context|prompt is too long|input is too long/,
    )
  )
    kind = "context_length";
  else if (
    is(
      /model.{0,40}(not found|does not exist|not supported|unknown)|unknown model|no such model|\b404\b/,
    )
  )
    kind = "bad_model";
  else if (is(/timed? ?out|timeout|\b408\b|etimedout|deadline/)) kind = "timeout";
  else if (is(/\b(500|502|503|504|529)\b|overloaded|unavailable|internal server error|bad gateway/))
    kind = "overloaded";
  else if (
    is(/econnreset|econnrefused|enotfound|eai_again|socket hang up|network|fetch failed|connection/)
  )
    kind = "network";
  else if (is(/\b(400|413|422)\b|bad request|invalid request|invalid_request/))
    kind = "bad_request";
  return { kind, detail };
}

export function toConnectError(failure: WireFailure): ConnectError {
  const title = TITLES[failure.kind];
  const code =
    failure.kind === "canceled"
      ? Code.Canceled
      : failure.kind === "internal"
        ? Code.Internal
        : failure.kind === "bad_input"
          ? Code.InvalidArgument
          : Code.Unavailable;
  const error =
    failure.kind === "canceled"
      ? ErrorDetails_Error.USER_ABORTED_REQUEST
      : failure.kind === "internal"
        ? ErrorDetails_Error.INTERNAL
        : failure.kind === "bad_input"
          ? ErrorDetails_Error.CUSTOM_MESSAGE
          : ErrorDetails_Error.PROVIDER_ERROR;
  const detail = redactSecrets(failure.detail);
  const message = detail === "" ? title : `${title}: ${detail}`;
  return new ConnectError(message, code, undefined, [
    {
      desc: ErrorDetailsSchema,
      value: {
        error,
        details: { title, detail, isRetryable: isRetryable(failure.kind) },
        isExpected: failure.kind !== "internal",
      },
    },
  ]);
}

const SECRET_PATTERNS: readonly RegExp[] = [
  // Provider key shapes: OpenAI/Anthropic/OpenRouter/DeepSeek `sk-…`, Google `AIza…`, xAI, Groq.
  /\b(sk|rk|pk)-[A-Za-z0-9_-]{8,}/g,
  /\bAIza[0-9A-Za-z_-]{20,}/g,
  /\b(xai|gsk)-[A-Za-z0-9_-]{8,}/g,
  // Authorization headers and key=value pairs.
  /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi,
  /\b(api[_-]?key|access[_-]?token|secret|x-api-key|key)\s*[=:]\s*["']?[A-Za-z0-9._~+/-]{8,}/gi,
];

/** Replaces anything shaped like a credential with "[redacted]". */
export function redactSecrets(text: string): string {
  let result = text;
  for (const pattern of SECRET_PATTERNS) {
    result = result.replace(pattern, (match) => {
      const separator = /^(Bearer|Basic)\s+/i.exec(match) ?? /^[^=:]+[=:]\s*["']?/.exec(match);
      return separator !== null && /[=:\s]/.test(separator[0])
        ? `${separator[0]}[redacted]`
        : "[redacted]";
    });
  }
  return result;
}
