/**
 * A SearXNG instance: `GET /search?q=…&format=json` (no key; the instance must list `json` in
 * `search.formats` of its settings.yml, otherwise it answers 403). Results are `results[]` with
 * `url`, `title`, `content` and sometimes `publishedDate`; the page size is the instance's.
 */
import { arrayAt, oneLine, stringAt } from "../text.ts";
import type { WebSearch } from "../types.ts";
import { toEndpoint, toHits } from "./adapter.ts";
import { requestJson } from "./http-json.ts";

export interface SearxngOptions {
  /** The instance, e.g. `https://searx.example.org` (a path prefix is kept). */
  readonly url: string;
  readonly timeoutMs: number;
}

export function createSearxngSearch(options: SearxngOptions): WebSearch {
  return {
    provider: "searxng",
    async search(query, { count, signal }) {
      const url = toEndpoint(options.url, "/search");
      url.searchParams.set("q", query);
      url.searchParams.set("format", "json");
      const response = await requestJson({
        provider: "SearXNG",
        url,
        method: "GET",
        headers: {},
        timeoutMs: options.timeoutMs,
        ...(signal === undefined ? {} : { signal }),
        secrets: [],
        toDetail: (body) => stringAt(body, "error") ?? stringAt(body, "message"),
      });
      if (!response.ok) {
        // SearXNG has no key: its 403 means the JSON output format is not enabled.
        const forbidden = / \(HTTP 403/.test(response.message);
        return {
          type: "error",
          message: forbidden
            ? "SearXNG refused format=json (HTTP 403 Forbidden): the instance must list json in search.formats of its settings.yml"
            : response.message,
        };
      }
      const results = arrayAt(response.body, "results") ?? [];
      const hits = results.map((result) => {
        const url = stringAt(result, "url") ?? "";
        const date = stringAt(result, "publishedDate");
        return {
          title: oneLine(stringAt(result, "title") ?? url),
          url,
          snippet: oneLine(stringAt(result, "content") ?? ""),
          ...(date === undefined || date === "" ? {} : { date }),
        };
      });
      return { type: "results", provider: "searxng", hits: toHits(hits, count) };
    },
  };
}
