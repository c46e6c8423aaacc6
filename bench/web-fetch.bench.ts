/**
 * `npm run bench:web`: what `web_fetch` costs the server per page, end to end (guarded GET from a
 * local server, HTML → Readability → Markdown, budget cut), for article pages of about 20 KB,
 * 200 KB and 2 MB of HTML, and what a repeat of the same URL costs (the cache). Printed, not
 * asserted.
 */
import { performance } from "node:perf_hooks";
import { createWebFetch, DEFAULT_FETCH_OPTIONS, type Resolve } from "../src/web/index.ts";
import { startFakeWebServer } from "../src/web/testing/fake-web-server.ts";

const SIZES = [20_000, 200_000, 2_000_000];
const RUNS = 15;

const resolve: Resolve = async () => [{ address: "127.0.0.1", family: 4 }];

function toArticle(bytes: number): string {
  const paragraph =
    "<p>Streams move data in chunks so that a program never holds the whole input in memory; " +
    'back-pressure keeps a fast producer from flooding a slow consumer. See <a href="/docs">the docs</a>.</p>\n';
  const nav = '<nav><a href="/">Home</a> <a href="/blog">Blog</a> <a href="/about">About</a></nav>';
  const count = Math.max(1, Math.round(bytes / paragraph.length));
  return `<!doctype html><html><head><title>Bench</title></head><body>${nav}<main><article><h1>Bench</h1>${paragraph.repeat(count)}</article></main><footer>footer</footer></body></html>`;
}

const pages = new Map(SIZES.map((size) => [`/page-${size}`, toArticle(size)]));
const server = await startFakeWebServer((request, response) => {
  response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
  response.end(pages.get(request.url.split("?")[0] ?? "") ?? "");
});

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

console.log(`web_fetch, median of ${RUNS} runs (Node ${process.version})`);
// One fetcher, as the server has: its conversion workers are reused from page to page.
const fetcher = createWebFetch({ ...DEFAULT_FETCH_OPTIONS, allowHosts: ["bench.test"], resolve });
for (const size of SIZES) {
  const times: number[] = [];
  let chars = 0;
  let cut = "";
  for (let run = 0; run < RUNS; run += 1) {
    const started = performance.now();
    const outcome = await fetcher.fetch(`http://bench.test:${server.port}/page-${size}?run=${run}`);
    times.push(performance.now() - started);
    if (outcome.type !== "page") throw new Error(outcome.message);
    chars = outcome.text.length;
    cut = outcome.cut ?? "";
  }
  const html = pages.get(`/page-${size}`)?.length ?? 0;
  console.log(
    `  ${String(html).padStart(9)} bytes of HTML: ${median(times).toFixed(1).padStart(7)} ms, ${chars} characters to the model${cut === "" ? "" : " (cut)"}`,
  );
}
const web = createWebFetch({ ...DEFAULT_FETCH_OPTIONS, allowHosts: ["bench.test"], resolve });
const url = `http://bench.test:${server.port}/page-200000`;
await web.fetch(url);
const hits: number[] = [];
for (let run = 0; run < RUNS; run += 1) {
  const started = performance.now();
  await web.fetch(url);
  hits.push(performance.now() - started);
}
console.log(`  repeat of a cached URL: ${median(hits).toFixed(3)} ms`);
await server.close();
