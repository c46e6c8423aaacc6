/**
 * The vocabulary of the web tools: a search over one configured provider and a fetch of one
 * public URL, each answered with a plain-data outcome. Both never throw once called: every
 * failure (timeout, HTTP status, refused address, quota) is an `error` outcome whose `message`
 * is one line the model can read. Messages never contain a key.
 */

export const SEARCH_PROVIDERS = ["brave", "tavily", "exa", "searxng", "jina"] as const;
export type SearchProviderName = (typeof SEARCH_PROVIDERS)[number];

/** One ranked result. */
export interface SearchHit {
  readonly title: string;
  readonly url: string;
  /** A short extract of the page, plain text. */
  readonly snippet: string;
  /** Publication date or age as the provider gives it, when it gives one. */
  readonly date?: string;
}

export type SearchOutcome =
  | {
      readonly type: "results";
      readonly provider: SearchProviderName;
      readonly hits: readonly SearchHit[];
    }
  | { readonly type: "error"; readonly message: string };

export interface SearchOptions {
  /** How many results to ask for (the provider may return fewer). */
  readonly count: number;
  readonly signal?: AbortSignal;
}

export interface WebSearch {
  readonly provider: SearchProviderName;
  search(query: string, options: SearchOptions): Promise<SearchOutcome>;
}

export type FetchOutcome =
  | {
      readonly type: "page";
      /** The URL asked for. */
      readonly url: string;
      /** Where the content came from, after redirects. */
      readonly finalUrl: string;
      /** The media type of the response, e.g. `text/html`. */
      readonly contentType: string;
      readonly title: string;
      /** Readable text: Markdown for HTML, the body itself for text and JSON. */
      readonly text: string;
      /** Set when the body or the text was cut; says where and why. */
      readonly cut: string | null;
    }
  | { readonly type: "error"; readonly url: string; readonly message: string };

export interface FetchOptions {
  readonly signal?: AbortSignal;
}

export interface WebFetch {
  fetch(url: string, options?: FetchOptions): Promise<FetchOutcome>;
}
