/**
 * The `web` checks of `cursor-byok doctor`: whether `web_search` is offered (and with which
 * provider and key), and what `web_fetch` may reach. No request is sent and no key is shown;
 * of a URL only the origin (a path or query may hold a token).
 */
import type { Config } from "../config/index.ts";
import type { CheckResult } from "./doctor-checks.ts";
import { findUnusedSearchKeys, toWebTools } from "./web-tools.ts";

export function checkWeb(
  config: Config,
  env: Readonly<Record<string, string | undefined>>,
): CheckResult[] {
  return [checkSearch(config, env), checkFetch(config)];
}

function checkSearch(
  config: Config,
  env: Readonly<Record<string, string | undefined>>,
): CheckResult {
  const search = config.web.search;
  if (search === null) {
    const unused = findUnusedSearchKeys(config.web, env);
    return {
      status: "skip",
      name: "web",
      detail: "web_search is not offered: no search provider is configured",
      hint:
        unused.length > 0
          ? `${unused.join(", ")} is set; choose it with web.search.provider in the config file`
          : 'set web.search.provider to brave, tavily, exa or jina (key in BRAVE_API_KEY, TAVILY_API_KEY, EXA_API_KEY or JINA_API_KEY) or to searxng with web.search.url; see the README, "Web search and fetch"',
    };
  }
  if (search.provider !== "searxng" && search.problem !== null) {
    return {
      status: "fail",
      name: "web",
      detail: search.problem,
      hint: `set ${search.variable}, or remove web.search to turn web_search off`,
    };
  }
  return {
    status: "ok",
    name: "web",
    detail:
      search.provider === "searxng"
        ? `web_search through the SearXNG instance ${new URL(search.url).origin}`
        : `web_search through ${search.provider}; ${search.variable} is set`,
  };
}

function checkFetch(config: Config): CheckResult {
  const fetch = config.web.fetch;
  if (fetch === null) {
    return { status: "skip", name: "web", detail: "web_fetch is off (web.fetch.enabled: false)" };
  }
  const allowed =
    fetch.allowHosts.length === 0
      ? "public addresses only"
      : `public addresses and ${fetch.allowHosts.join(", ")}`;
  const approval = config.web.askApproval ? "each call asks for approval" : "no approval asked";
  return {
    status: "ok",
    name: "web",
    detail: `web_fetch: ${allowed}; at most ${toSize(fetch.maxBytes)}, ${fetch.timeoutMs / 1000} s, ${fetch.maxRedirects} redirects; ${approval}`,
  };
}

function toSize(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return Number.isInteger(mib) ? `${mib} MiB` : `${bytes} bytes`;
}

/**
 * `doctor --live`: one real search through the configured provider (it costs one search of
 * the plan's quota, so it runs only when asked).
 */
export async function checkSearchLive(config: Config, timeoutMs: number): Promise<CheckResult> {
  const search = toWebTools(config.web).search;
  if (search === null) {
    return { status: "skip", name: "live", detail: "web_search: no usable search provider" };
  }
  const outcome = await search.search("cursor-byok doctor", {
    count: 1,
    signal: AbortSignal.timeout(timeoutMs),
  });
  return outcome.type === "results"
    ? {
        status: "ok",
        name: "live",
        detail: `web_search: ${search.provider} answered (${outcome.hits.length} result${outcome.hits.length === 1 ? "" : "s"})`,
      }
    : {
        status: "fail",
        name: "live",
        detail: `web_search: ${outcome.message}`,
        hint: "check the key variable and the provider's dashboard (plan, quota)",
      };
}
