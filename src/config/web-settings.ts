/**
 * The `web` section: which search provider `web_search` uses (and where its key comes from),
 * whether and how `web_fetch` fetches, and whether each call asks the user first.
 *
 * With no `web.search`, the server offers no `web_search` tool: no keyless search is reliable
 * (scraping a search engine's HTML pages breaks whenever the page or the engine's bot rules
 * change), so the tool is offered only once a provider is chosen; `doctor` and the README say
 * how. `web_fetch` needs no provider and is on unless `web.fetch.enabled` is false.
 */
import { createSecret, type Secret } from "../llm/index.ts";
import { isAllowEntry, SEARCH_PROVIDERS, type SearchProviderName } from "../web/index.ts";
import type { ConfigFileError } from "./config-file-error.ts";
import type { FieldPath, YamlSource } from "./yaml-source.ts";

export type KeyedSearchProvider = Exclude<SearchProviderName, "searxng">;

/** The usual key variable of each keyed provider (`apiKeyEnv` overrides it). */
export const SEARCH_KEY_VARIABLES: Readonly<Record<KeyedSearchProvider, string>> = {
  brave: "BRAVE_API_KEY",
  tavily: "TAVILY_API_KEY",
  exa: "EXA_API_KEY",
  jina: "JINA_API_KEY",
};

export type WebSearchSettings =
  | {
      readonly provider: KeyedSearchProvider;
      readonly variable: string;
      /** null when the variable is not set (then `problem` says so). */
      readonly apiKey: Secret | null;
      readonly baseUrl?: string;
      readonly timeoutMs: number;
      /** Why this provider cannot work as configured (`file:line:col: field: …`), or null. */
      readonly problem: string | null;
    }
  | {
      readonly provider: "searxng";
      readonly url: string;
      readonly timeoutMs: number;
      readonly problem: null;
    };

export interface WebFetchSettings {
  readonly maxBytes: number;
  readonly timeoutMs: number;
  readonly maxRedirects: number;
  readonly maxCharacters: number;
  /** Host names and CIDR ranges that may be fetched although they are not public. */
  readonly allowHosts: readonly string[];
}

export interface WebSettings {
  /** null: no provider chosen, `web_search` is not offered. */
  readonly search: WebSearchSettings | null;
  /** null: `web.fetch.enabled` is false, `web_fetch` is not offered. */
  readonly fetch: WebFetchSettings | null;
  /** Ask the user (through Cursor's approval prompt) before each search and fetch. */
  readonly askApproval: boolean;
}

export const DEFAULT_WEB_FETCH: WebFetchSettings = {
  maxBytes: 5 * 1024 * 1024,
  timeoutMs: 30_000,
  maxRedirects: 5,
  maxCharacters: 50_000,
  allowHosts: [],
};

const DEFAULT_SEARCH_TIMEOUT_MS = 15_000;
const WEB_FIELDS = ["search", "fetch", "askApproval"];
const SEARCH_FIELDS = ["provider", "apiKeyEnv", "url", "timeoutSeconds"];
const FETCH_FIELDS = [
  "enabled",
  "maxBytes",
  "timeoutSeconds",
  "maxRedirects",
  "maxCharacters",
  "allowHosts",
];
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/**
 * The longest time limit, in seconds: AbortSignal.timeout and setTimeout take at most
 * 2^31 - 1 ms and fire after 1 ms when given more.
 */
const MAX_SECONDS = 2_147_483;

/**
 * Validates the `web` section (`value`; undefined when absent).
 * @throws ConfigFileError
 */
export function toWebSettings(
  source: YamlSource | undefined,
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
): WebSettings {
  const read = createReader(source);
  const web = read.section(["web"], value, WEB_FIELDS);
  return {
    search: toSearch(read, web.search, env),
    fetch: toFetch(read, web.fetch),
    askApproval: read.boolean(["web", "askApproval"], web.askApproval) ?? true,
  };
}

function toSearch(
  read: Reader,
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
): WebSearchSettings | null {
  const at = (field: string): FieldPath => ["web", "search", field];
  const section = read.section(["web", "search"], value, SEARCH_FIELDS);
  if (value === undefined || value === null) return null;
  const provider = read.oneOf(at("provider"), section.provider, SEARCH_PROVIDERS);
  if (provider === undefined) {
    throw read.fail(at("provider"), `is required: one of ${SEARCH_PROVIDERS.join(", ")}`, true);
  }
  const timeoutMs =
    (read.seconds(at("timeoutSeconds"), section.timeoutSeconds) ??
      DEFAULT_SEARCH_TIMEOUT_MS / 1000) * 1000;
  const url = read.url(at("url"), section.url);
  if (provider === "searxng") {
    if (url === undefined) {
      throw read.fail(at("provider"), "searxng needs web.search.url, the address of your instance");
    }
    if (section.apiKeyEnv !== undefined) {
      throw read.fail(at("apiKeyEnv"), "searxng takes no key", true);
    }
    return { provider, url, timeoutMs, problem: null };
  }
  const variable =
    read.string(at("apiKeyEnv"), section.apiKeyEnv) ?? SEARCH_KEY_VARIABLES[provider];
  if (!VARIABLE_NAME.test(variable)) {
    throw read.fail(at("apiKeyEnv"), "must be an environment variable name");
  }
  const key = env[variable]?.trim() ?? "";
  const problem =
    key === ""
      ? read.fail(
          section.apiKeyEnv === undefined ? at("provider") : at("apiKeyEnv"),
          `environment variable ${variable} is not set; it must hold the ${provider} API key`,
        ).message
      : null;
  return {
    provider,
    variable,
    apiKey: key === "" ? null : createSecret(key),
    ...(url === undefined ? {} : { baseUrl: url }),
    timeoutMs,
    problem,
  };
}

function toFetch(read: Reader, value: unknown): WebFetchSettings | null {
  const at = (field: string): FieldPath => ["web", "fetch", field];
  const section = read.section(["web", "fetch"], value, FETCH_FIELDS);
  if (read.boolean(at("enabled"), section.enabled) === false) return null;
  const allowHosts = read.stringList(at("allowHosts"), section.allowHosts) ?? [];
  allowHosts.forEach((entry, index) => {
    if (!isAllowEntry(entry)) {
      throw read.fail(
        ["web", "fetch", "allowHosts", index],
        "must be a host name, an IP address or a CIDR range (e.g. 10.0.0.0/8)",
      );
    }
  });
  const seconds = read.seconds(at("timeoutSeconds"), section.timeoutSeconds);
  return {
    maxBytes: read.integer(at("maxBytes"), section.maxBytes, 1) ?? DEFAULT_WEB_FETCH.maxBytes,
    timeoutMs: seconds === undefined ? DEFAULT_WEB_FETCH.timeoutMs : seconds * 1000,
    maxRedirects:
      read.integer(at("maxRedirects"), section.maxRedirects, 0) ?? DEFAULT_WEB_FETCH.maxRedirects,
    maxCharacters:
      read.integer(at("maxCharacters"), section.maxCharacters, 1) ??
      DEFAULT_WEB_FETCH.maxCharacters,
    allowHosts,
  };
}

// ---------------------------------------------------------------------------------------------
// Field readers. Messages describe the expected value and never echo the value given.
// ---------------------------------------------------------------------------------------------

interface Reader {
  fail(at: FieldPath, problem: string, atKey?: boolean): ConfigFileError;
  section(at: FieldPath, value: unknown, fields: readonly string[]): Record<string, unknown>;
  string(at: FieldPath, value: unknown): string | undefined;
  url(at: FieldPath, value: unknown): string | undefined;
  boolean(at: FieldPath, value: unknown): boolean | undefined;
  integer(at: FieldPath, value: unknown, min: number): number | undefined;
  positiveNumber(at: FieldPath, value: unknown): number | undefined;
  seconds(at: FieldPath, value: unknown): number | undefined;
  oneOf<T extends string>(at: FieldPath, value: unknown, allowed: readonly T[]): T | undefined;
  stringList(at: FieldPath, value: unknown): string[] | undefined;
}

function createReader(source: YamlSource | undefined): Reader {
  const reader: Reader = {
    fail(at, problem, atKey = false) {
      if (source === undefined) throw new Error(`configuration problem without a file: ${problem}`);
      return source.errorAt(at, problem, { atKey });
    },
    section(at, value, fields) {
      if (value === undefined || value === null) return {};
      if (typeof value !== "object" || Array.isArray(value))
        throw reader.fail(at, "must be a mapping");
      for (const key of Object.keys(value)) {
        if (!fields.includes(key)) {
          throw reader.fail(
            [...at, key],
            `unknown field (expected one of ${fields.join(", ")})`,
            true,
          );
        }
      }
      return value as Record<string, unknown>;
    },
    string(at, value) {
      if (value === undefined) return undefined;
      if (typeof value !== "string" || value.trim() === "") {
        throw reader.fail(at, "must be a non-empty string");
      }
      return value;
    },
    url(at, value) {
      const text = reader.string(at, value);
      if (text === undefined) return undefined;
      let url: URL;
      try {
        url = new URL(text);
      } catch {
        throw reader.fail(at, "must be an http or https URL");
      }
      if (url.protocol !== "http:" && url.protocol !== "https:") {
        throw reader.fail(at, "must be an http or https URL");
      }
      if (url.username !== "" || url.password !== "") {
        // They would show up in error messages, tool results and doctor's output.
        throw reader.fail(
          at,
          "must not contain a user name or password; put the instance behind a proxy that adds them, or allow this server's address without them",
        );
      }
      return text;
    },
    boolean(at, value) {
      if (value === undefined) return undefined;
      if (typeof value !== "boolean") throw reader.fail(at, "must be true or false");
      return value;
    },
    integer(at, value, min) {
      if (value === undefined) return undefined;
      if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
        throw reader.fail(at, `must be an integer of at least ${min}`);
      }
      return value;
    },
    positiveNumber(at, value) {
      if (value === undefined) return undefined;
      if (typeof value !== "number" || !(value > 0) || !Number.isFinite(value)) {
        throw reader.fail(at, "must be a positive number");
      }
      return value;
    },
    seconds(at, value) {
      const seconds = reader.positiveNumber(at, value);
      if (seconds !== undefined && seconds > MAX_SECONDS) {
        throw reader.fail(at, `must be at most ${MAX_SECONDS} seconds (about 24 days)`);
      }
      return seconds;
    },
    oneOf(at, value, allowed) {
      if (value === undefined) return undefined;
      if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) {
        throw reader.fail(at, `must be one of ${allowed.join(", ")}`);
      }
      return value as (typeof allowed)[number];
    },
    stringList(at, value) {
      if (value === undefined || value === null) return undefined;
      if (!Array.isArray(value)) throw reader.fail(at, "must be a list of strings");
      return value.map((item, index) => {
        if (typeof item !== "string" || item.trim() === "") {
          throw reader.fail([...at, index], "must be a non-empty string");
        }
        return item.trim();
      });
    },
  };
  return reader;
}
