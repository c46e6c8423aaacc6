/**
 * IDE mode end to end with a real browser (docs/ide.md): `ide setup` on a throw-away home whose
 * NSS database already holds another certificate → `serve` runs the proxy → Debian's Chromium
 * (the engine of the Cursor IDE, reading the same NSS database) loads a forwarded page of
 * `api2.cursor.sh` and, from it, a procedure our server answers → a Chromium without our CA is
 * refused → `ide undo` leaves the settings file byte for byte and the NSS database as they were.
 * The "real" api2.cursor.sh is a local TLS server; nothing leaves 127.0.0.1.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import https from "node:https";
import { type AddressInfo, createServer } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import {
  createTempHome,
  runCliProcess,
  type ServeProcess,
  startServeProcess,
  type TempHome,
} from "../cli/testing.ts";
import { createCertificateAuthority, createLeafIssuer } from "./ca.ts";

const CHROMIUM = "/usr/bin/chromium";
const missing = [
  existsSync(CHROMIUM) ? undefined : "chromium",
  hasProgram("certutil") ? undefined : "libnss3-tools (certutil)",
].filter((name) => name !== undefined);
const SKIP =
  missing.length > 0 &&
  `not installed: ${missing.join(", ")} — Debian: apt-get install chromium libnss3-tools (.ci/run installs them)`;

const CHROMIUM_ARGS = [
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const SETTINGS = `{
  // The user's own settings, kept exactly.
  "editor.fontSize": 14,
  "files.autoSave": "afterDelay",
}
`;

function hasProgram(name: string): boolean {
  try {
    execFileSync(name, ["--help"], { stdio: "ignore" });
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ENOENT";
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("IDE mode with a real Chromium", { skip: SKIP, timeout: 120_000 }, () => {
  let home: TempHome;
  let upstream: https.Server;
  let serve: ServeProcess | undefined;
  let settingsFile: string;
  let nssdb: string;
  let nssBefore: string;
  let proxyUrl: string;
  let env: Record<string, string>;

  before(async () => {
    home = createTempHome();
    settingsFile = join(home.dir, "config", "Cursor", "User", "settings.json");
    mkdirSync(join(home.dir, "config", "Cursor", "User"), { recursive: true });
    writeFileSync(settingsFile, SETTINGS);

    // The user's browser database, with a certificate of someone else's in it.
    nssdb = `sql:${join(home.dir, ".pki", "nssdb")}`;
    mkdirSync(join(home.dir, ".pki", "nssdb"), { recursive: true });
    execFileSync("certutil", ["-d", nssdb, "-N", "--empty-password"]);
    const other = await createCertificateAuthority({ permittedDomains: [], commonName: "other" });
    writeFileSync(join(home.dir, "other.pem"), other.certPem);
    execFileSync("certutil", [
      "-d",
      nssdb,
      "-A",
      "-t",
      "C,,",
      "-n",
      "someone else",
      "-i",
      join(home.dir, "other.pem"),
    ]);
    nssBefore = execFileSync("certutil", ["-d", nssdb, "-L"], { encoding: "utf8" });

    // The "real" api2.cursor.sh, signed by a test root that the proxy is told to trust.
    const publicRoot = await createCertificateAuthority({
      permittedDomains: [],
      commonName: "test root",
    });
    const leaf = await createLeafIssuer(publicRoot, { permittedDomains: [] }).certificateFor(
      "api2.cursor.sh",
    );
    writeFileSync(join(home.dir, "public-root.pem"), publicRoot.certPem);
    upstream = https.createServer({ key: leaf.keyPem, cert: leaf.certPem }, (request, response) => {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      response.end(
        `<!doctype html><title>real</title><p id="from">the real host: ${request.url}</p>`,
      );
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    const upstreamPort = (upstream.address() as AddressInfo).port;

    const proxyPort = await freePort();
    proxyUrl = `http://127.0.0.1:${proxyPort}`;
    env = {
      ...home.env,
      CURSOR_BYOK_TEST_UPSTREAM: JSON.stringify({ "*": `127.0.0.1:${upstreamPort}` }),
      CURSOR_BYOK_TEST_UPSTREAM_CA: join(home.dir, "public-root.pem"),
    };
    const setup = await runCliProcess(
      ["ide", "setup", "--yes", "--proxy-port", String(proxyPort)],
      { env },
    );
    assert.equal(setup.code, 0, setup.stderr + setup.stdout);
    // `server.http2: true` asked for; IDE mode must still tell the IDE to stay on HTTP/1.1.
    writeFileSync(join(home.dir, "ide-test.yaml"), "server:\n  http2: true\n");
    serve = await startServeProcess(["--port", "0", "--config", join(home.dir, "ide-test.yaml")], {
      env,
    });
  });

  after(async () => {
    await serve?.stop();
    upstream?.close();
    upstream?.closeAllConnections();
    home?.cleanup();
  });

  test("serve announces the proxy that Cursor's settings point at", () => {
    assert.match(
      serve?.output() ?? "",
      new RegExp(`IDE: +proxy on ${proxyUrl.replaceAll(".", "\\.")}`),
    );
    assert.match(readFileSync(settingsFile, "utf8"), new RegExp(`"http\\.proxy": "${proxyUrl}"`));
  });

  test("Chromium, trusting our CA through the user's NSS database, reaches our server through the proxy", async () => {
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: CHROMIUM_ARGS,
      env: { ...process.env, HOME: home.dir },
      proxy: { server: proxyUrl },
    });
    try {
      const page = await browser.newPage();
      // A route we do not serve: forwarded to the real host, over our certificate.
      const response = await page.goto("https://api2.cursor.sh/welcome", { timeout: 30_000 });
      assert.equal(response?.status(), 200);
      assert.equal(await page.textContent("#from"), "the real host: /welcome");
      const certificate = await response?.securityDetails();
      assert.match(certificate?.issuer ?? "", /cursor-byok local CA/);
      // A procedure our server answers, called from that page as the IDE's renderer would.
      const answer = await page.evaluate(async () => {
        const reply = await fetch("/aiserver.v1.ServerConfigService/GetServerConfig", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{}",
        });
        return { status: reply.status, body: await reply.text() };
      });
      assert.equal(answer.status, 200);
      const config = JSON.parse(answer.body) as { configVersion: string; http2Config: string };
      assert.equal(config.configVersion, "cursor-byok-1");
      // The IDE's HTTP/2 client ignores the proxy, so IDE mode keeps it off (docs/ide.md).
      assert.equal(config.http2Config, "HTTP2_CONFIG_FORCE_ALL_DISABLED");
    } finally {
      await browser.close();
    }
  });

  test("a Chromium whose home does not trust our CA is refused", async () => {
    const stranger = createTempHome();
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: CHROMIUM_ARGS,
      env: { ...process.env, HOME: stranger.dir },
      proxy: { server: proxyUrl },
    });
    try {
      const page = await browser.newPage();
      await assert.rejects(
        page.goto("https://api2.cursor.sh/welcome", { timeout: 30_000 }),
        /ERR_CERT_AUTHORITY_INVALID/,
      );
    } finally {
      await browser.close();
      stranger.cleanup();
    }
  });

  test("ide status sees the traffic; ide undo puts the settings and the trust store back", async () => {
    const status = await runCliProcess(["ide", "status"], { env });
    assert.equal(status.code, 0, status.stdout + status.stderr);
    assert.match(status.stdout, /last seen: \S+ \(api2\.cursor\.sh\//);
    await serve?.stop();
    const undo = await runCliProcess(["ide", "undo", "--yes"], { env });
    assert.equal(undo.code, 0, undo.stderr + undo.stdout);
    assert.equal(readFileSync(settingsFile, "utf8"), SETTINGS, "settings.json byte for byte");
    assert.equal(execFileSync("certutil", ["-d", nssdb, "-L"], { encoding: "utf8" }), nssBefore);
    assert.equal(
      existsSync(join(home.dir, "config", "environment.d", "60-cursor-byok.conf")),
      false,
    );
  });
});
