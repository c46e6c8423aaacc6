/**
 * The `fetch` handed to pi-ai for one model call: the single place where the call's request
 * leaves the process.
 *
 * - It captures the body exactly as the provider SDK serialised it, hashes it, and awaits the
 *   caller's `beforeSend` hook before any byte goes upstream (docs/design.md §7 step 3). If the
 * hook   fails, nothing is sent.
 * - On a replay it sends the saved body instead of the freshly built one, byte for byte
 *   (docs/design.md §8), so a retried call never depends on rebuilding the same bytes.
 * - It retries on retryable statuses and connection failures (retry.ts) with the same body.
 *   Retrying here, before the SDK sees a response, is what makes "only before the first event"
 *   hold: pi-ai emits `start` only once it has a response. The SDKs' own retries are off.
 * - Redirects are not followed (the body would go to an address nobody recorded); a redirect
 *   fails the call with a message that says so, without retries.
 * - One call sends one request. A second request from the same call (a library fallback that
 *   rebuilds the body) is refused, so what was saved is what was sent.
 * - Nothing here keeps the body once the response has come (issue #19): each attempt hands fetch
 *   a one-chunk stream of the body's UTF-8 bytes with an explicit `content-length` (so the
 *   request is the same as with a string body, never chunked), which fetch lets go once written,
 *   and the call's state keeps a `SentRequest` (no body). A string body would be held by fetch
 *   for as long as the response streams.
 */
import { createHash } from "node:crypto";
import { describeError, toAbortError, toEitherSignal, untilAborted } from "./abort.ts";
import { decideRetry, type RetryPolicy } from "./retry.ts";
import { redactSecret } from "./secret.ts";
import type { ExactRequest, RequestAttempt, SentRequest } from "./types.ts";

export interface ExactFetchOptions {
  readonly callID: string;
  readonly model: string;
  readonly baseFetch: typeof fetch;
  readonly policy: RetryPolicy;
  /** Aborts waits and sends (in addition to the SDK's own signal). */
  readonly signal: AbortSignal;
  readonly replayBody?: string;
  readonly beforeSend?: (exact: ExactRequest) => Promise<void>;
  /** Credentials that must not appear in the recorded URL. */
  readonly secrets: readonly string[];
  /**
   * Called once, when the request's body has been taken (before `beforeSend`): whatever the SDK
   * serialised it from is no longer needed by anyone, since a second request is refused.
   */
  readonly onBodyTaken?: () => void;
}

/** What the call sent so far. Written only by the code that sends (this fetch, or the demo). */
export interface ExactFetchState {
  exact: SentRequest | undefined;
  /** Replaced, not only appended to, by `addAttempt`: read it anew each time. */
  attempts: RequestAttempt[];
  /** Why `beforeSend` failed, when it did. */
  hookFailure: string | undefined;
}

export function hashBody(body: string): string {
  return createHash("sha256").update(body, "utf8").digest("hex");
}

/** Strips the body (see `SentRequest`). */
export function toSentRequest(exact: ExactRequest): SentRequest {
  const { body: _body, ...sent } = exact;
  return Object.freeze(sent);
}

/**
 * The body as fetch gets it for one attempt: its UTF-8 bytes as a stream of one chunk, let go
 * once written. `content-length` is set by the caller from `bytes.length`.
 */
function toBodyStream(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let chunk: Uint8Array | undefined = bytes;
  // Not a byte stream: that would transfer (detach) the buffer, which a retry sends again.
  return new ReadableStream({
    pull(controller) {
      if (chunk !== undefined) controller.enqueue(chunk);
      chunk = undefined;
      controller.close();
    },
  });
}

export function createExactFetch(options: ExactFetchOptions): {
  readonly fetch: typeof fetch;
  readonly state: ExactFetchState;
} {
  const state: ExactFetchState = { exact: undefined, attempts: [], hookFailure: undefined };
  /**
   * What is used once, for the one request, and let go then: the SDK keeps this fetch for as
   * long as the response streams (a replayed body is the whole request; issue #19).
   */
  let once: Pick<ExactFetchOptions, "replayBody" | "beforeSend" | "onBodyTaken"> | undefined =
    options;
  // What every attempt reads: `options` itself goes with `once`.
  const { callID, model, baseFetch, policy, signal: callSignal, secrets } = options;

  const exactFetch = async (
    input: string | URL | Request,
    init?: RequestInit,
  ): Promise<Response> => {
    if (state.exact !== undefined || once === undefined) {
      throw new Error("refused a second upstream request within one model call");
    }
    if (input instanceof Request || typeof init?.body !== "string") {
      throw new Error("unsupported provider request: expected a URL and a string body");
    }
    const { replayBody, beforeSend, onBodyTaken } = once;
    once = undefined;
    const signal =
      init.signal === undefined || init.signal === null
        ? callSignal
        : toEitherSignal(init.signal, callSignal);
    const body = replayBody ?? init.body;
    onBodyTaken?.();
    // Encoded once: hashed here and sent below (a 20–40 KB body; issue #19).
    const bytes = Buffer.from(body, "utf8");
    const url = String(input);
    const exact: ExactRequest = Object.freeze({
      callID,
      model,
      method: init.method ?? "POST",
      url: secrets.reduce((text, secret) => redactSecret(text, secret), url),
      body,
      bodyHash: createHash("sha256").update(bytes).digest("hex"),
      replayed: replayBody !== undefined,
    });
    state.exact = toSentRequest(exact);

    if (beforeSend !== undefined) {
      try {
        await untilAborted(beforeSend(exact), signal);
      } catch (error) {
        if (signal.aborted) throw toAbortError(signal);
        state.hookFailure = describeError(error);
        throw new Error(`beforeSend failed: ${state.hookFailure}`);
      }
    }

    // The body may differ from the one the SDK measured (replay): the length is the bytes sent.
    const headers = new Headers(init.headers);
    headers.set("content-length", String(bytes.length));
    // Redirects are not followed: a followed redirect would send the body to an address nobody
    // recorded (and a stream body could not be sent again anyway).
    const request = (): RequestInit & { duplex: "half" } => ({
      ...init,
      headers,
      body: toBodyStream(bytes),
      duplex: "half",
      signal,
      redirect: "error",
    });

    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) throw toAbortError(signal);
      let response: Response;
      try {
        response = await baseFetch(input, request());
      } catch (error) {
        if (signal.aborted) throw toAbortError(signal);
        if (isRedirect(error)) {
          const failure =
            "the provider answered with a redirect, which is not followed: set the model's baseUrl to the address it redirects to";
          addAttempt(state, { attempt, error: failure });
          throw new Error(failure);
        }
        const decision = decideRetry(policy, attempt, { type: "connection_error" });
        const failure = describeError(error);
        if (decision.type === "stop") {
          addAttempt(state, { attempt, error: failure });
          throw error;
        }
        addAttempt(state, { attempt, error: failure, retryDelayMs: decision.delayMs });
        await policy.sleep(decision.delayMs, signal);
        continue;
      }
      const decision = decideRetry(policy, attempt, {
        type: "response",
        status: response.status,
        headers: response.headers,
      });
      if (decision.type === "stop") {
        addAttempt(state, { attempt, status: response.status });
        return response;
      }
      addAttempt(state, { attempt, status: response.status, retryDelayMs: decision.delayMs });
      await response.body?.cancel().catch(() => undefined);
      await policy.sleep(decision.delayMs, signal);
    }
  };

  return { fetch: exactFetch as typeof fetch, state };
}

/** Whether `fetch` failed because the response was a redirect (`redirect: "error"`). */
function isRedirect(error: unknown): boolean {
  const cause = error instanceof Error ? error.cause : undefined;
  return cause instanceof Error && cause.message === "unexpected redirect";
}

/**
 * Records an attempt; the first as an array of one: a `push` onto `[]` reserves room for 17, kept
 * for the call's life (issue #19).
 */
function addAttempt(state: ExactFetchState, attempt: RequestAttempt): void {
  if (state.attempts.length === 0) state.attempts = [attempt];
  else state.attempts.push(attempt);
}
