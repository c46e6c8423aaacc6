/**
 * The server's web fetch: a guarded GET (http-get.ts), the body made readable
 * (to-readable.ts), the text cut to a budget the model can use (saying where), and a short
 * cache by URL so a page fetched twice in a turn is fetched once (a second request for a URL
 * still in flight waits for the first). Only pages are cached, never errors. A fetch shared by
 * several callers has its own abort controller: a caller that cancels stops waiting at once, and
 * the fetch itself stops only when every caller has canceled.
 */
import type { FetchOutcome, WebFetch } from "../types.ts";
import { createAddressPolicy } from "./address-policy.ts";
import { type ConvertLimits, createConverter } from "./convert-in-worker.ts";
import { type HttpGetLimits, httpGet, type Resolve } from "./http-get.ts";

export interface WebFetchOptions extends HttpGetLimits {
  /** Host names and CIDR ranges that may be fetched although they are not public. */
  readonly allowHosts: readonly string[];
  /** The most characters of page text handed to the model. */
  readonly maxChars: number;
  readonly cacheTtlMs: number;
  readonly cacheEntries: number;
  /** Name resolution; tests inject one that maps test names to 127.0.0.1. */
  readonly resolve?: Resolve;
  readonly now?: () => number;
  readonly userAgent?: string;
  /** Bounds of the HTML and PDF conversion (convert-in-worker.ts). */
  readonly convert?: ConvertLimits;
}

/** A page that takes longer or more memory than this to convert is not read. */
export const DEFAULT_CONVERT_LIMITS: ConvertLimits = {
  timeoutMs: 10_000,
  heapMb: 256,
  concurrency: 2,
};

export const DEFAULT_FETCH_OPTIONS: WebFetchOptions = {
  maxBytes: 5 * 1024 * 1024,
  timeoutMs: 30_000,
  maxRedirects: 5,
  allowHosts: [],
  maxChars: 50_000,
  cacheTtlMs: 5 * 60_000,
  cacheEntries: 64,
};

const USER_AGENT = "cursor-byok web_fetch (+https://github.com/cursor-byok)";

export function createWebFetch(options: WebFetchOptions): WebFetch {
  const policy = createAddressPolicy(options.allowHosts);
  const now = options.now ?? Date.now;
  const cache = new Map<string, { readonly at: number; readonly outcome: FetchOutcome }>();
  const inFlight = new Map<string, Shared>();
  const convert = createConverter(options.convert ?? DEFAULT_CONVERT_LIMITS);

  const load = async (url: string, signal: AbortSignal | undefined): Promise<FetchOutcome> => {
    const got = await httpGet(url, {
      ...options,
      policy,
      userAgent: options.userAgent ?? USER_AGENT,
      ...(signal === undefined ? {} : { signal }),
    });
    if (got.type === "error") return { type: "error", url, message: got.message };
    const readable = await convert(
      {
        body: got.body,
        contentType: got.contentType,
        url: got.finalUrl,
        maxChars: options.maxChars,
      },
      signal,
    );
    if (readable.type === "unsupported") return { type: "error", url, message: readable.message };
    const notes: string[] = [];
    if (got.cut)
      notes.push(`the response was cut at ${formatBytes(options.maxBytes)} (the size limit)`);
    if (readable.partial !== undefined) notes.push(readable.partial);
    let text = readable.text;
    const omitted = readable.omitted ?? 0;
    if (text.length > options.maxChars || omitted > 0) {
      const whole = omitted > 0 ? `about ${text.length + omitted}` : `${text.length}`;
      notes.push(
        `the text was cut at character ${Math.min(options.maxChars, text.length)} of ${whole}; the rest of the page is not shown`,
      );
      text = text.slice(0, options.maxChars);
    }
    return {
      type: "page",
      url,
      finalUrl: got.finalUrl,
      contentType: readable.mediaType,
      title: readable.title,
      text,
      cut: notes.length === 0 ? null : notes.join("; "),
    };
  };

  return {
    async fetch(url, fetchOptions = {}) {
      const key = url.trim();
      const cached = cache.get(key);
      if (cached !== undefined && now() - cached.at < options.cacheTtlMs) return cached.outcome;
      cache.delete(key);
      let shared = inFlight.get(key);
      if (shared === undefined) {
        const controller = new AbortController();
        const started: Shared = {
          controller,
          waiters: 0,
          outcome: load(key, controller.signal)
            .finally(() => {
              if (inFlight.get(key) === started) inFlight.delete(key);
            })
            .then((outcome) => {
              if (outcome.type === "page") remember(key, outcome);
              return outcome;
            }),
        };
        inFlight.set(key, started);
        shared = started;
      }
      return wait(key, shared, fetchOptions.signal);
    },
  };

  function remember(key: string, outcome: FetchOutcome): void {
    cache.set(key, { at: now(), outcome });
    while (cache.size > options.cacheEntries) {
      const oldest = cache.keys().next().value;
      if (oldest === undefined) break;
      cache.delete(oldest);
    }
  }

  /** The shared outcome, or a cancel as soon as `signal` aborts (the last cancel stops it). */
  function wait(
    key: string,
    shared: Shared,
    signal: AbortSignal | undefined,
  ): Promise<FetchOutcome> {
    if (signal === undefined) {
      shared.waiters += 1;
      return shared.outcome;
    }
    const canceled: FetchOutcome = { type: "error", url: key, message: "the fetch was canceled" };
    if (signal.aborted) return Promise.resolve(canceled);
    shared.waiters += 1;
    return new Promise((resolve) => {
      const onAbort = (): void => {
        shared.waiters -= 1;
        if (shared.waiters === 0) {
          if (inFlight.get(key) === shared) inFlight.delete(key);
          shared.controller.abort();
        }
        resolve(canceled);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      void shared.outcome.then((outcome) => {
        signal.removeEventListener("abort", onAbort);
        resolve(outcome);
      });
    });
  }
}

/** A fetch in flight, shared by every caller of its URL. */
interface Shared {
  readonly outcome: Promise<FetchOutcome>;
  readonly controller: AbortController;
  /** Callers still waiting (those without a signal never stop waiting). */
  waiters: number;
}

function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}
