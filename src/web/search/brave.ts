/**
 * Brave Search API, web search: `GET /res/v1/web/search?q=…&count=…` with the key in
 * `X-Subscription-Token`; results are `web.results[]` with `title`, `url`, `description` (may
 * hold `<strong>` markup) and, when Brave dates the page, `page_age` / `age`. Errors carry
 * `error.detail` and `error.code` (e.g. `RATE_LIMITED`, `SUBSCRIPTION_TOKEN_INVALID`).
 */
import { arrayAt, stringAt, stripTags } from "../text.ts";
import type { WebSearch } from "../types.ts";
import { type KeyedSearchOptions, toEndpoint, toHits } from "./adapter.ts";
import { requestJson } from "./http-json.ts";

export const BRAVE_BASE_URL = "https://api.search.brave.com";
/** Brave's limit for `count`. */
const MAX_COUNT = 20;

export function createBraveSearch(options: KeyedSearchOptions): WebSearch {
  return {
    provider: "brave",
    async search(query, { count, signal }) {
      const url = toEndpoint(options.baseUrl ?? BRAVE_BASE_URL, "/res/v1/web/search");
      url.searchParams.set("q", query);
      url.searchParams.set("count", String(Math.min(count, MAX_COUNT)));
      const response = await requestJson({
        provider: "Brave Search",
        url,
        method: "GET",
        headers: { "x-subscription-token": options.apiKey },
        timeoutMs: options.timeoutMs,
        ...(signal === undefined ? {} : { signal }),
        secrets: [options.apiKey],
        toDetail: (body) => {
          const error = (body as { error?: unknown }).error;
          return stringAt(error, "detail") ?? stringAt(error, "code");
        },
      });
      if (!response.ok) return { type: "error", message: response.message };
      const web = (response.body as { web?: unknown }).web;
      const results = arrayAt(web, "results") ?? [];
      const hits = results.map((result) => {
        const url = stringAt(result, "url") ?? "";
        const date = stringAt(result, "page_age") ?? stringAt(result, "age");
        return {
          title: stripTags(stringAt(result, "title") ?? url),
          url,
          snippet: stripTags(stringAt(result, "description") ?? ""),
          ...(date === undefined ? {} : { date }),
        };
      });
      return { type: "results", provider: "brave", hits: toHits(hits, count) };
    },
  };
}
