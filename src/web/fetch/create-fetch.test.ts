import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import { type FakeWebServer, startFakeWebServer } from "../testing/fake-web-server.ts";
import { toInflatingPdf } from "../testing/inflating-pdf.ts";
import { toMinimalPdf } from "../testing/minimal-pdf.ts";
import type { FetchOutcome } from "../types.ts";
import { createWebFetch, DEFAULT_FETCH_OPTIONS, type WebFetchOptions } from "./create-fetch.ts";
import type { Resolve } from "./http-get.ts";

const ARTICLE = `<!doctype html><html><head><title>Streams explained - Example Blog</title></head>
<body>
<nav><a href="/">Home</a> <a href="/archive">Archive</a> <a href="/subscribe">Subscribe to the newsletter</a></nav>
<header><div class="site-name">Example Blog</div></header>
<main><article>
<h1>Streams explained</h1>
<p>A stream moves data in chunks, so a program never holds the whole input in memory. ${"Back-pressure keeps a fast producer from flooding a slow consumer. ".repeat(6)}</p>
<h2>Reading</h2>
<p>Readable streams hand out chunks as they arrive; see <a href="/docs/readable">the readable docs</a>. ${"Each chunk is processed and released before the next. ".repeat(6)}</p>
<pre><code>for await (const chunk of stream) use(chunk);</code></pre>
</article></main>
<aside>Popular posts: nothing to see</aside>
<footer>Copyright 2025 Example Blog. All rights reserved.</footer>
<script>console.log("tracking")</script>
</body></html>`;

/** Test names resolve to the loopback server; everything else fails to resolve. */
const resolveTestNames: Resolve = async (host) => {
  if (host.endsWith(".test")) return [{ address: "127.0.0.1", family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
};

describe("web fetch", () => {
  let server: FakeWebServer;
  let clock = 1_000_000;
  // "/gate": answered only once the test opens the gate; "arrived" and "closed" report the
  // request reaching the server and its connection closing.
  let gate = Promise.withResolvers<void>();
  let arrived = Promise.withResolvers<void>();
  let closed = Promise.withResolvers<void>();
  before(async () => {
    server = await startFakeWebServer((request, response) => {
      const path = request.url;
      const redirect = /^\/hop\/(\d+)$/.exec(path);
      if (redirect !== null) {
        const left = Number(redirect[1]);
        response.writeHead(302, { location: left === 0 ? "/article" : `/hop/${left - 1}` });
        return response.end();
      }
      switch (path) {
        case "/article":
          response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
          return response.end(ARTICLE);
        case "/to-loopback":
          response.writeHead(301, { location: `http://127.0.0.1:${server.port}/secret` });
          return response.end();
        case "/to-metadata":
          response.writeHead(307, { location: "http://169.254.169.254/latest/meta-data/" });
          return response.end();
        case "/to-file":
          response.writeHead(302, { location: "file:///etc/passwd" });
          return response.end();
        case "/secret":
          response.writeHead(200, { "content-type": "text/plain" });
          return response.end("internal secret");
        case "/big":
          response.writeHead(200, { "content-type": "text/plain" });
          return response.end("x".repeat(10_000));
        case "/bomb":
          response.writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip" });
          return response.end(gzipSync(Buffer.alloc(50 * 1024 * 1024, 0x61)));
        case "/huge": {
          // 12,000 elements: past Readability's limit, so the fallback conversion runs.
          const rows = '<p>Row of the table of contents with a <a href="/x">link</a>.</p>\n'.repeat(
            6_000,
          );
          response.writeHead(200, { "content-type": "text/html" });
          return response.end(
            `<html><head><title>Huge</title></head><body><nav><a href="/">Site navigation</a></nav><main><h1>Huge page</h1>${rows}</main><footer>Site footer</footer></body></html>`,
          );
        }
        case "/long-text":
          response.writeHead(200, { "content-type": "text/markdown" });
          return response.end(`# Title\n\n${"word ".repeat(400)}`);
        case "/json":
          response.writeHead(200, { "content-type": "application/json" });
          return response.end('{"name":"cursor-byok","tags":["a","b"]}');
        case "/png":
          response.writeHead(200, { "content-type": "image/png" });
          return response.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]));
        case "/broken.pdf":
          response.writeHead(200, { "content-type": "application/pdf" });
          return response.end("%PDF-1.7 not really a PDF");
        case "/notes.pdf":
          response.writeHead(200, { "content-type": "application/pdf" });
          return response.end(
            toMinimalPdf([
              ["Release notes 4.2", "Streaming uploads (new)."],
              ["Page two: fixes."],
              ["Page three: credits."],
            ]),
          );
        case "/untyped-binary":
          response.writeHead(200, {});
          return response.end(Buffer.from([1, 2, 0, 4, 5]));
        case "/missing":
          response.writeHead(404, { "content-type": "text/html" });
          return response.end("<h1>Not found</h1>");
        case "/bomb.pdf":
          response.writeHead(200, { "content-type": "application/pdf" });
          return response.end(toInflatingPdf(100 * 1024 * 1024));
        case "/nested": {
          const depth = 3_000;
          response.writeHead(200, { "content-type": "text/html" });
          return response.end(
            `<html><body>${"<div>".repeat(depth)}<p>${"Deep text. ".repeat(40)}</p>${"</div>".repeat(depth)}</body></html>`,
          );
        }
        case "/hang":
          return; // never answers
        case "/gate":
          arrived.resolve();
          response.once("close", () => closed.resolve());
          void gate.promise.then(() => {
            response.writeHead(200, { "content-type": "text/plain" });
            response.end("through the gate");
          });
          return;
        case "/stall-body":
          response.writeHead(200, { "content-type": "text/plain" });
          response.write("the start, then nothing");
          return;
        case "/counted":
          response.writeHead(200, { "content-type": "text/plain" });
          return response.end(`call ${server.requests.filter((r) => r.url === "/counted").length}`);
        default:
          response.writeHead(500);
          return response.end();
      }
    });
  });
  after(() => server.close());

  const fetcher = (overrides: Partial<WebFetchOptions> = {}) =>
    createWebFetch({
      ...DEFAULT_FETCH_OPTIONS,
      allowHosts: ["site.test"],
      resolve: resolveTestNames,
      now: () => clock,
      ...overrides,
    });
  const site = (path: string) => `http://site.test:${server.port}${path}`;
  const hits = (path: string) => server.requests.filter((request) => request.url === path).length;
  const errorOf = (outcome: FetchOutcome) => (outcome.type === "error" ? outcome.message : "");

  test("an HTML article becomes Markdown with the main text and without navigation", async () => {
    const outcome = await fetcher().fetch(site("/article"));
    assert.equal(outcome.type, "page");
    if (outcome.type !== "page") return;
    assert.equal(outcome.title, "Streams explained - Example Blog");
    assert.equal(outcome.contentType, "text/html");
    assert.equal(outcome.cut, null);
    assert.match(outcome.text, /A stream moves data in chunks/);
    assert.match(outcome.text, /## Reading/);
    assert.match(outcome.text, /\[the readable docs\]\(http:\/\/site\.test:\d+\/docs\/readable\)/);
    assert.match(outcome.text, /```\nfor await \(const chunk of stream\) use\(chunk\);\n```/);
    for (const furniture of [
      "Subscribe to the newsletter",
      "Archive",
      "Copyright",
      "tracking",
      "Popular posts",
    ]) {
      assert.ok(!outcome.text.includes(furniture), `"${furniture}" should not be in the text`);
    }
  });

  test("redirect chains are followed up to the limit", async () => {
    const outcome = await fetcher().fetch(site("/hop/4"));
    assert.equal(outcome.type, "page");
    assert.equal(outcome.type === "page" ? outcome.finalUrl : "", site("/article"));
    assert.equal(errorOf(await fetcher().fetch(site("/hop/5"))), "more than 5 redirects");
    assert.equal(
      errorOf(await fetcher({ maxRedirects: 1 }).fetch(site("/hop/1"))),
      "more than 1 redirects",
    );
  });

  test("a redirect to 127.0.0.1 is refused and never followed", async () => {
    const outcome = await fetcher().fetch(site("/to-loopback"));
    assert.equal(errorOf(outcome), "refused: 127.0.0.1 resolves to 127.0.0.1, a loopback address");
    assert.equal(hits("/secret"), 0);
  });

  test("redirects to the metadata address or to file: are refused", async () => {
    assert.equal(
      errorOf(await fetcher().fetch(site("/to-metadata"))),
      "refused: 169.254.169.254 resolves to 169.254.169.254, a link-local address (cloud metadata lives here)",
    );
    assert.equal(
      errorOf(await fetcher().fetch(site("/to-file"))),
      "only http and https URLs are fetched, not file",
    );
  });

  test("a name that resolves to loopback (DNS rebinding) and loopback literals are refused", async () => {
    assert.equal(
      errorOf(await fetcher().fetch(`http://rebind.test:${server.port}/secret`)),
      "refused: rebind.test resolves to 127.0.0.1, a loopback address",
    );
    assert.equal(
      errorOf(await fetcher().fetch(`http://127.0.0.1:${server.port}/secret`)),
      "refused: 127.0.0.1 resolves to 127.0.0.1, a loopback address",
    );
    assert.equal(
      errorOf(await fetcher().fetch(`http://[::1]:${server.port}/secret`)),
      "refused: ::1 resolves to ::1, a loopback address",
    );
    assert.equal(hits("/secret"), 0);
  });

  test("with the system resolver and no allow-list, the local server cannot be reached", async () => {
    const outcome = await createWebFetch(DEFAULT_FETCH_OPTIONS).fetch(
      `http://localhost:${server.port}/secret`,
    );
    assert.match(
      errorOf(outcome),
      /^refused: localhost resolves to (127\.0\.0\.1|::1), a loopback address$/,
    );
    assert.equal(hits("/secret"), 0);
  });

  test("an oversized body is cut at the byte limit, compressed bodies too", async () => {
    const outcome = await fetcher({ maxBytes: 1024 }).fetch(site("/big"));
    assert.equal(outcome.type === "page" ? outcome.text.length : -1, 1024);
    assert.equal(
      outcome.type === "page" ? outcome.cut : null,
      "the response was cut at 1 KiB (the size limit)",
    );
    // 50 MiB of gzip-compressed text: decoding stops at the limit.
    const bomb = await fetcher({ maxBytes: 64 * 1024, maxChars: 100_000 }).fetch(site("/bomb"));
    assert.equal(bomb.type === "page" ? bomb.text.length : -1, 64 * 1024);
    assert.equal(
      bomb.type === "page" ? bomb.cut : null,
      "the response was cut at 64 KiB (the size limit)",
    );
  });

  test("a very large page skips Readability, keeps out the furniture and is cut early", async () => {
    const outcome = await fetcher({ maxChars: 2_000 }).fetch(site("/huge"));
    assert.ok(outcome.type === "page");
    assert.equal(outcome.title, "Huge");
    assert.match(
      outcome.text,
      /^# Huge page\n\nRow of the table of contents with a \[link\]\(http:\/\/site\.test:\d+\/x\)\./,
    );
    assert.ok(!outcome.text.includes("Site navigation") && !outcome.text.includes("Site footer"));
    assert.equal(outcome.text.length, 2_000);
    assert.match(
      outcome.cut ?? "",
      /^the text was cut at character 2000 of about \d{6}; the rest of the page is not shown$/,
    );
  });

  test("long text is cut to the model's budget, saying where", async () => {
    const outcome = await fetcher({ maxChars: 100 }).fetch(site("/long-text"));
    assert.equal(outcome.type === "page" ? outcome.text.length : -1, 100);
    assert.equal(
      outcome.type === "page" ? outcome.cut : null,
      "the text was cut at character 100 of 2009; the rest of the page is not shown",
    );
  });

  test("a server that never answers, or stalls mid-body, times out", async () => {
    assert.equal(
      errorOf(await fetcher({ timeoutMs: 300 }).fetch(site("/hang"))),
      "timed out after 0.3 s",
    );
    assert.equal(
      errorOf(await fetcher({ timeoutMs: 300 }).fetch(site("/stall-body"))),
      "timed out after 0.3 s",
    );
  });

  test("JSON comes back as it is; binary types are refused", async () => {
    const json = await fetcher().fetch(site("/json"));
    assert.equal(json.type === "page" ? json.text : "", '{"name":"cursor-byok","tags":["a","b"]}');
    assert.equal(
      errorOf(await fetcher().fetch(site("/png"))),
      "unsupported content type image/png; web_fetch reads HTML, text, JSON and PDF",
    );
    assert.match(
      errorOf(await fetcher().fetch(site("/untyped-binary"))),
      /^unsupported content type \(binary data/,
    );
  });

  test("a PDF becomes its text page by page; pages past the budget are not read", async () => {
    const whole = await fetcher().fetch(site("/notes.pdf"));
    assert.ok(whole.type === "page");
    assert.equal(whole.contentType, "application/pdf");
    assert.equal(
      whole.text,
      "## Page 1\n\nRelease notes 4.2\nStreaming uploads (new).\n\n## Page 2\n\nPage two: fixes.\n\n## Page 3\n\nPage three: credits.",
    );
    assert.equal(whole.cut, null);
    const part = await fetcher({ maxChars: 30 }).fetch(site("/notes.pdf"));
    assert.ok(part.type === "page");
    assert.match(
      part.cut ?? "",
      /^only pages 1 to 1 of 3 were read; the text was cut at character 30 of \d+/,
    );
    assert.match(
      errorOf(await fetcher().fetch(site("/broken.pdf"))),
      /^the PDF could not be read \(/,
    );
  });

  test("HTTP errors and unresolvable hosts are one-line errors", async () => {
    assert.equal(
      errorOf(await fetcher().fetch(site("/missing"))),
      `HTTP 404 Not Found from ${site("/missing")}`,
    );
    assert.equal(
      errorOf(await fetcher().fetch("http://no-such-host.invalid/")),
      "no-such-host.invalid could not be resolved (ENOTFOUND)",
    );
    assert.equal(errorOf(await fetcher().fetch("not a url")), '"not a url" is not a valid URL');
  });

  test("the same URL is fetched once while cached, again after the cache time", async () => {
    const web = fetcher({ cacheTtlMs: 60_000 });
    const first = await web.fetch(site("/counted"));
    const second = await web.fetch(site("/counted"));
    assert.deepEqual(second, first);
    assert.equal(hits("/counted"), 1);
    clock += 60_000;
    const third = await web.fetch(site("/counted"));
    assert.equal(hits("/counted"), 2);
    assert.equal(third.type === "page" ? third.text : "", "call 2");
  });

  test("one caller's cancel does not fail another caller waiting for the same fetch", async () => {
    gate = Promise.withResolvers();
    arrived = Promise.withResolvers();
    const web = fetcher();
    const a = new AbortController();
    const b = new AbortController();
    const first = web.fetch(site("/gate"), { signal: a.signal });
    const second = web.fetch(site("/gate"), { signal: b.signal });
    await arrived.promise;
    a.abort();
    assert.equal(errorOf(await first), "the fetch was canceled");
    gate.resolve();
    const outcome = await second;
    assert.equal(outcome.type === "page" ? outcome.text : errorOf(outcome), "through the gate");
    assert.equal(hits("/gate"), 1);
  });

  test("when every caller cancels, the shared fetch stops and the next caller starts anew", async () => {
    gate = Promise.withResolvers();
    arrived = Promise.withResolvers();
    closed = Promise.withResolvers();
    const web = fetcher();
    const before = hits("/gate");
    const callers = [new AbortController(), new AbortController()];
    const outcomes = callers.map((caller) => web.fetch(site("/gate"), { signal: caller.signal }));
    await arrived.promise;
    for (const caller of callers) caller.abort();
    for (const outcome of outcomes) assert.equal(errorOf(await outcome), "the fetch was canceled");
    await closed.promise; // the connection was dropped
    gate.resolve();
    const again = await web.fetch(site("/gate"));
    assert.equal(again.type === "page" ? again.text : errorOf(again), "through the gate");
    assert.equal(hits("/gate"), before + 2);
  });

  test("pages built to be costly to convert come back in bounded time", async () => {
    const started = performance.now();
    const nested = await fetcher().fetch(site("/nested"));
    assert.match(nested.type === "page" ? nested.text : errorOf(nested), /Deep text\./);
    assert.match(
      errorOf(await fetcher().fetch(site("/bomb.pdf"))),
      /^the PDF was not read: its compressed content inflates to more than 64 MiB$/,
    );
    const elapsed = performance.now() - started;
    assert.ok(elapsed < 10_000, `took ${elapsed} ms`);
  });
});
