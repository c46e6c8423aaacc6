import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ConfigFileError } from "./config-file-error.ts";
import { toConfig } from "./load-config.ts";
import { toStarterConfig } from "./starter.ts";
import type { Config } from "./types.ts";

const FILE = "/etc/cursor-byok/config.yaml";

function load(text: string | undefined, env: Record<string, string> = {}): Config {
  return toConfig(text, {
    location: { path: FILE, namedBy: undefined },
    cwd: "/work",
    env,
    platform: "linux",
    homeDir: "/home/me",
  });
}

function errorOf(text: string, env: Record<string, string> = {}): string {
  try {
    load(text, env);
  } catch (error) {
    assert.ok(error instanceof ConfigFileError);
    return error.message.replace(FILE, "FILE");
  }
  return assert.fail("the configuration was accepted");
}

describe("the web section", () => {
  test("absent: no search (not offered), fetch on with the default limits, approval asked", () => {
    const { web } = load(undefined);
    assert.equal(web.search, null);
    assert.deepEqual(web.fetch, {
      maxBytes: 5 * 1024 * 1024,
      timeoutMs: 30_000,
      maxRedirects: 5,
      maxCharacters: 50_000,
      allowHosts: [],
    });
    assert.equal(web.askApproval, true);
  });

  test("a keyed provider reads its usual key variable, or the one named", () => {
    const brave = load("web:\n  search:\n    provider: brave\n", { BRAVE_API_KEY: "bk" }).web
      .search;
    assert.ok(brave?.provider === "brave");
    assert.equal(brave.variable, "BRAVE_API_KEY");
    assert.equal(brave.apiKey?.reveal(), "bk");
    assert.equal(brave.problem, null);
    assert.equal(brave.timeoutMs, 15_000);
    const exa = load(
      "web:\n  search:\n    provider: exa\n    apiKeyEnv: MY_EXA\n    timeoutSeconds: 5\n",
      {
        MY_EXA: "ek",
      },
    ).web.search;
    assert.ok(exa?.provider === "exa");
    assert.equal(exa.apiKey?.reveal(), "ek");
    assert.equal(exa.timeoutMs, 5_000);
  });

  test("a missing key is a problem with line and column, not a crash, and no key is echoed", () => {
    const search = load("web:\n  search:\n    provider: tavily\n").web.search;
    assert.ok(search?.provider === "tavily");
    assert.equal(search.apiKey, null);
    assert.equal(
      search.problem?.replace(FILE, "FILE"),
      "FILE:3:15: web.search.provider: environment variable TAVILY_API_KEY is not set; it must hold the tavily API key",
    );
  });

  test("searxng needs its instance URL and takes no key", () => {
    const search = load(
      "web:\n  search:\n    provider: searxng\n    url: https://searx.example.org\n",
    ).web.search;
    assert.deepEqual(search, {
      provider: "searxng",
      url: "https://searx.example.org",
      timeoutMs: 15_000,
      problem: null,
    });
    assert.equal(
      errorOf("web:\n  search:\n    provider: searxng\n"),
      "FILE:3:15: web.search.provider: searxng needs web.search.url, the address of your instance",
    );
    assert.equal(
      errorOf("web:\n  search:\n    provider: searxng\n    url: ftp://x\n"),
      "FILE:4:10: web.search.url: must be an http or https URL",
    );
  });

  test("a URL with a user name or password is refused, without echoing it", () => {
    for (const url of ["http://admin:hunter2@127.0.0.1:8888", "https://admin@searx.example.org"]) {
      const message = errorOf(`web:\n  search:\n    provider: searxng\n    url: ${url}\n`);
      assert.match(
        message,
        /^FILE:4:10: web\.search\.url: must not contain a user name or password/,
      );
      assert.doesNotMatch(message, /admin|hunter2/);
    }
    assert.match(
      errorOf("web:\n  search:\n    provider: brave\n    url: https://u:p@proxy.example\n"),
      /web\.search\.url: must not contain a user name or password/,
    );
  });

  test("time limits beyond what a timer can hold are refused", () => {
    assert.equal(
      errorOf("web:\n  fetch:\n    timeoutSeconds: 2147484\n"),
      "FILE:3:21: web.fetch.timeoutSeconds: must be at most 2147483 seconds (about 24 days)",
    );
    assert.equal(
      errorOf(
        "web:\n  search:\n    provider: searxng\n    url: http://s.example\n    timeoutSeconds: 1e12\n",
      ),
      "FILE:5:21: web.search.timeoutSeconds: must be at most 2147483 seconds (about 24 days)",
    );
    assert.equal(
      load("web:\n  fetch:\n    timeoutSeconds: 2147483\n").web.fetch?.timeoutMs,
      2_147_483_000,
    );
  });

  test("fetch limits, allow-list and approval are read and validated", () => {
    const { web } = load(
      "web:\n  askApproval: false\n  fetch:\n    maxBytes: 1048576\n    timeoutSeconds: 10\n    maxRedirects: 2\n    maxCharacters: 20000\n    allowHosts: [wiki.corp.example, 10.20.0.0/16]\n",
    );
    assert.equal(web.askApproval, false);
    assert.deepEqual(web.fetch, {
      maxBytes: 1_048_576,
      timeoutMs: 10_000,
      maxRedirects: 2,
      maxCharacters: 20_000,
      allowHosts: ["wiki.corp.example", "10.20.0.0/16"],
    });
    assert.equal(load("web:\n  fetch:\n    enabled: false\n").web.fetch, null);
    assert.equal(
      errorOf("web:\n  fetch:\n    allowHosts: [ok.example, 10.0.0.0/99]\n"),
      "FILE:3:30: web.fetch.allowHosts[1]: must be a host name, an IP address or a CIDR range (e.g. 10.0.0.0/8)",
    );
    assert.equal(
      errorOf("web:\n  search:\n    provider: google\n"),
      "FILE:3:15: web.search.provider: must be one of brave, tavily, exa, searxng, jina",
    );
    assert.equal(
      errorOf("web:\n  fetch:\n    maxSize: 3\n"),
      "FILE:3:5: web.fetch.maxSize: unknown field (expected one of enabled, maxBytes, timeoutSeconds, maxRedirects, maxCharacters, allowHosts)",
    );
  });

  test("the starter file's commented web section is valid once uncommented", () => {
    const starter = toStarterConfig({ dataDirectory: "/data" });
    const lines = starter.split("\n");
    const start = lines.indexOf("# web:");
    assert.ok(start > 0);
    const block = [];
    for (const line of lines.slice(start)) {
      if (!line.startsWith("# ") || line.trim() === "#") break;
      block.push(line.slice(2));
    }
    const uncommented = [
      ...lines.slice(0, start),
      ...block,
      ...lines.slice(start + block.length),
    ].join("\n");
    const config = load(uncommented, { BRAVE_API_KEY: "k" });
    assert.equal(config.web.search?.provider, "brave");
    assert.equal(config.web.askApproval, true);
  });
});
