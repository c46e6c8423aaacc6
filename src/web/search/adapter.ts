/** What every search adapter is built from, and the shape they share for turning hits out. */
import type { SearchHit } from "../types.ts";

export interface KeyedSearchOptions {
  readonly apiKey: string;
  /** The API's origin (tests point it at a local fake); defaults to the provider's own. */
  readonly baseUrl?: string;
  readonly timeoutMs: number;
}

/** Hits with a URL, at most `count`, de-duplicated by URL, in the provider's order. */
export function toHits(candidates: readonly (SearchHit | null)[], count: number): SearchHit[] {
  const seen = new Set<string>();
  const hits: SearchHit[] = [];
  for (const hit of candidates) {
    if (hit === null || hit.url === "" || seen.has(hit.url)) continue;
    seen.add(hit.url);
    hits.push(hit);
    if (hits.length >= count) break;
  }
  return hits;
}

/** `path` under `base` (a base with or without a trailing slash). */
export function toEndpoint(base: string, path: string): URL {
  return new URL(path.replace(/^\//, ""), base.endsWith("/") ? base : `${base}/`);
}
