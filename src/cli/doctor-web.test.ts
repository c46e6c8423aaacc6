import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type Config, toConfig } from "../config/index.ts";
import { sendJson, startFakeWebServer } from "../web/testing/fake-web-server.ts";
import { toResultText } from "./doctor.ts";
import { checkSearchLive, checkWeb } from "./doctor-web.ts";
import { toStartProblems } from "./serve.ts";
import { toWebSummary, toWebTools } from "./web-tools.ts";

const FILE = "/home/me/.config/cursor-byok/config.yaml";

function load(text: string | undefined, env: Record<string, string> = {}): Config {
  return toConfig(text, {
    location: { path: FILE, namedBy: undefined },
    cwd: "/work",
    env,
    platform: "linux",
    homeDir: "/home/me",
  });
}

const report = (config: Config, env: Record<string, string> = {}) =>
  checkWeb(config, env).map(toResultText).join("");

describe("doctor: web", () => {
  test("no provider: web_search is not offered, and the hint says how to turn it on", () => {
    const out = report(load(undefined));
    assert.match(
      out,
      /^skip {2}web {7}web_search is not offered: no search provider is configured\n/,
    );
    assert.match(out, /fix: set web\.search\.provider to brave, tavily, exa or jina/);
    assert.match(
      out,
      /ok {4}web {7}web_fetch: public addresses only; at most 5 MiB, 30 s, 5 redirects; each call asks for approval\n/,
    );
  });

  test("a search key in the environment without a provider gets a pointed hint", () => {
    const out = report(load(undefined), { TAVILY_API_KEY: "tvly-secret-value" });
    assert.match(
      out,
      /fix: TAVILY_API_KEY \(provider: tavily\) is set; choose it with web\.search\.provider/,
    );
    assert.ok(!out.includes("tvly-secret-value"));
  });

  test("a chosen provider without its key fails doctor and stops serve", () => {
    const config = load("web:\n  search:\n    provider: brave\n");
    const out = report(config);
    assert.match(
      out,
      /^FAIL {2}web {7}.*web\.search\.provider: environment variable BRAVE_API_KEY is not set/,
    );
    assert.match(out, /fix: set BRAVE_API_KEY, or remove web\.search to turn web_search off/);
    assert.deepEqual(
      toStartProblems(config).map((problem) => problem.replace(FILE, "FILE")),
      [
        "FILE:3:15: web.search.provider: environment variable BRAVE_API_KEY is not set; it must hold the brave API key",
      ],
    );
  });

  test("a provider with its key is ok, and the key is never shown", () => {
    const config = load("web:\n  search:\n    provider: exa\n", {
      EXA_API_KEY: "exa-secret-value",
    });
    const out = report(config, { EXA_API_KEY: "exa-secret-value" });
    assert.match(out, /^ok {4}web {7}web_search through exa; EXA_API_KEY is set\n/);
    assert.ok(!out.includes("exa-secret-value"));
    assert.equal(
      toWebSummary(config.web),
      "web_search via exa; web_fetch on (public addresses only); each call asks for approval",
    );
  });
});

test("doctor shows only the origin of the SearXNG instance", () => {
  const out = report(
    load(
      "web:\n  search:\n    provider: searxng\n    url: https://searx.example.org/s/?token=t0ps3cret\n",
    ),
  );
  assert.match(
    out,
    /^ok {4}web {7}web_search through the SearXNG instance https:\/\/searx\.example\.org\n/,
  );
  assert.ok(!out.includes("t0ps3cret"));
});

describe("toWebTools", () => {
  test("the configured SearXNG instance is what web_search asks", async () => {
    const instance = await startFakeWebServer((_request, response) =>
      sendJson(response, 200, {
        results: [{ url: "https://a.example/", title: "A", content: "a" }],
      }),
    );
    try {
      const config = load(
        `web:\n  search:\n    provider: searxng\n    url: ${instance.url}\n  fetch:\n    enabled: false\n`,
      );
      const tools = toWebTools(config.web);
      assert.equal(tools.fetch, null);
      assert.deepEqual(await tools.search?.search("q", { count: 3 }), {
        type: "results",
        provider: "searxng",
        hits: [{ title: "A", url: "https://a.example/", snippet: "a" }],
      });
      assert.equal(
        new URL(instance.requests[0]?.url ?? "", instance.url).searchParams.get("format"),
        "json",
      );
    } finally {
      await instance.close();
    }
  });

  test("without a provider there is no search; a provider without its key is not built", () => {
    assert.equal(toWebTools(load(undefined).web).search, null);
    assert.equal(toWebTools(load("web:\n  search:\n    provider: jina\n").web).search, null);
    assert.notEqual(toWebTools(load(undefined).web).fetch, null);
  });
});

describe("doctor --live: web", () => {
  test("one search through the configured provider; a refusal fails with the provider's words", async () => {
    let answer: "ok" | "quota" = "ok";
    const brave = await startFakeWebServer((_request, response) =>
      answer === "ok"
        ? sendJson(response, 200, {
            web: { results: [{ title: "T", url: "https://t.example/", description: "d" }] },
          })
        : sendJson(response, 429, {
            error: { code: "RATE_LIMITED", detail: "Request rate limit exceeded for plan." },
          }),
    );
    try {
      const env = { BRAVE_API_KEY: "brave-live-key" };
      const config = load(`web:\n  search:\n    provider: brave\n    url: ${brave.url}\n`, env);
      assert.deepEqual(await checkSearchLive(config, 5_000), {
        status: "ok",
        name: "live",
        detail: "web_search: brave answered (1 result)",
      });
      answer = "quota";
      const failed = await checkSearchLive(config, 5_000);
      assert.equal(failed.status, "fail");
      assert.equal(
        failed.detail,
        "web_search: Brave Search quota or rate limit reached (HTTP 429 Too Many Requests): Request rate limit exceeded for plan.",
      );
      assert.equal(brave.requests[0]?.headers["x-subscription-token"], "brave-live-key");
    } finally {
      await brave.close();
    }
  });
});
