/** The configured search provider → its adapter. */
import type { WebSearch } from "../types.ts";
import { createBraveSearch } from "./brave.ts";
import { createExaSearch } from "./exa.ts";
import { createJinaSearch } from "./jina.ts";
import { createSearxngSearch } from "./searxng.ts";
import { createTavilySearch } from "./tavily.ts";

export type SearchConfig =
  | {
      readonly type: "brave" | "tavily" | "exa" | "jina";
      readonly apiKey: string;
      readonly baseUrl?: string;
      readonly timeoutMs: number;
    }
  | { readonly type: "searxng"; readonly url: string; readonly timeoutMs: number };

export function createWebSearch(config: SearchConfig): WebSearch {
  switch (config.type) {
    case "brave":
      return createBraveSearch(config);
    case "tavily":
      return createTavilySearch(config);
    case "exa":
      return createExaSearch(config);
    case "jina":
      return createJinaSearch(config);
    case "searxng":
      return createSearxngSearch(config);
  }
}
