/**
 * The web tools' I/O: search through one configured provider, and fetch a public URL as
 * readable text. Imports nothing of ours; the transport runs it for the `web_search` and
 * `web_fetch` tools, the composition root builds it from the configuration. See README.md.
 */
export { isAllowEntry, toNonPublicReason } from "./fetch/address-policy.ts";
export {
  createWebFetch,
  DEFAULT_FETCH_OPTIONS,
  type WebFetchOptions,
} from "./fetch/create-fetch.ts";
export type { Resolve } from "./fetch/http-get.ts";
export { BRAVE_BASE_URL } from "./search/brave.ts";
export { createWebSearch, type SearchConfig } from "./search/create-search.ts";
export { EXA_BASE_URL } from "./search/exa.ts";
export { JINA_BASE_URL } from "./search/jina.ts";
export { TAVILY_BASE_URL } from "./search/tavily.ts";
export {
  type FetchOptions,
  type FetchOutcome,
  SEARCH_PROVIDERS,
  type SearchHit,
  type SearchOptions,
  type SearchOutcome,
  type SearchProviderName,
  type WebFetch,
  type WebSearch,
} from "./types.ts";
