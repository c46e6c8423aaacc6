/**
 * The configured web tools (config `web`) → what the server runs for `web_search` and
 * `web_fetch`, plus the one-line summaries `serve` prints and `doctor` checks.
 */
import { SEARCH_KEY_VARIABLES, type WebSettings } from "../config/index.ts";
import type { WebTools } from "../transport/web-work.ts";
import { createWebFetch, createWebSearch, type Resolve, type WebSearch } from "../web/index.ts";

/** `resolve` replaces the system resolver (tests only). */
export function toWebTools(settings: WebSettings, resolve?: Resolve): WebTools {
  const { fetch } = settings;
  return {
    search: toSearch(settings),
    fetch:
      fetch === null
        ? null
        : createWebFetch({
            maxBytes: fetch.maxBytes,
            timeoutMs: fetch.timeoutMs,
            maxRedirects: fetch.maxRedirects,
            maxChars: fetch.maxCharacters,
            allowHosts: fetch.allowHosts,
            cacheTtlMs: 5 * 60_000,
            cacheEntries: 64,
            ...(resolve === undefined ? {} : { resolve }),
          }),
    askApproval: settings.askApproval,
  };
}

function toSearch({ search }: WebSettings): WebSearch | null {
  if (search === null) return null;
  if (search.provider === "searxng") {
    return createWebSearch({ type: "searxng", url: search.url, timeoutMs: search.timeoutMs });
  }
  if (search.apiKey === null) return null;
  return createWebSearch({
    type: search.provider,
    apiKey: search.apiKey.reveal(),
    ...(search.baseUrl === undefined ? {} : { baseUrl: search.baseUrl }),
    timeoutMs: search.timeoutMs,
  });
}

/** One line for the start-up banner. */
export function toWebSummary(settings: WebSettings): string {
  const search =
    settings.search === null
      ? "web_search off (no web.search.provider)"
      : `web_search via ${settings.search.provider}`;
  const fetch = settings.fetch === null ? "web_fetch off" : "web_fetch on (public addresses only)";
  const approval = settings.askApproval ? "each call asks for approval" : "no approval asked";
  return `${search}; ${fetch}; ${approval}`;
}

/** Search key variables that are set although no provider is chosen (for a doctor hint). */
export function findUnusedSearchKeys(
  settings: WebSettings,
  env: Readonly<Record<string, string | undefined>>,
): string[] {
  if (settings.search !== null) return [];
  return Object.entries(SEARCH_KEY_VARIABLES)
    .filter(([, variable]) => (env[variable]?.trim() ?? "") !== "")
    .map(([provider, variable]) => `${variable} (provider: ${provider})`);
}
