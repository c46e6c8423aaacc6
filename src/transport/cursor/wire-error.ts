/**
 * The one error edge (docs/wire-errors.md): every error the server sends is made here, and its
 * Connect code comes from one table, `WIRE_ERRORS`.
 *
 * Two families share the table:
 *
 * - failures of a turn or a model-backed request (`WireFailure`), which carry an
 *   `aiserver.v1.ErrorDetails` detail the client renders (title, detail) and uses to decide
 *   whether to replay the request (`is_retryable`). Retryable is set only where a replay can
 *   succeed (rate limits, timeouts, overload, network); a replay re-sends the same user message as
 *   a new run, so the runner should recognise it by its `message_id`. Provider problems use
 *   `unavailable` (peers found the client handles it well; `resource_exhausted` risks the
 *   client's own usage-limit UI). Messages pass through `redactSecrets` so provider errors that
 *   echo a key never reach the client;
 * - refusals of a request as sent (`ProtocolError`): a bare Connect code and message.
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
  | "budget"
  | "bad_input"
  | "internal"
  | "canceled";

export interface WireFailure {
  readonly kind: FailureKind;
  /** Safe to show: already redacted. */
  readonly detail: string;
}

/** A request refused as sent, or a stream ended by the server or the client. */
export type ProtocolError =
  | { readonly type: "empty_request_id" }
  | { readonly type: "request_id_too_long"; readonly max: number }
  | { readonly type: "too_many_streams"; readonly max: number }
  | { readonly type: "unknown_request_id"; readonly requestID: string }
  | { readonly type: "stream_released"; readonly requestID: string }
  | { readonly type: "no_turn"; readonly requestID: string; readonly event: string }
  | { readonly type: "turn_already_started" }
  | { readonly type: "no_model" }
  | { readonly type: "append_out_of_order"; readonly detail: string }
  | { readonly type: "saved_request_unreadable" }
  | { readonly type: "stream_closed"; readonly reason: string }
  | { readonly type: "stream_taken_over" }
  | { readonly type: "client_went_away" }
  | { readonly type: "run_stream_closed" }
  | { readonly type: "run_poll_not_served" }
  | { readonly type: "not_implemented"; readonly path: string }
  | { readonly type: "unauthenticated" }
  | { readonly type: "helper_failed"; readonly what: string; readonly reason: string }
  | { readonly type: "instance_unreachable" }
  | { readonly type: "misdirected" }
  | { readonly type: "request_id_mismatch" }
  | { readonly type: "served_elsewhere" }
  | { readonly type: "token_check_failed" }
  | { readonly type: "belongs_to_another_user"; readonly what: "agent stream" | "conversation" }
  | { readonly type: "team_token_missing"; readonly variable: string };

/** The errors that carry an ErrorDetails detail. */
type DetailedName = FailureKind | "not_supported";
export type WireErrorName = DetailedName | ProtocolError["type"];

interface Row<Details> {
  readonly code: Code;
  /** The ErrorDetails error the client sees; null: the error carries no ErrorDetails. */
  readonly details: Details;
}

const provider: Row<ErrorDetails_Error> = {
  code: Code.Unavailable,
  details: ErrorDetails_Error.PROVIDER_ERROR,
};
const bare = (code: Code): Row<null> => ({ code, details: null });

/** Every error the server sends, by name: the table of docs/wire-errors.md. */
export const WIRE_ERRORS: { readonly [Name in DetailedName]: Row<ErrorDetails_Error> } & {
  readonly [Name in ProtocolError["type"]]: Row<null>;
} = {
  rate_limited: provider,
  timeout: provider,
  overloaded: provider,
  network: provider,
  auth: provider,
  bad_model: provider,
  context_length: provider,
  bad_request: provider,
  provider,
  budget: { code: Code.FailedPrecondition, details: ErrorDetails_Error.CUSTOM_MESSAGE },
  bad_input: { code: Code.InvalidArgument, details: ErrorDetails_Error.CUSTOM_MESSAGE },
  internal: { code: Code.Internal, details: ErrorDetails_Error.INTERNAL },
  canceled: { code: Code.Canceled, details: ErrorDetails_Error.USER_ABORTED_REQUEST },
  not_supported: { code: Code.Unimplemented, details: ErrorDetails_Error.CUSTOM_MESSAGE },
  empty_request_id: bare(Code.InvalidArgument),
  request_id_too_long: bare(Code.InvalidArgument),
  too_many_streams: bare(Code.ResourceExhausted),
  unknown_request_id: bare(Code.NotFound),
  stream_released: bare(Code.NotFound),
  no_turn: bare(Code.NotFound),
  turn_already_started: bare(Code.FailedPrecondition),
  no_model: bare(Code.FailedPrecondition),
  append_out_of_order: bare(Code.FailedPrecondition),
  saved_request_unreadable: bare(Code.DataLoss),
  stream_closed: bare(Code.Canceled),
  client_went_away: bare(Code.Canceled),
  // Not `Canceled`: the turn was not canceled, it goes on on the stream that resumed it.
  stream_taken_over: bare(Code.Aborted),
  run_stream_closed: bare(Code.Canceled),
  run_poll_not_served: bare(Code.Unimplemented),
  not_implemented: bare(Code.Unimplemented),
  unauthenticated: bare(Code.Unauthenticated),
  helper_failed: bare(Code.Unavailable),
  instance_unreachable: bare(Code.Unavailable),
  misdirected: bare(Code.FailedPrecondition),
  request_id_mismatch: bare(Code.InvalidArgument),
  served_elsewhere: bare(Code.FailedPrecondition),
  token_check_failed: bare(Code.Unavailable),
  belongs_to_another_user: bare(Code.PermissionDenied),
  team_token_missing: bare(Code.Unauthenticated),
};

/** The message of a protocol error (the client shows it as is). */
function toProtocolMessage(error: ProtocolError): string {
  switch (error.type) {
    case "empty_request_id":
      return "the request id is empty";
    case "request_id_too_long":
      return `the request id is longer than ${error.max} characters`;
    case "too_many_streams":
      return `too many open streams (${error.max}); try again when some have ended`;
    case "unknown_request_id":
      return `unknown request id: no stream ${error.requestID} is open and no run request started one`;
    case "stream_released":
      return (
        `stream ${error.requestID} cannot be picked up again: nothing is saved for it (a newer ` +
        "request of its conversation has started since, and only the newest is kept for a reconnect)"
      );
    case "no_turn":
      return `request ${error.requestID} has no turn: ${error.event} needs a run request first`;
    case "turn_already_started":
      return "this request id already carries a turn";
    case "no_model":
      return "no model is configured";
    case "append_out_of_order":
      return error.detail;
    case "saved_request_unreadable":
      return "the saved run request of this stream is unreadable";
    case "stream_closed":
      return error.reason;
    case "stream_taken_over":
      return (
        "another stream resumed this stream's turn while nobody read this one; the turn goes on " +
        "there (this stream ended without ending the turn)"
      );
    case "client_went_away":
      return "the client went away";
    case "run_stream_closed":
      return "the client closed the Run stream";
    case "run_poll_not_served":
      return "RunPoll is not served: allow HTTP/1.1 SSE or HTTP/2 in the client";
    case "not_implemented":
      return `${error.path} is not implemented`;
    case "unauthenticated":
      return "a valid access token is required (authorization: Bearer …)";
    case "helper_failed":
      return `could not write a ${error.what}: ${error.reason}`;
    case "instance_unreachable":
      return (
        "the server instance holding this stream cannot be reached; retry shortly (another " +
        "instance takes the stream over when its lease expires)"
      );
    case "misdirected":
      return "this request was forwarded to another server instance; it is not served here";
    case "request_id_mismatch":
      return "the x-request-id header differs from the request id in the body; send the same id in both";
    case "served_elsewhere":
      return (
        "this agent stream is held by another server instance; send its request id as the " +
        "x-request-id header so the request reaches that instance"
      );
    case "token_check_failed":
      return "the access token could not be checked (the user database did not answer); retry shortly";
    case "belongs_to_another_user":
      return `this ${error.what} belongs to another user: only the user who started it (or the admin) may use it`;
    case "team_token_missing":
      return (
        `cursor-byok has no team token: set ${error.variable} to the token \`cursor-byok users ` +
        "add` printed for you (your team's admin has it), then restart cursor-byok"
      );
  }
}

export function toProtocolError(error: ProtocolError): ConnectError {
  return new ConnectError(toProtocolMessage(error), WIRE_ERRORS[error.type].code);
}

export const NOT_SUPPORTED_TITLE = "Not supported by cursor-byok yet";

/**
 * A request the client may make that this server does not carry out yet, answered with an error
 * the client shows instead of silence. Not retryable: asking again cannot succeed.
 */
export function toNotSupportedError(detail: string): ConnectError {
  return withDetails(`${NOT_SUPPORTED_TITLE}: ${detail}`, "not_supported", {
    title: NOT_SUPPORTED_TITLE,
    detail,
    isRetryable: false,
    isExpected: true,
  });
}

function withDetails(
  message: string,
  name: DetailedName,
  shown: { title: string; detail: string; isRetryable: boolean; isExpected: boolean },
): ConnectError {
  const row = WIRE_ERRORS[name];
  return new ConnectError(message, row.code, undefined, [
    {
      desc: ErrorDetailsSchema,
      value: {
        error: row.details,
        details: { title: shown.title, detail: shown.detail, isRetryable: shown.isRetryable },
        isExpected: shown.isExpected,
      },
    },
  ]);
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
  budget: "Budget reached",
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

/**
 * `replayable: false` clears `is_retryable` whatever the kind: for an error about a turn that is
 * already over (a stream that comes to it late), which a replay of the same request cannot change.
 */
export function toConnectError(
  failure: WireFailure,
  options: { readonly replayable: boolean } = { replayable: true },
): ConnectError {
  const title = TITLES[failure.kind];
  const detail = redactSecrets(failure.detail);
  return withDetails(detail === "" ? title : `${title}: ${detail}`, failure.kind, {
    title,
    detail,
    isRetryable: options.replayable && isRetryable(failure.kind),
    isExpected: failure.kind !== "internal",
  });
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
