import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { toInflatingPdf } from "../testing/inflating-pdf.ts";
import { toMinimalPdf } from "../testing/minimal-pdf.ts";
import { type ConvertJob, createConverter } from "./convert-in-worker.ts";
import type { Readable } from "./to-readable.ts";

const URL_BASE = "http://page.test/";

function html(body: string): ConvertJob {
  return {
    body: Buffer.from(`<html><head><title>T</title></head><body>${body}</body></html>`),
    contentType: "text/html",
    url: URL_BASE,
    maxChars: 50_000,
  };
}

function pdf(body: Buffer): ConvertJob {
  return { body, contentType: "application/pdf", url: URL_BASE, maxChars: 50_000 };
}

/**
 * Runs `work` while a 20 ms interval timer measures how late it fires: the largest gap between
 * two ticks says how long the event loop was blocked.
 */
async function timed(
  work: () => Promise<Readable>,
): Promise<{ result: Readable; ms: number; worstGapMs: number }> {
  let last = performance.now();
  let worstGapMs = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    worstGapMs = Math.max(worstGapMs, now - last);
    last = now;
  }, 20);
  const start = performance.now();
  try {
    const result = await work();
    const end = performance.now();
    worstGapMs = Math.max(worstGapMs, end - last);
    return { result, ms: end - start, worstGapMs };
  } finally {
    clearInterval(ticker);
  }
}

function messageOf(result: Readable): string {
  assert.equal(result.type, "unsupported", "expected an error result");
  return result.type === "unsupported" ? result.message : "";
}

describe("conversion in a worker", () => {
  test("deeply nested HTML converts quickly without blocking the event loop", async () => {
    const convert = createConverter({ timeoutMs: 20_000, heapMb: 256, concurrency: 2 });
    for (const depth of [4_000, 10_000]) {
      const words = "hello world ".repeat(50);
      const job = html(`${"<div>".repeat(depth)}<p>${words}</p>${"</div>".repeat(depth)}`);
      const { result, ms, worstGapMs } = await timed(() => convert(job));
      assert.equal(result.type, "text", `depth ${depth}`);
      assert.match(result.type === "text" ? result.text : "", /hello world/);
      assert.ok(ms < 10_000, `depth ${depth} took ${ms} ms`);
      assert.ok(worstGapMs < 2_000, `the event loop was blocked for ${worstGapMs} ms`);
    }
  });

  test("a page that takes too long is stopped at the deadline with an error result", async () => {
    // 700,000 empty elements (4.9 MB): parsing alone takes seconds.
    const convert = createConverter({ timeoutMs: 500, heapMb: 512, concurrency: 2 });
    const { result, ms, worstGapMs } = await timed(() =>
      convert(html(`<p>hi</p>${"<i></i>".repeat(700_000)}`)),
    );
    assert.match(messageOf(result), /^the page took too long to convert \(more than 0\.5 s\)/);
    assert.ok(ms < 10_000, `took ${ms} ms`);
    assert.ok(worstGapMs < 2_000, `the event loop was blocked for ${worstGapMs} ms`);
  });

  test("a page that needs more memory than the heap cap is stopped with an error result", async () => {
    const convert = createConverter({ timeoutMs: 60_000, heapMb: 16, concurrency: 2 });
    const { result, ms } = await timed(() =>
      convert(html(`<p>hi</p>${"<i></i>".repeat(700_000)}`)),
    );
    assert.match(
      messageOf(result),
      /^the page took too much memory to convert \(more than 16 MiB\)/,
    );
    assert.ok(ms < 30_000, `took ${ms} ms`);
  });

  test("a PDF that inflates past the budget is refused quickly", async () => {
    const convert = createConverter({ timeoutMs: 20_000, heapMb: 256, concurrency: 2 });
    const bomb = toInflatingPdf(200 * 1024 * 1024);
    assert.ok(bomb.length < 400_000, `${bomb.length} bytes`);
    const { result, ms, worstGapMs } = await timed(() => convert(pdf(bomb)));
    assert.match(messageOf(result), /inflates to more than 64 MiB/);
    assert.ok(ms < 10_000, `took ${ms} ms`);
    assert.ok(worstGapMs < 2_000, `the event loop was blocked for ${worstGapMs} ms`);
  });

  test("a PDF within the inflate budget but slow to read is stopped at the deadline", async () => {
    const convert = createConverter({ timeoutMs: 1_000, heapMb: 256, concurrency: 2 });
    const slow = toInflatingPdf(40 * 1024 * 1024);
    const { result, ms, worstGapMs } = await timed(() => convert(pdf(slow)));
    assert.match(messageOf(result), /^the page took too long to convert/);
    assert.ok(ms < 10_000, `took ${ms} ms`);
    assert.ok(worstGapMs < 2_000, `the event loop was blocked for ${worstGapMs} ms`);
  });

  test("canceling stops a running conversion and frees waiting ones", async () => {
    const convert = createConverter({ timeoutMs: 60_000, heapMb: 256, concurrency: 1 });
    const controller = new AbortController();
    const slow = pdf(toInflatingPdf(40 * 1024 * 1024));
    // The second waits for the only slot; canceling frees it without running.
    const { result, ms } = await timed(async () => {
      const first = convert(slow, controller.signal);
      const second = convert(pdf(toMinimalPdf([["waiting"]])), controller.signal);
      // Cancel while the first runs (it needs seconds); the outcome is the same whenever.
      setTimeout(() => controller.abort(), 300);
      assert.equal(messageOf(await second), "the fetch was canceled");
      return first;
    });
    assert.equal(messageOf(result), "the fetch was canceled");
    assert.ok(ms < 10_000, `took ${ms} ms`);
    // Canceled before the slot was handed over: nothing runs.
    const early = new AbortController();
    const pending = convert(slow, early.signal);
    early.abort();
    assert.equal(messageOf(await pending), "the fetch was canceled");
  });

  test("ordinary pages and PDFs convert; text stays on the calling thread", async () => {
    const convert = createConverter({ timeoutMs: 20_000, heapMb: 256, concurrency: 1 });
    const [page, doc, text] = await Promise.all([
      convert(html("<article><h1>Title</h1><p>Body text of the page.</p></article>")),
      convert(pdf(toMinimalPdf([["First page"], ["Second page"]]))),
      convert({
        body: Buffer.from("plain"),
        contentType: "text/plain",
        url: URL_BASE,
        maxChars: 10,
      }),
    ]);
    assert.match(page.type === "text" ? page.text : "", /Body text of the page/);
    assert.match(doc.type === "text" ? doc.text : "", /## Page 2\n\nSecond page/);
    assert.equal(text.type === "text" ? text.text : "", "plain");
  });

  test("one converter goes on after a canceled job, reusing its workers", async () => {
    const convert = createConverter({ timeoutMs: 20_000, heapMb: 256, concurrency: 1 });
    const controller = new AbortController();
    const running = convert(pdf(toInflatingPdf(40 * 1024 * 1024)), controller.signal);
    setTimeout(() => controller.abort(), 200);
    assert.equal(messageOf(await running), "the fetch was canceled");
    for (const word of ["first", "second", "third"]) {
      const page = await convert(
        html(`<article><h1>T</h1><p>The ${word} page body.</p></article>`),
      );
      assert.match(page.type === "text" ? page.text : "", new RegExp(`The ${word} page body`));
    }
  });
});
