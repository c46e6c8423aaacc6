/**
 * Jina Search (s.jina.ai): `GET /?q=…` with the key as a bearer token, `Accept:
 * application/json` and `X-Respond-With: no-content` (titles, URLs and descriptions only, not
 * whole pages). The answer is `{ code, status, data: [{ title, url, description, date? }] }`;
 * errors carry `readableMessage` / `message` (e.g. `AuthenticationRequiredError`, 401).
 */
import { arrayAt, oneLine, stringAt } from "../text.ts";
import type { WebSearch } from "../types.ts";
import { type KeyedSearchOptions, toEndpoint, toHits } from "./adapter.ts";
import { requestJson } from "./http-json.ts";

export const JINA_BASE_URL = "https://s.jina.ai";

export function createJinaSearch(options: KeyedSearchOptions): WebSearch {
  return {
    provider: "jina",
    async search(query, { count, signal }) {
      const url = toEndpoint(options.baseUrl ?? JINA_BASE_URL, "/");
      url.searchParams.set("q", query);
      const response = await requestJson({
        provider: "Jina Search",
        url,
        method: "GET",
        headers: {
          authorization: `Bearer ${options.apiKey}`,
          "x-respond-with": "no-content",
        },
        timeoutMs: options.timeoutMs,
        ...(signal === undefined ? {} : { signal }),
        secrets: [options.apiKey],
        toDetail: (body) => stringAt(body, "readableMessage") ?? stringAt(body, "message"),
      });
      if (!response.ok) return { type: "error", message: response.message };
      const results = arrayAt(response.body, "data") ?? [];
      const hits = results.map((result) => {
        const url = stringAt(result, "url") ?? "";
        const date = stringAt(result, "date") ?? stringAt(result, "publishedTime");
        return {
          title: oneLine(stringAt(result, "title") ?? url),
          url,
          snippet: oneLine(stringAt(result, "description") ?? stringAt(result, "content") ?? ""),
          ...(date === undefined ? {} : { date }),
        };
      });
      return { type: "results", provider: "jina", hits: toHits(hits, count) };
    },
  };
}
