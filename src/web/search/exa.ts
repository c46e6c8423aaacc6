/**
 * Exa: `POST /search` with the key in `x-api-key` and a JSON body (`query`, `numResults`,
 * `type`, `contents.text.maxCharacters`); results are `results[]` with `title`, `url`,
 * `publishedDate`, `author`, `text` (and `highlights` when asked for). Errors carry `error`.
 */
import { arrayAt, oneLine, stringAt } from "../text.ts";
import type { WebSearch } from "../types.ts";
import { type KeyedSearchOptions, toEndpoint, toHits } from "./adapter.ts";
import { requestJson } from "./http-json.ts";

export const EXA_BASE_URL = "https://api.exa.ai";
const MAX_COUNT = 25;
/** Enough page text for a snippet. */
const SNIPPET_CHARACTERS = 500;

export function createExaSearch(options: KeyedSearchOptions): WebSearch {
  return {
    provider: "exa",
    async search(query, { count, signal }) {
      const response = await requestJson({
        provider: "Exa",
        url: toEndpoint(options.baseUrl ?? EXA_BASE_URL, "/search"),
        method: "POST",
        headers: { "x-api-key": options.apiKey },
        body: {
          query,
          numResults: Math.min(count, MAX_COUNT),
          type: "auto",
          contents: { text: { maxCharacters: SNIPPET_CHARACTERS } },
        },
        timeoutMs: options.timeoutMs,
        ...(signal === undefined ? {} : { signal }),
        secrets: [options.apiKey],
        toDetail: (body) => stringAt(body, "error") ?? stringAt(body, "message"),
      });
      if (!response.ok) return { type: "error", message: response.message };
      const results = arrayAt(response.body, "results") ?? [];
      const hits = results.map((result) => {
        const url = stringAt(result, "url") ?? "";
        const date = stringAt(result, "publishedDate");
        const highlights = (arrayAt(result, "highlights") ?? []).filter(
          (item): item is string => typeof item === "string",
        );
        const snippet =
          highlights.length > 0 ? highlights.join(" … ") : (stringAt(result, "text") ?? "");
        return {
          title: oneLine(stringAt(result, "title") ?? url),
          url,
          snippet: oneLine(snippet),
          ...(date === undefined ? {} : { date }),
        };
      });
      return { type: "results", provider: "exa", hits: toHits(hits, count) };
    },
  };
}
