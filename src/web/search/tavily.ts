/**
 * Tavily: `POST /search` with the key as a bearer token and a JSON body (`query`,
 * `max_results`, `search_depth`, `include_answer`, `include_raw_content`, `include_images`);
 * results are `results[]` with `title`, `url`, `content`, `score` and, for news,
 * `published_date`. Errors carry `detail.error`; 432 and 433 are Tavily's plan and
 * pay-as-you-go limits.
 */
import { arrayAt, oneLine, stringAt } from "../text.ts";
import type { WebSearch } from "../types.ts";
import { type KeyedSearchOptions, toEndpoint, toHits } from "./adapter.ts";
import { requestJson } from "./http-json.ts";

export const TAVILY_BASE_URL = "https://api.tavily.com";
const MAX_COUNT = 20;

export function createTavilySearch(options: KeyedSearchOptions): WebSearch {
  return {
    provider: "tavily",
    async search(query, { count, signal }) {
      const response = await requestJson({
        provider: "Tavily",
        url: toEndpoint(options.baseUrl ?? TAVILY_BASE_URL, "/search"),
        method: "POST",
        headers: { authorization: `Bearer ${options.apiKey}` },
        body: {
          query,
          max_results: Math.min(count, MAX_COUNT),
          search_depth: "basic",
          include_answer: false,
          include_raw_content: false,
          include_images: false,
        },
        timeoutMs: options.timeoutMs,
        ...(signal === undefined ? {} : { signal }),
        secrets: [options.apiKey],
        toDetail: (body) => {
          const detail = (body as { detail?: unknown }).detail;
          return typeof detail === "string"
            ? detail
            : (stringAt(detail, "error") ?? stringAt(body, "error"));
        },
      });
      if (!response.ok) return { type: "error", message: response.message };
      const results = arrayAt(response.body, "results") ?? [];
      const hits = results.map((result) => {
        const url = stringAt(result, "url") ?? "";
        const date = stringAt(result, "published_date");
        return {
          title: oneLine(stringAt(result, "title") ?? url),
          url,
          snippet: oneLine(stringAt(result, "content") ?? ""),
          ...(date === undefined ? {} : { date }),
        };
      });
      return { type: "results", provider: "tavily", hits: toHits(hits, count) };
    },
  };
}
