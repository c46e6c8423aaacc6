/**
 * The IDE proxy with real TLS clients that trust only our CA (docs/ide.md): served procedures
 * answered in-process, everything else forwarded unchanged to a fake real host, other domains
 * tunnelled untouched, bad input refused while the proxy stays up. No test leaves 127.0.0.1.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http2 from "node:http2";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { TLSSocket } from "node:tls";
import tls from "node:tls";
import { promisify } from "node:util";
import { silentLog } from "../log.ts";
import { createCursorClient } from "../testing/index.ts";
import {
  connectThroughProxy,
  connectTlsThroughProxy,
  createProxyAgent,
} from "./connect-through.ts";
import { startProxy } from "./proxy.ts";
import {
  DOWN_HOST,
  ECHO_HOST,
  OTHER_TLS_HOST,
  type ProxyWorld,
  startProxyWorld,
} from "./testing.ts";

const SERVER_CONFIG = "/aiserver.v1.ServerConfigService/GetServerConfig";
const NOT_SERVED = "/aiserver.v1.FileSyncService/FSUploadFile";

interface Answer {
  readonly status: number;
  readonly headers: Record<string, unknown>;
  readonly body: string;
  readonly trailers: Record<string, unknown>;
  readonly alpn: string | false;
}

/** One HTTP/1.1 request over TLS through the proxy. */
function requestH1(
  world: ProxyWorld,
  host: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; ca?: string } = {},
): Promise<Answer> {
  const agent = createProxyAgent({ proxyUrl: world.proxy.url, ca: [init.ca ?? world.ca.certPem] });
  return new Promise((resolve, reject) => {
    const request = https.request(
      { host, port: 443, path, method: init.method ?? "POST", headers: init.headers, agent },
      (response) => {
        const alpn = (response.socket as TLSSocket).alpnProtocol ?? false;
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          agent.destroy();
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString("utf8"),
            trailers: response.trailers,
            alpn,
          });
        });
      },
    );
    request.on("error", (error) => {
      agent.destroy();
      reject(error);
    });
    request.end(init.body);
  });
}

/** An HTTP/2 session to `host` through the proxy (ALPN h2), trusting only `ca`. */
async function sessionH2(world: ProxyWorld, host: string): Promise<http2.ClientHttp2Session> {
  const socket = await connectTlsThroughProxy({
    proxyUrl: world.proxy.url,
    host,
    ca: [world.ca.certPem],
    alpn: ["h2"],
  });
  assert.equal(socket.alpnProtocol, "h2");
  return http2.connect(`https://${host}`, { createConnection: () => socket });
}

function requestH2(
  session: http2.ClientHttp2Session,
  path: string,
  init: { headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":method": "POST", ":path": path, ...init.headers });
    const chunks: Buffer[] = [];
    let headers: Record<string, unknown> = {};
    let trailers: Record<string, unknown> = {};
    stream.on("response", (h) => {
      headers = h;
    });
    stream.on("trailers", (t) => {
      trailers = t;
    });
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () =>
      resolve({
        status: Number(headers[":status"]),
        headers,
        body: Buffer.concat(chunks).toString("utf8"),
        trailers,
        alpn: "h2",
      }),
    );
    stream.on("error", reject);
    stream.end(init.body);
  });
}

/** Sends raw bytes to the proxy and returns what it answers until it closes. */
async function rawExchange(world: ProxyWorld, bytes: string): Promise<string> {
  const net = await import("node:net");
  const socket = net.connect(world.proxy.address.port, "127.0.0.1");
  socket.end(bytes);
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("latin1");
}

describe("the IDE proxy", { timeout: 60_000 }, () => {
  let world: ProxyWorld;
  before(async () => {
    world = await startProxyWorld();
  });
  after(() => world.close());

  test("refuses to listen off loopback", async () => {
    await assert.rejects(
      startProxy({
        host: "0.0.0.0",
        port: 0,
        isIntercepted: () => true,
        certificateFor: () => Promise.reject(new Error("unused")),
        serves: () => false,
        serve: () => {},
        log: silentLog,
      }),
      /loopback only/,
    );
  });

  describe("served procedures (in-process)", () => {
    test("HTTP/1.1 over TLS, trusting only our CA", async () => {
      const before = world.upstreamRequests.length;
      const answer = await requestH1(world, "api2.cursor.sh", SERVER_CONFIG, {
        headers: { "content-type": "application/json", authorization: "Bearer cursor-token" },
        body: "{}",
      });
      assert.equal(answer.status, 200, answer.body);
      assert.equal(answer.alpn, "http/1.1");
      assert.match(String(answer.headers["content-type"]), /application\/json/);
      assert.equal(typeof JSON.parse(answer.body), "object");
      assert.equal(world.upstreamRequests.length, before, "nothing reached the real host");
      assert.deepEqual(world.traffic.at(-1), {
        host: "api2.cursor.sh",
        path: SERVER_CONFIG,
        served: true,
        probe: false,
      });
    });

    test("HTTP/2 (ALPN h2) over TLS", async () => {
      const session = await sessionH2(world, "api2.cursor.sh");
      try {
        const answer = await requestH2(session, SERVER_CONFIG, {
          headers: { "content-type": "application/json" },
          body: "{}",
        });
        assert.equal(answer.status, 200, answer.body);
        assert.equal(typeof JSON.parse(answer.body), "object");
      } finally {
        session.close();
      }
    });

    test("the default-model calls are answered locally; identity calls go to Cursor", async () => {
      const before = world.upstreamRequests.length;
      const local = await requestH1(
        world,
        "api2.cursor.sh",
        "/aiserver.v1.AiService/GetDefaultModel",
        {
          headers: { "content-type": "application/proto" },
          body: "",
        },
      );
      assert.equal(local.status, 200);
      assert.equal(world.upstreamRequests.length, before);
      const identity = await requestH1(
        world,
        "api2.cursor.sh",
        "/aiserver.v1.AuthService/GetEmail",
        {
          headers: { "content-type": "application/proto", authorization: "Bearer the-users-own" },
          body: "",
        },
      );
      assert.equal(identity.headers["x-upstream"], "yes");
      assert.equal(world.upstreamRequests.at(-1)?.path, "/aiserver.v1.AuthService/GetEmail");
    });

    test("a client that trusts only the system roots refuses our certificate", async () => {
      await assert.rejects(
        connectTlsThroughProxy({ proxyUrl: world.proxy.url, host: "api2.cursor.sh" }),
        /self.signed|unable to (get|verify)|certificate/i,
      );
    });

    test("curl through the proxy, trusting only our CA", async (t) => {
      const dir = mkdtempSync(join(tmpdir(), "cursor-byok-curl-"));
      t.after(() => rmSync(dir, { recursive: true, force: true }));
      const caFile = join(dir, "ca.pem");
      writeFileSync(caFile, world.ca.certPem);
      const { stdout } = await promisify(execFile)(
        "curl",
        [
          "--silent",
          "--show-error",
          "--max-time",
          "20",
          "--proxy",
          world.proxy.url,
          "--cacert",
          caFile,
          "--header",
          "content-type: application/json",
          "--data",
          "{}",
          "--write-out",
          "\n%{http_code}",
          `https://api2.cursor.sh${SERVER_CONFIG}`,
        ],
        { env: { PATH: process.env.PATH ?? "" } },
      );
      const status = stdout.trim().split("\n").at(-1);
      assert.equal(status, "200", stdout);
    });
  });

  describe("a full agent turn through the proxy", () => {
    test("RunSSE + BidiAppend over HTTP/1.1 (the IDE's path), with a tool call", async (t) => {
      const workspace = mkdtempSync(join(tmpdir(), "cursor-byok-proxy-ws-"));
      writeFileSync(join(workspace, "note.txt"), "through the proxy\n");
      const agent = createProxyAgent({ proxyUrl: world.proxy.url, ca: [world.ca.certPem] });
      const client = createCursorClient({
        baseUrl: "https://api2.cursor.sh",
        httpVersion: "1.1",
        workspace,
        agent,
        timeoutMs: 20_000,
      });
      t.after(async () => {
        await client.close();
        rmSync(workspace, { recursive: true, force: true });
      });
      const result = await client.startTurn({
        conversationId: "6f1e0c2a-5b7d-4c3e-9a8f-0d1e2f3a4b5c",
        text: `/demo tool read_file {"path":"note.txt"}`,
        modelId: "demo",
      }).done;
      assert.equal(result.error, undefined);
      const view = result.view;
      assert.ok(view.turnEnded, "the turn ended");
      assert.ok(view.execs.length >= 1, "the server asked the client to read the file");
      assert.ok(
        world.traffic.some((entry) => entry.path.endsWith("/RunSSE") && entry.served),
        "RunSSE went through the proxy",
      );
    });

    test("the bidi Run over HTTP/2", async (t) => {
      const workspace = mkdtempSync(join(tmpdir(), "cursor-byok-proxy-ws-"));
      const socket = await connectTlsThroughProxy({
        proxyUrl: world.proxy.url,
        host: "agentn.global.api5.cursor.sh",
        ca: [world.ca.certPem],
        alpn: ["h2"],
      });
      const client = createCursorClient({
        baseUrl: "https://agentn.global.api5.cursor.sh",
        httpVersion: "2",
        workspace,
        http2Session: { createConnection: () => socket },
        timeoutMs: 20_000,
      });
      t.after(async () => {
        await client.close();
        rmSync(workspace, { recursive: true, force: true });
      });
      const result = await client.startTurn({
        conversationId: "7a2e0c2a-5b7d-4c3e-9a8f-0d1e2f3a4b5c",
        text: "hello over h2",
        modelId: "demo",
      }).done;
      assert.equal(result.error, undefined);
      assert.ok(result.view.text.length > 0, "the demo model answered");
      assert.ok(result.view.turnEnded);
    });
  });

  describe("pass-through to the real host", () => {
    test("HTTP/1.1: method, path, headers (authorization included) and body arrive unchanged", async () => {
      const answer = await requestH1(world, "api2.cursor.sh", `${NOT_SERVED}?x=1`, {
        method: "PUT",
        headers: {
          authorization: "Bearer users-own-cursor-token",
          "content-type": "application/proto",
          "x-cursor-client-version": "3.1.0",
        },
        body: "payload bytes",
      });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers["x-upstream"], "yes");
      const seen = world.upstreamRequests.at(-1);
      assert.ok(seen);
      assert.equal(seen.method, "PUT");
      assert.equal(seen.path, `${NOT_SERVED}?x=1`);
      assert.equal(seen.headers.authorization, "Bearer users-own-cursor-token");
      assert.equal(seen.headers["x-cursor-client-version"], "3.1.0");
      assert.equal(seen.headers.host, "api2.cursor.sh");
      assert.equal(seen.body, "payload bytes");
      assert.equal(seen.servername, "api2.cursor.sh", "upstream TLS names the real host");
      assert.equal(world.traffic.at(-1)?.served, false);
    });

    test("HTTP/2 in, HTTP/2 out, trailers kept", async () => {
      const session = await sessionH2(world, "api3.cursor.sh");
      try {
        const answer = await requestH2(session, "/trailers", {
          headers: {
            "content-type": "application/grpc",
            te: "trailers",
            authorization: "Bearer t",
          },
          body: "grpc body",
        });
        assert.equal(answer.status, 200);
        assert.equal(answer.body, "body");
        assert.equal(answer.trailers["x-test-trailer"], "kept");
        assert.equal(answer.trailers["grpc-status"], "0");
        const seen = world.upstreamRequests.at(-1);
        assert.equal(seen?.httpVersion, "2.0");
        assert.equal(seen?.headers.authorization, "Bearer t");
        assert.equal(seen?.body, "grpc body");
      } finally {
        session.close();
      }
    });

    test("HTTP/1.1 trailers kept", async () => {
      const answer = await requestH1(world, "api3.cursor.sh", "/trailers", { body: "x" });
      assert.equal(answer.body, "body");
      assert.equal(answer.trailers["x-test-trailer"], "kept");
    });

    test("a slow stream's first event arrives before the upstream finishes", async () => {
      const agent = createProxyAgent({ proxyUrl: world.proxy.url, ca: [world.ca.certPem] });
      const response = await new Promise<import("node:http").IncomingMessage>((resolve, reject) => {
        https
          .request({ host: "repo42.cursor.sh", path: "/slow-sse", method: "GET", agent }, resolve)
          .on("error", reject)
          .end();
      });
      const iterator = response[Symbol.asyncIterator]();
      const first = await iterator.next();
      assert.equal(String(first.value), "data: first\n\n", "first event before the end");
      world.releaseSlowSse();
      let rest = "";
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
        rest += String(next.value);
      }
      assert.equal(rest, "data: second\n\n");
      agent.destroy();
    });

    test("a client that goes away mid-stream closes the upstream exchange (h1 and h2)", async () => {
      const h1Closed = world.nextHoldClosed();
      const agent = createProxyAgent({ proxyUrl: world.proxy.url, ca: [world.ca.certPem] });
      const response = await new Promise<import("node:http").IncomingMessage>((resolve, reject) => {
        https
          .request({ host: "repo42.cursor.sh", path: "/hold", method: "GET", agent }, resolve)
          .on("error", () => {})
          .on("error", reject)
          .end();
      });
      await new Promise((resolve) => response.once("data", resolve));
      response.destroy();
      agent.destroy();
      await h1Closed;

      const h2Closed = world.nextHoldClosed();
      const session = await sessionH2(world, "repo42.cursor.sh");
      const stream = session.request({ ":method": "GET", ":path": "/hold" });
      stream.on("error", () => {});
      await new Promise((resolve) => stream.once("data", resolve));
      stream.close(http2.constants.NGHTTP2_CANCEL);
      await h2Closed;
      session.close();
    });

    test("an upstream that is down gives `unavailable`, naming the host", async () => {
      const unary = await requestH1(world, DOWN_HOST, NOT_SERVED, {
        headers: { "content-type": "application/proto" },
        body: "",
      });
      assert.equal(unary.status, 503);
      const error = JSON.parse(unary.body) as { code: string; message: string };
      assert.equal(error.code, "unavailable");
      assert.match(error.message, /down\.cursor\.sh/);

      const streaming = await requestH1(world, DOWN_HOST, NOT_SERVED, {
        headers: { "content-type": "application/connect+proto" },
        body: "",
      });
      assert.equal(streaming.status, 200);
      const raw = Buffer.from(streaming.body, "utf8");
      assert.equal(raw[0], 0x02, "a Connect end-stream envelope");
      assert.match(raw.subarray(5).toString("utf8"), /"code":"unavailable".*down\.cursor\.sh/);
    });

    test("plain-HTTP proxy requests (absolute form) are forwarded, to allowed ports only", async () => {
      const http = await import("node:http");
      const echo = http.createServer((request, response) => {
        response.end(`plain ${request.method} ${request.url}`);
      });
      await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
      const port = (echo.address() as import("node:net").AddressInfo).port;
      const plain = await startProxy({
        host: "127.0.0.1",
        port: 0,
        isIntercepted: () => false,
        certificateFor: () => Promise.reject(new Error("unused")),
        serves: () => false,
        serve: () => {},
        allowedPlainPorts: [port],
        log: silentLog,
      });
      try {
        const body = await new Promise<string>((resolve, reject) => {
          http
            .request(
              {
                host: "127.0.0.1",
                port: plain.address.port,
                path: `http://127.0.0.1:${port}/plain?q=1`,
                method: "GET",
              },
              (response) => {
                let text = "";
                response.on("data", (chunk) => {
                  text += chunk;
                });
                response.on("end", () => resolve(text));
              },
            )
            .on("error", reject)
            .end();
        });
        assert.equal(body, "plain GET /plain?q=1");
        const refused = await rawExchange(
          world,
          "GET http://127.0.0.1:22/ HTTP/1.1\r\nhost: 127.0.0.1:22\r\nconnection: close\r\n\r\n",
        );
        assert.match(refused, /^HTTP\/1\.1 403 [\s\S]*port 22 is not allowed/);
      } finally {
        await plain.close();
        echo.close();
      }
    });
  });

  describe("tunnels to other hosts", () => {
    test("bytes pass unchanged", async () => {
      const socket = await connectThroughProxy(world.proxy.url, ECHO_HOST, 443);
      const bytes = Buffer.from([0, 1, 2, 255, 13, 10, 13, 10, ...Buffer.from("GET / HTTP/1.1")]);
      socket.resume();
      const received: Buffer[] = [];
      const done = new Promise<void>((resolve) => {
        socket.on("data", (chunk: Buffer) => {
          received.push(chunk);
          if (Buffer.concat(received).length >= bytes.length) resolve();
        });
      });
      socket.write(bytes);
      await done;
      socket.destroy();
      assert.deepEqual(Buffer.concat(received), bytes);
    });

    test("the proxy never presents our certificate for another domain", async () => {
      const socket = await connectTlsThroughProxy({
        proxyUrl: world.proxy.url,
        host: OTHER_TLS_HOST,
        ca: [world.publicCa.certPem],
      });
      const peer = socket.getPeerX509Certificate();
      assert.ok(peer);
      assert.match(peer.issuer, /test public root/);
      socket.destroy();
      await assert.rejects(
        connectTlsThroughProxy({
          proxyUrl: world.proxy.url,
          host: OTHER_TLS_HOST,
          ca: [world.ca.certPem],
        }),
        /certificate|self.signed|unable/i,
      );
    });
  });

  describe("bad input: clear refusals, and the proxy stays up", () => {
    test("garbage CONNECT target → 400", async () => {
      const answer = await rawExchange(world, "CONNECT ::::garbage HTTP/1.1\r\nhost: x\r\n\r\n");
      assert.match(answer, /^HTTP\/1\.1 400 /);
    });

    test("CONNECT to a port other than 443 → 403", async () => {
      const answer = await rawExchange(world, "CONNECT api2.cursor.sh:22 HTTP/1.1\r\n\r\n");
      assert.match(answer, /^HTTP\/1\.1 403 .*\r\n[\s\S]*port 22 is not allowed/);
    });

    test("not HTTP at all → 400", async () => {
      const answer = await rawExchange(world, "\x16\x03\x01 random bytes\r\n\r\n");
      assert.match(answer, /^HTTP\/1\.1 400 /);
    });

    test("a huge header → 431", async () => {
      const answer = await rawExchange(
        world,
        `CONNECT api2.cursor.sh:443 HTTP/1.1\r\nx-big: ${"a".repeat(64 * 1024)}\r\n\r\n`,
      );
      assert.match(answer, /^HTTP\/1\.1 431 /);
    });

    test("a ClientHello without SNI gets the CONNECT host's certificate", async () => {
      const raw = await connectThroughProxy(world.proxy.url, "api2.cursor.sh", 443);
      const socket = tls.connect({
        socket: raw,
        ca: [world.ca.certPem],
        checkServerIdentity: () => undefined,
      });
      await new Promise<void>((resolve, reject) => {
        socket.once("secureConnect", resolve);
        socket.once("error", reject);
      });
      assert.equal(socket.servername, false);
      assert.match(socket.getPeerX509Certificate()?.subjectAltName ?? "", /DNS:api2\.cursor\.sh/);
      socket.destroy();
    });

    test("a server name other than the CONNECT host is refused", async () => {
      for (const servername of ["evil.example", "api3.cursor.sh"]) {
        const raw = await connectThroughProxy(world.proxy.url, "api2.cursor.sh", 443);
        const socket = tls.connect({ socket: raw, servername, ca: [world.ca.certPem] });
        await assert.rejects(
          new Promise((resolve, reject) => {
            socket.once("secureConnect", resolve);
            socket.once("error", reject);
          }),
        );
        socket.destroy();
      }
      assert.ok(world.logs.some((line) => line.message.includes("differs from the CONNECT host")));
    });

    test("a request naming another host than the CONNECT is refused (421), over h1 and h2", async () => {
      const before = world.upstreamRequests.length;
      const h1 = await requestH1(world, "api2.cursor.sh", NOT_SERVED, {
        headers: { host: "evil.example", authorization: "Bearer the-users-own" },
        body: "",
      });
      assert.equal(h1.status, 421);
      const session = await sessionH2(world, "api2.cursor.sh");
      try {
        const h2 = await requestH2(session, NOT_SERVED, {
          headers: { ":authority": "evil.example" },
        });
        assert.equal(h2.status, 421);
        const same = await requestH2(session, NOT_SERVED, {
          headers: { ":authority": "api2.cursor.sh" },
        });
        assert.equal(same.status, 200, "the connection's own host still works");
      } finally {
        session.close();
      }
      assert.equal(world.upstreamRequests.length, before + 1, "only the matching request went out");
      assert.ok(world.logs.some((line) => line.message.includes("differs from the CONNECT host")));
    });

    test("a CONNECT host with a trailing dot is the same host", async () => {
      const socket = await connectTlsThroughProxy({
        proxyUrl: world.proxy.url,
        host: "api2.cursor.sh.",
        ca: [world.ca.certPem],
      });
      assert.match(socket.getPeerX509Certificate()?.subjectAltName ?? "", /DNS:api2\.cursor\.sh$/);
      socket.destroy();
    });

    test("after all that, a normal request still works", async () => {
      const answer = await requestH1(world, "api2.cursor.sh", SERVER_CONFIG, {
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      assert.equal(answer.status, 200);
    });
  });
});

describe("the IDE proxy's limits", { timeout: 30_000 }, () => {
  let world: ProxyWorld;
  before(async () => {
    world = await startProxyWorld({
      headersTimeoutMs: 200,
      tlsHandshakeTimeoutMs: 200,
      maxConnections: 3,
    });
  });
  after(() => world.close());

  const closed = (socket: import("node:net").Socket) =>
    new Promise<string>((resolve) => {
      let text = "";
      socket.on("data", (chunk: Buffer) => {
        text += chunk.toString("latin1");
      });
      socket.once("close", () => resolve(text));
    });

  test("a request head that never ends is cut off (408)", async () => {
    const net = await import("node:net");
    const socket = net.connect(world.proxy.address.port, "127.0.0.1");
    socket.write("CONNECT api2.cursor.sh:443 HTTP/1.1\r\nx-slow: ");
    assert.match(await closed(socket), /^HTTP\/1\.1 408 /);
  });

  test("a TLS handshake that never starts is cut off", async () => {
    const raw = await connectThroughProxy(world.proxy.url, "api2.cursor.sh", 443);
    raw.resume();
    await closed(raw);
  });

  test("connections beyond the limit are closed at once; the proxy serves again after", async () => {
    const net = await import("node:net");
    const held = await Promise.all(
      [1, 2, 3].map(
        (n) =>
          new Promise<import("node:net").Socket>((resolve) => {
            const socket = net.connect(world.proxy.address.port, "127.0.0.1", () =>
              resolve(socket),
            );
            socket.write(`GET / HTTP/1.1\r\nx-n: ${n}`);
          }),
      ),
    );
    const extra = net.connect(world.proxy.address.port, "127.0.0.1");
    extra.on("error", () => {});
    await closed(extra);
    for (const socket of held) socket.destroy();
    // The proxy learns of the closes on its side a moment later: try again until it has.
    let answer: Answer | undefined;
    for (let attempt = 0; answer === undefined && attempt < 1_000; attempt += 1) {
      answer = await requestH1(world, "api2.cursor.sh", SERVER_CONFIG, {
        headers: { "content-type": "application/json" },
        body: "{}",
      }).catch((error: Error) => {
        assert.match(error.message, /closed the connection/);
        return new Promise<undefined>((resolve) => setImmediate(() => resolve(undefined)));
      });
    }
    assert.ok(answer);
    assert.equal(answer.status, 200);
  });
});
