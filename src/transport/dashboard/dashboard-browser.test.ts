/**
 * The dashboard in Debian's Chromium (docs/dashboard.md), driven by playwright-core: a server
 * that ran real turns (the Cursor test client, a scripted provider on 127.0.0.1) behind an access
 * token; the page asks for the token, lists the conversations, opens one, shows a model call's
 * exact body and downloads it; every figure is checked against the store; a running turn updates
 * while the test holds its model reply; HTML in messages stays text; the CSP is never violated.
 * Screenshots of every page go to the test output directory printed below.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { type Browser, chromium, type Page } from "playwright-core";
import { createGate } from "../e2e/test-harness.ts";
import { ACCESS_TOKEN, type DashboardFixture, MODEL, startDashboardFixture } from "./testing.ts";
import { cachedShare, dollars, percent, tokens } from "./ui/format.js";

const CHROMIUM = "/usr/bin/chromium";
const SKIP =
  !existsSync(CHROMIUM) &&
  "not installed: chromium — Debian: apt-get install chromium (.ci/run installs it)";

const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const FIRST = "2d1c7a10-0000-4000-8000-00000000000a";
const HOSTILE = "2d1c7a10-0000-4000-8000-00000000000b";
const LIVE = "2d1c7a10-0000-4000-8000-00000000000c";
/** Makes the hostile reply longer than the page shows at first. */
const LONG_TAIL = "\nlong output line".repeat(1_500);
const LIVE_TEXT = "Streaming, then finished after the gate.";
const HOSTILE_TEXT = `Explain <img src=x onerror="window.__xss='img'"><script>window.__xss='script'</script> & "quotes"`;

/** Where screenshots go (kept after the run, for people and CI artefacts). */
export const SCREENSHOTS = join(tmpdir(), "cursor-byok-dashboard-screenshots");

describe("the dashboard in a real Chromium", { skip: SKIP, timeout: 180_000 }, () => {
  let fixture: DashboardFixture;
  let browser: Browser;
  let page: Page;
  let home: string;
  const problems: string[] = [];

  before(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    fixture = await startDashboardFixture();
    fixture.reply(
      {
        reasoning: "Look at the folder first.",
        text: "Let me look.",
        toolCalls: [{ id: "call_ls", name: "list_dir", arguments: { path: "." } }],
        usage: { prompt: 2400, completion: 40 },
      },
      { text: "The folder is empty.", usage: { prompt: 2500, completion: 12, cached: 2400 } },
      {
        text: `<b>bold?</b><script>window.__xss='reply'</script>${LONG_TAIL}`,
        chunkSize: 512,
        usage: { prompt: 50, completion: 9 },
      },
    );
    const client = fixture.client();
    for (const [conversationId, text] of [
      [FIRST, "What is in this folder?"],
      [HOSTILE, HOSTILE_TEXT],
    ] as const) {
      const result = await client.startTurn({ conversationId, text, modelId: MODEL }).done;
      assert.equal(result.error, undefined);
    }
    home = mkdtempSync(join(tmpdir(), "cursor-byok-chromium-"));
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      env: { ...process.env, HOME: home },
    });
    const context = await browser.newContext({ acceptDownloads: true });
    page = await context.newPage();
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    page.on("pageerror", (error) => problems.push(error.message));
    page.on("request", (request) => {
      if (!request.url().startsWith(fixture.server.url) && !request.url().startsWith("blob:")) {
        problems.push(`request outside the server: ${request.url()}`);
      }
    });
  });

  after(async () => {
    await browser?.close();
    await fixture?.close();
    if (home !== undefined) rmSync(home, { recursive: true, force: true });
    process.stdout.write(`dashboard screenshots: ${SCREENSHOTS}\n`);
  });

  const shoot = (name: string) =>
    page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });

  test("the page asks for the token, and the API refuses the page until it has it", async () => {
    const response = await page.goto(`${fixture.server.url}/ui/`);
    assert.equal(response?.status(), 200);
    const csp = response?.headers()["content-security-policy"] ?? "";
    assert.match(csp, /default-src 'none'; script-src 'self'/);
    await page.waitForSelector("form.token");
    assert.equal(await page.locator("#conversations").count(), 0);
    const refused = await page.evaluate(async () => (await fetch("/ui/api/conversations")).status);
    assert.equal(refused, 401);
    await shoot("0-token");
    await page.fill("#token", "not-the-token");
    await page.click("form.token button");
    await page.waitForSelector("#token-refused");
    assert.equal(
      await page.evaluate(() => sessionStorage.length),
      0,
      "a refused token is not kept",
    );
    await page.fill("#token", ACCESS_TOKEN);
    await page.click("form.token button");
    await page.waitForSelector("#conversations tbody tr");
    assert.ok(!page.url().includes(ACCESS_TOKEN), "the token is never in the URL");
    const kept = await page.evaluate(() => Object.values(sessionStorage));
    assert.deepEqual(kept, [ACCESS_TOKEN]);
  });

  test("the list shows every conversation with the store's figures", async () => {
    const stored = await fixture.store.listConversations();
    const rows = page.locator("#conversations tbody tr");
    assert.equal(await rows.count(), stored.total);
    assert.equal(await page.textContent("#total"), "2 conversations");
    for (const item of stored.items) {
      const row = page.locator(`tr[data-conversation="${item.conversationID}"]`);
      const cells = await row.locator("td").allTextContents();
      assert.deepEqual(cells, [
        item.title,
        item.model,
        item.status,
        String(item.turns),
        cells[4],
        tokens(item.usage.input + item.usage.cacheRead + item.usage.cacheWrite),
        tokens(item.usage.output),
        percent(cachedShare(item.usage)),
        dollars(item.usage.cost),
      ]);
    }
    await shoot("1-conversations");
  });

  test("search narrows the list", async () => {
    await page.fill("input[type=search]", "FOLDER");
    await page.click("form.search button");
    await page.locator("#total", { hasText: "matching" }).waitFor();
    assert.equal(await page.locator("#conversations tbody tr").count(), 1);
    await page.goto(`${fixture.server.url}/ui/#/conversations`);
    await page.waitForSelector(`tr[data-conversation="${HOSTILE}"]`);
  });

  test("a malformed address shows an error, and the page keeps working", async () => {
    await page.goto(`${fixture.server.url}/ui/#/c/%E0`);
    await page.locator("p.error", { hasText: "not valid" }).waitFor();
    await page.goto(`${fixture.server.url}/ui/#/conversations`);
    await page.waitForSelector(`tr[data-conversation="${FIRST}"]`);
  });

  test("list → conversation → a model call's exact body, viewed and downloaded", async () => {
    await page.click(`tr[data-conversation="${FIRST}"] a`);
    await page.waitForSelector("#calls tbody tr");
    const detail = await fixture.store.readConversationDetail(FIRST);
    assert.ok(detail !== null);
    const figure = (name: string) => page.textContent(`[data-figure="${name}"] dd`);
    assert.equal(await figure("cost"), dollars(detail.summary.usage.cost));
    assert.equal(await figure("cache-read"), tokens(detail.summary.usage.cacheRead));
    assert.equal(await figure("output"), tokens(detail.summary.usage.output));
    assert.equal(await figure("status"), "final");
    assert.equal(await page.locator("#failure").count(), 0);
    const messages = await fixture.store.listMessages(FIRST);
    assert.equal(await page.locator("#messages > li").count(), messages.length);
    assert.match((await page.textContent("#messages")) ?? "", /Look at the folder first\./);
    assert.equal(await page.locator("#operations tbody tr").count(), detail.operations.length);
    for (const call of detail.calls) {
      const row = page.locator(`tr[data-call="${call.callID}"]`);
      assert.equal(await row.locator("[data-in]").textContent(), tokens(call.usage?.input ?? 0));
      assert.equal(await row.locator("[data-cost]").textContent(), dollars(call.usage?.cost ?? 0));
      assert.match((await row.locator("[data-ttft]").textContent()) ?? "", /^\d+(\.\d+)? m?s$/);
    }
    await shoot("2-conversation");
    const call = detail.calls[1];
    assert.ok(call !== undefined);
    await page.click(`tr[data-call="${call.callID}"] button.view-body`);
    await page.waitForSelector("#request-body");
    const saved = await fixture.store.getLLMCall(call.callID);
    assert.equal(await page.textContent("#request-body"), saved?.request);
    await shoot("3-request-body");
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.click("#download-body"),
    ]);
    const file = join(home, "download.json");
    await download.saveAs(file);
    assert.equal(readFileSync(file, "utf8"), saved?.request);
  });

  test("HTML and script in messages and titles are shown as text, never run", async () => {
    await page.goto(`${fixture.server.url}/ui/#/conversations`);
    await page.waitForSelector(`tr[data-conversation="${HOSTILE}"]`);
    assert.equal(await page.textContent(`tr[data-conversation="${HOSTILE}"] a`), HOSTILE_TEXT);
    await page.click(`tr[data-conversation="${HOSTILE}"] a`);
    await page.waitForSelector("#messages li.role-assistant");
    assert.equal(await page.textContent("#title"), HOSTILE_TEXT);
    assert.equal(await page.locator("#messages img, #messages script, #messages b").count(), 0);
    assert.match((await page.textContent("#messages")) ?? "", /<b>bold\?<\/b><script>/);
    assert.equal(await page.evaluate(() => (globalThis as { __xss?: string }).__xss), undefined);
    const reply = page.locator("#messages li.role-assistant pre.text");
    assert.equal((await reply.textContent())?.length, 20_000);
    await page.click("#messages button.show-all");
    assert.equal(
      await reply.textContent(),
      `<b>bold?</b><script>window.__xss='reply'</script>${LONG_TAIL}`,
    );
    assert.equal(await page.evaluate(() => (globalThis as { __xss?: string }).__xss), undefined);
    await shoot("4-hostile-text");
  });

  test("a running turn updates live", async () => {
    const gate = createGate();
    fixture.reply({
      reply: { text: LIVE_TEXT, chunkSize: 10, usage: { prompt: 300, completion: 7 } },
      before: 3,
      gate: gate.promise,
    });
    const expected = fixture.requests + 1;
    const turn = fixture
      .client()
      .startTurn({ conversationId: LIVE, text: "Take your time.", modelId: MODEL });
    // The turn is running once its model request reached the provider (held at the gate).
    await fixture.received(expected);
    await page.goto(`${fixture.server.url}/ui/#/c/${LIVE}`);
    await page.waitForSelector('#summary[data-live="yes"]');
    assert.equal(await page.textContent('[data-figure="status"] dd'), "waiting_llm");
    assert.equal(await page.locator("#messages li.role-assistant").count(), 0);
    // What the model streamed so far shows below the history, not as a committed message.
    await page.waitForSelector("#pending pre.text");
    const streamed = (await page.textContent("#pending pre.text")) ?? "";
    assert.ok(streamed.length > 0 && LIVE_TEXT.startsWith(streamed), streamed);
    assert.ok(streamed.length < LIVE_TEXT.length);
    await shoot("5-live-running");
    gate.open();
    assert.equal((await turn.done).error, undefined);
    await page.waitForSelector('#summary[data-live="no"]');
    assert.equal(await page.textContent('[data-figure="status"] dd'), "final");
    assert.equal(await page.textContent("#messages li.role-assistant pre.text"), LIVE_TEXT);
    assert.equal(await page.locator("#pending").count(), 0);
    const [row] = (await fixture.store.readConversationDetail(LIVE))?.calls ?? [];
    assert.equal(await page.textContent(`tr[data-call="${row?.callID}"] td.status`), "committed");
    await shoot("6-live-done");
  });

  test("a failed turn shows why it failed", async () => {
    const FAILED = "2d1c7a10-0000-4000-8000-00000000000d";
    // No reply queued: the provider answers 500, and the turn fails with its message.
    const result = await fixture
      .client()
      .startTurn({ conversationId: FAILED, text: "This will fail.", modelId: MODEL }).done;
    assert.ok(result.error !== undefined || result.view.turnEnded);
    const detail = await fixture.store.readConversationDetail(FAILED);
    assert.ok(detail?.failure !== null && detail?.failure !== undefined);
    await page.goto(`${fixture.server.url}/ui/#/c/${FAILED}`);
    await page.waitForSelector("#failure");
    assert.equal(
      await page.textContent("#failure"),
      `The last turn failed (${detail.failure.reason}): ${detail.failure.message}`,
    );
    assert.equal(await page.textContent('[data-figure="status"] dd'), "failed");
    assert.match((await page.textContent(`tr[data-call] td.status`)) ?? "", /^failed$/);
    await shoot("7-failed-turn");
  });

  test("usage: charts and numbers equal the store's daily totals", async () => {
    await page.goto(`${fixture.server.url}/ui/#/usage`);
    await page.waitForSelector("#by-model tbody tr");
    assert.equal(await page.locator(".charts canvas").count(), 4);
    const rows = await fixture.store.listUsage();
    const cost = rows.reduce((sum, row) => sum + row.usage.cost, 0);
    const calls = rows.reduce((sum, row) => sum + row.calls, 0);
    const modelRow = page.locator("#by-model tbody tr");
    assert.equal(await modelRow.count(), 1);
    const cells = await modelRow.locator("td").allTextContents();
    assert.equal(cells[0], "scripted-provider · scripted-model");
    assert.equal(cells[1], String(calls));
    assert.equal(cells[7], dollars(cost));
    await shoot("8-usage");
  });

  test("setup shows the models and checks, read-only", async () => {
    await page.goto(`${fixture.server.url}/ui/#/setup`);
    await page.waitForSelector("#models tbody tr");
    assert.match((await page.textContent("#models")) ?? "", new RegExp(`${MODEL} \\(default\\)`));
    assert.match((await page.textContent("#checks")) ?? "", /ok config/);
    assert.equal(await page.locator("#main input, #main form").count(), 0);
    await shoot("9-setup");
  });

  test("no CSP violation, script error or request outside the server happened", () => {
    assert.deepEqual(
      problems.filter((problem) => !/401 \(Unauthorized\)/.test(problem)),
      [],
    );
  });
});
