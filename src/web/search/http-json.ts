/**
 * One JSON request to a search provider, with a time limit and a size limit, turned into either
 * the parsed body or a one-line reason the model can read (docs/design.md §5: a failed tool is a
 * tool result). The reason names the provider and the HTTP status and never contains the key.
 */

import { errorMessage } from "../../errors/error-message.ts";
import { oneLine, redact, stripCredentials } from "../text.ts";

export interface JsonRequest {
  /** Provider name for messages, e.g. `Brave Search`. */
  readonly provider: string;
  readonly url: URL;
  readonly method: "GET" | "POST";
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: unknown;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Strings that must never appear in a message (the key). */
  readonly secrets: readonly string[];
  /** The provider's own error text in an error body, if it has one. */
  readonly toDetail: (body: unknown) => string | undefined;
}

export type JsonResponse =
  | { readonly ok: true; readonly body: unknown }
  | { readonly ok: false; readonly message: string };

/** Search answers are small; anything larger is not a search answer. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

export async function requestJson(request: JsonRequest): Promise<JsonResponse> {
  const { provider } = request;
  const timeout = AbortSignal.timeout(request.timeoutMs);
  const signal =
    request.signal === undefined ? timeout : AbortSignal.any([request.signal, timeout]);
  // Credentials in the URL (the configuration refuses them) never reach a message either.
  const secrets = [...request.secrets, ...urlCredentials(request.url)];
  const fail = (message: string): JsonResponse => ({
    ok: false,
    message: redact(stripCredentials(oneLine(message)), secrets),
  });
  let text: string;
  let status: number;
  let statusText: string;
  try {
    const response = await fetch(request.url, {
      method: request.method,
      headers: {
        accept: "application/json",
        ...(request.body === undefined ? {} : { "content-type": "application/json" }),
        ...request.headers,
      },
      ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
      signal,
      redirect: "error",
    });
    status = response.status;
    statusText = response.statusText;
    text = await readCapped(response, MAX_BODY_BYTES);
  } catch (error) {
    if (timeout.aborted) {
      return fail(`${provider} did not answer within ${seconds(request.timeoutMs)}`);
    }
    if (request.signal?.aborted === true) return fail("the search was canceled");
    return fail(`${provider} could not be reached (${describeNetworkError(error)})`);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (status >= 200 && status < 300) {
    if (body === undefined) return fail(`${provider} answered with something that is not JSON`);
    return { ok: true, body };
  }
  const detail = (body === undefined ? undefined : request.toDetail(body)) ?? text.slice(0, 200);
  const suffix = detail.trim() === "" ? "" : `: ${detail.trim().slice(0, 300)}`;
  // Node reports "unknown" as the text of statuses it has no name for (Tavily's 432, 433).
  const named = statusText !== "" && statusText.toLowerCase() !== "unknown";
  const code = `HTTP ${status}${named ? ` ${statusText}` : ""}`;
  if (status === 401 || status === 403) {
    return fail(`${provider} refused the API key (${code})${suffix}`);
  }
  if (status === 402 || status === 429 || status === 432 || status === 433) {
    return fail(`${provider} quota or rate limit reached (${code})${suffix}`);
  }
  if (status >= 500) return fail(`${provider} failed (${code})${suffix}`);
  return fail(`${provider} rejected the request (${code})${suffix}`);
}

async function readCapped(response: Response, limit: number): Promise<string> {
  if (response.body === null) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new Error(`the answer is larger than ${limit} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function urlCredentials(url: URL): string[] {
  const parts = [url.username, url.password].filter((part) => part !== "");
  return [...parts, ...parts.map((part) => decodeURIComponent(part))];
}

function describeNetworkError(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === "string") return cause.code;
  if (typeof cause?.message === "string") return cause.message;
  return errorMessage(error);
}

export function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}
