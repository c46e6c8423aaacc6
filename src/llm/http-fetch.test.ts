/**
 * The node:http transport against loopback servers, side by side with Node's global fetch where
 * both must behave alike (what the SDKs, exact-fetch.ts, retry.ts and describeError read).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import https from "node:https";
import net, { type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { brotliCompressSync, gzipSync } from "node:zlib";
import { createCertificateAuthority, createLeafIssuer } from "../ide/ca.ts";
import { describeError } from "./abort.ts";
import { createModelConfig } from "./config.ts";
import { createExactFetch } from "./exact-fetch.ts";
import { toFailureKind } from "./failure-kind.ts";
import { createHttpFetch, envProxyGap } from "./http-fetch.ts";
import { createLLM } from "./llm.ts";
import { createRetryPolicy } from "./retry.ts";
import { firstRequest } from "./testing/behaviours.ts";
import { readFixture, startFakeProvider } from "./testing/fake-provider.ts";
import { collect, recordingSleep, terminalOf } from "./testing/streams.ts";

/** Called with the next request as soon as its headers have come (its body may not). */
let headersSeen: ((request: IncomingMessage) => void) | undefined;

type Handler = (request: IncomingMessage, response: ServerResponse, body: Buffer) => void;

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage["headers"];
  readonly body: Buffer;
  readonly remotePort: number;
}

/** A loopback server whose next answers the test sets; it records each request it got. */
function startServer(): Promise<{
  readonly url: string;
  readonly port: number;
  readonly seen: Seen[];
  handle(handler: Handler): void;
  /** Resolves with the next request's server side once its body has arrived. */
  next(): Promise<{ request: IncomingMessage; response: ServerResponse }>;
  close(): Promise<void>;
}> {
  let handler: Handler = (_request, response) => response.end();
  const seen: Seen[] = [];
  const waiting: ((exchange: { request: IncomingMessage; response: ServerResponse }) => void)[] =
    [];
  const server = http.createServer((request, response) => {
    headersSeen?.(request);
    headersSeen = undefined;
    // A client that goes away mid-body (the abort tests) is what those tests want.
    request.on("error", () => undefined);
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      seen.push({
        method: request.method ?? "",
        url: request.url ?? "",
        headers: request.headers,
        body,
        remotePort: request.socket.remotePort ?? 0,
      });
      handler(request, response, body);
      waiting.shift()?.({ request, response });
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        port,
        seen,
        handle: (next) => {
          handler = next;
        },
        next: () => new Promise((done) => waiting.push(done)),
        close: () => {
          server.closeAllConnections();
          return new Promise((done) => server.close(() => done()));
        },
      });
    });
  });
}

let server: Awaited<ReturnType<typeof startServer>>;
const light = createHttpFetch();
before(async () => {
  server = await startServer();
});
after(async () => {
  light.close();
  await server.close();
});

/** The request exact-fetch.ts makes: a one-chunk body stream with its length. */
function exactRequest(body: string, signal?: AbortSignal): RequestInit & { duplex: "half" } {
  const bytes = Buffer.from(body, "utf8");
  let chunk: Uint8Array | undefined = bytes;
  return {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "content-length": String(bytes.length),
      authorization: "Bearer sk-test",
      "x-stainless-lang": "js",
    },
    body: new ReadableStream({
      pull(controller) {
        if (chunk !== undefined) controller.enqueue(chunk);
        chunk = undefined;
        controller.close();
      },
    }),
    duplex: "half",
    redirect: "error",
    ...(signal === undefined ? {} : { signal }),
  };
}

/** Starts the SSE answer: headers and one event, then the response stays open. */
const sseStart: Handler = (_request, response) => {
  response.writeHead(200, { "content-type": "text/event-stream" });
  response.write('data: {"n":1}\n\n');
};

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail("expected a rejection");
}

const transports: readonly (readonly [string, typeof fetch])[] = [
  ["global fetch", fetch],
  ["http-fetch", light.fetch],
];

for (const [name, send] of transports) {
  describe(`${name}: what the provider calls rely on`, { timeout: 20_000 }, () => {
    test("the response: status, statusText, ok, headers, url, json()", async () => {
      server.handle((_request, response) => {
        response.statusMessage = "Not Here";
        response.setHeader("set-cookie", ["a=1", "b=2"]);
        response.setHeader("x-request-id", "req-7");
        response.writeHead(404, { "content-type": "application/json" });
        response.end('{"error":{"message":"no such model"}}');
      });
      const response = await send(`${server.url}/v1/chat?x=1`, exactRequest("{}"));
      assert.equal(response.status, 404);
      assert.equal(response.statusText, "Not Here");
      assert.equal(response.ok, false);
      assert.equal(response.url, `${server.url}/v1/chat?x=1`);
      assert.equal(response.headers.get("x-request-id"), "req-7");
      assert.equal(response.headers.get("content-type"), "application/json");
      assert.deepEqual(response.headers.getSetCookie(), ["a=1", "b=2"]);
      assert.deepEqual(await response.json(), { error: { message: "no such model" } });
    });

    test("the request: method, headers and body bytes as given, never chunked", async () => {
      server.handle((_request, response) => response.end("ok"));
      const body = `{"messages":[{"content":"héllo ${"x".repeat(70_000)}"}]}`;
      const response = await send(`${server.url}/v1/chat`, exactRequest(body));
      assert.equal(await response.text(), "ok");
      const got = server.seen.at(-1);
      assert.equal(got?.method, "POST");
      assert.equal(got?.url, "/v1/chat");
      assert.ok(got?.body.equals(Buffer.from(body, "utf8")), "the same bytes");
      assert.equal(got?.headers["content-length"], String(Buffer.byteLength(body)));
      assert.equal(got?.headers["transfer-encoding"], undefined);
      assert.equal(got?.headers["content-type"], "application/json");
      assert.equal(got?.headers.authorization, "Bearer sk-test");
      assert.equal(got?.headers["x-stainless-lang"], "js");
      assert.equal(got?.headers.host, `127.0.0.1:${server.port}`);
      assert.equal(got?.headers.accept, "*/*");
      assert.equal(got?.headers["user-agent"], "node");
    });

    test("a body stream without a length is sent chunked; a string body gets text/plain", async () => {
      server.handle((_request, response) => response.end());
      const request = exactRequest("abc");
      const headers = new Headers(request.headers);
      headers.delete("content-length");
      await (await send(server.url, { ...request, headers })).text();
      assert.equal(server.seen.at(-1)?.headers["transfer-encoding"], "chunked");
      assert.equal(server.seen.at(-1)?.body.toString(), "abc");
      await (await send(server.url, { method: "POST", body: "plain" })).text();
      assert.equal(server.seen.at(-1)?.headers["content-type"], "text/plain;charset=UTF-8");
      assert.equal(server.seen.at(-1)?.headers["content-length"], "5");
    });

    test("no body: content-length 0 on a POST, no body headers on a GET; bytes get their length", async () => {
      server.handle((_request, response) => response.end());
      await (await send(server.url, { method: "POST" })).text();
      assert.equal(server.seen.at(-1)?.headers["content-length"], "0");
      assert.equal(server.seen.at(-1)?.headers["transfer-encoding"], undefined);
      await (await send(server.url, { method: "GET" })).text();
      assert.equal(server.seen.at(-1)?.headers["content-length"], undefined);
      assert.equal(server.seen.at(-1)?.headers["transfer-encoding"], undefined);
      const bytes = new TextEncoder().encode("bytes");
      await (await send(server.url, { method: "PUT", body: bytes })).text();
      assert.equal(server.seen.at(-1)?.headers["content-length"], "5");
      assert.equal(server.seen.at(-1)?.body.toString(), "bytes");
    });

    test("the body streams: each event can be read before the response ends", async () => {
      const exchange = server.next();
      server.handle(sseStart);
      const response = await send(server.url, exactRequest("{}"));
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      assert.equal(decoder.decode((await reader.read()).value), 'data: {"n":1}\n\n');
      const { response: serverSide } = await exchange;
      serverSide.write('data: {"n":2}\n\n');
      assert.equal(decoder.decode((await reader.read()).value), 'data: {"n":2}\n\n');
      serverSide.end();
      assert.equal((await reader.read()).done, true);
    });

    test("a compressed response is decoded (gzip, br)", async () => {
      const text = "data: compressed\n\n".repeat(50);
      for (const [encoding, encode] of [
        ["gzip", gzipSync],
        ["br", brotliCompressSync],
      ] as const) {
        server.handle((_request, response) => {
          response.writeHead(200, { "content-encoding": encoding });
          response.end(encode(text));
        });
        const response = await send(server.url, exactRequest("{}"));
        assert.equal(await response.text(), text, encoding);
      }
    });

    test("an already aborted signal rejects with its reason and sends nothing", async () => {
      const before = server.seen.length;
      const reason = new Error("stop now");
      const error = await rejection(
        send(server.url, exactRequest("{}", AbortSignal.abort(reason))),
      );
      assert.equal(error, reason);
      const plain = await rejection(send(server.url, exactRequest("{}", AbortSignal.abort())));
      assert.ok(plain instanceof DOMException && plain.name === "AbortError");
      assert.equal(server.seen.length, before);
    });

    test("an abort while the body is being sent rejects with AbortError; the socket is closed", async () => {
      let cancelled: (reason: unknown) => void = () => undefined;
      const wasCancelled = new Promise((resolve) => {
        cancelled = resolve;
      });
      const arrived = new Promise<IncomingMessage>((resolve) => {
        headersSeen = resolve;
      });
      const controller = new AbortController();
      let sent = false;
      const body = new ReadableStream<Uint8Array>({
        pull(stream) {
          if (!sent) stream.enqueue(new TextEncoder().encode('{"partial":'));
          sent = true;
          // Then nothing more: the body never ends.
        },
        cancel: (reason) => cancelled(reason),
      });
      const pending = send(server.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        duplex: "half",
        signal: controller.signal,
      } as RequestInit);
      const request = await arrived;
      const closed = closeOf(request.socket);
      controller.abort();
      const error = await rejection(pending);
      assert.ok(error instanceof DOMException && error.name === "AbortError");
      await closed;
      // (undici leaves the request body stream as it is; here a read that may never end is stopped.)
      if (send === light.fetch) await wasCancelled;
    });

    test("an abort while waiting for headers rejects with AbortError; the socket is closed", async () => {
      const exchange = server.next();
      server.handle(() => undefined);
      const controller = new AbortController();
      const pending = send(server.url, exactRequest("{}", controller.signal));
      const { request } = await exchange;
      const closed = closeOf(request.socket);
      controller.abort();
      const error = await rejection(pending);
      assert.ok(error instanceof DOMException && error.name === "AbortError");
      await closed;
    });

    test("an abort mid-body errors the reader with the reason; the socket is closed", async () => {
      const exchange = server.next();
      server.handle(sseStart);
      const controller = new AbortController();
      const response = await send(server.url, exactRequest("{}", controller.signal));
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      const { request } = await exchange;
      const closed = closeOf(request.socket);
      const reason = new Error("user stopped");
      controller.abort(reason);
      assert.equal(await rejection(reader.read()), reason);
      await closed;
    });

    test("a cancelled body closes the connection", async () => {
      const exchange = server.next();
      server.handle(sseStart);
      const response = await send(server.url, exactRequest("{}"));
      const { request } = await exchange;
      const closed = closeOf(request.socket);
      await response.body?.cancel();
      await closed;
    });

    test("a refused connection: TypeError fetch failed, cause ECONNREFUSED", async () => {
      const port = await closedPort();
      const error = await rejection(send(`http://127.0.0.1:${port}/`, exactRequest("{}")));
      assert.ok(error instanceof TypeError);
      assert.equal(error.message, "fetch failed");
      assert.equal((error.cause as { code?: unknown }).code, "ECONNREFUSED");
      assert.equal(describeError(error), "fetch failed (ECONNREFUSED)");
    });

    test("a connection closed before headers: TypeError fetch failed with a coded cause", async () => {
      server.handle((request) => request.socket.destroy());
      const error = await rejection(send(server.url, exactRequest("{}")));
      assert.ok(error instanceof TypeError);
      assert.equal(error.message, "fetch failed");
      assert.match(describeError(error), /^fetch failed \((ECONNRESET|UND_ERR_SOCKET)\)$/);
    });

    test("a connection closed mid-body: the reader fails with TypeError terminated, other side closed", async () => {
      const exchange = server.next();
      server.handle(sseStart);
      const response = await send(server.url, exactRequest("{}"));
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      (await exchange).request.socket.destroy();
      const error = await rejection(reader.read());
      assert.ok(error instanceof TypeError);
      assert.equal(error.message, "terminated");
      // The deepest cause is what pi-ai appends to the message: the provider's doing, not "aborted".
      const cause = error.cause as Error & { code?: unknown };
      assert.equal(cause.message, "other side closed");
      assert.match(String(cause.code), /^(ECONNRESET|UND_ERR_SOCKET)$/);
      assert.equal(cause.cause, undefined);
    });

    test("a redirect is not followed: fetch failed, cause unexpected redirect", async () => {
      server.handle((_request, response) => {
        response.writeHead(307, { location: "/elsewhere" });
        response.end();
      });
      const before = server.seen.length;
      const error = await rejection(send(`${server.url}/v1/chat`, exactRequest("{}")));
      assert.ok(error instanceof TypeError);
      assert.equal(error.message, "fetch failed");
      assert.equal((error.cause as Error).message, "unexpected redirect");
      assert.equal(server.seen.length, before + 1, "nothing sent to the new address");
    });

    test("through the exact fetch: a redirect fails the call with its message, no retry", async () => {
      server.handle((_request, response) => {
        response.writeHead(301, { location: "https://example.invalid/" });
        response.end();
      });
      const { sleep, delays } = recordingSleep();
      const exact = createExactFetch({
        callID: "c",
        model: "m",
        baseFetch: send,
        policy: createRetryPolicy({ sleep, random: () => 0 }),
        signal: new AbortController().signal,
        secrets: [],
      });
      const error = await rejection(
        exact.fetch(`${server.url}/v1/chat`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{}",
        }),
      );
      assert.match((error as Error).message, /redirect, which is not followed/);
      assert.deepEqual(delays, []);
    });
  });
}

describe("http-fetch: its own contract", { timeout: 20_000 }, () => {
  test("a Host header the caller set is the one sent", async () => {
    server.handle((_request, response) => response.end());
    await (
      await light.fetch(server.url, {
        method: "POST",
        body: "{}",
        headers: { host: "example.test" },
      })
    ).text();
    assert.equal(server.seen.at(-1)?.headers.host, "example.test");
    assert.equal(server.seen.at(-1)?.headers["content-length"], "2");
  });

  test("the Host header: bracketed for IPv6, with a port that is not the default", async (t) => {
    const heads: string[] = [];
    const v6 = net.createServer((socket) => {
      let head = "";
      socket.on("data", (chunk: Buffer) => {
        head += chunk.toString("latin1");
        if (!head.includes("\r\n\r\n")) return;
        heads.push(head);
        socket.end("HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n");
      });
    });
    const listening = await new Promise<boolean>((resolve) => {
      v6.once("error", () => resolve(false));
      v6.listen(0, "::1", () => resolve(true));
    });
    if (!listening) {
      t.skip("this machine has no IPv6 loopback (::1)");
      return;
    }
    const { port } = v6.address() as AddressInfo;
    try {
      const response = await light.fetch(`http://[::1]:${port}/v1`, { method: "POST", body: "{}" });
      assert.equal(response.status, 204);
      const host = /\r\nhost: ([^\r]*)\r\n/i.exec(heads[0] ?? "")?.[1];
      assert.equal(host, `[::1]:${port}`);
      assert.equal(/\r\ncontent-length: 2\r\n/i.test(heads[0] ?? ""), true);
    } finally {
      await new Promise((done) => v6.close(() => done(undefined)));
    }
  });

  test("asks for an uncompressed answer unless the caller chose an encoding", async () => {
    server.handle((_request, response) => response.end());
    await (await light.fetch(server.url, exactRequest("{}"))).text();
    assert.equal(server.seen.at(-1)?.headers["accept-encoding"], "identity");
    const request = exactRequest("{}");
    const headers = new Headers(request.headers);
    headers.set("accept-encoding", "gzip");
    await (await light.fetch(server.url, { ...request, headers })).text();
    assert.equal(server.seen.at(-1)?.headers["accept-encoding"], "gzip");
  });

  test("a redirect with redirect: manual is returned as it is", async () => {
    server.handle((_request, response) => {
      response.writeHead(302, { location: "/there" });
      response.end();
    });
    const response = await light.fetch(server.url, { ...exactRequest("{}"), redirect: "manual" });
    assert.equal(response.status, 302);
    assert.equal(response.headers.get("location"), "/there");
  });

  test("keeps the connection alive between calls to one origin", async () => {
    server.handle((_request, response) => response.end("x"));
    await (await light.fetch(server.url, exactRequest("{}"))).text();
    await (await light.fetch(server.url, exactRequest("{}"))).text();
    const [first, second] = server.seen.slice(-2);
    assert.equal(first?.remotePort, second?.remotePort);
  });

  test("idle kept-alive connections close after keepAliveMs; a silent open body does not", async () => {
    const brief = createHttpFetch({ keepAliveMs: 50 });
    const exchange = server.next();
    server.handle(sseStart);
    const response = await brief.fetch(server.url, exactRequest("{}"));
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const { request, response: serverSide } = await exchange;
    let closedAt: "open" | "silent" | "idle" = "open";
    request.socket.once("close", () => {
      closedAt = closedAt === "open" ? "silent" : closedAt;
    });
    // Silent for several times keepAliveMs while the body is open: the call goes on.
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(closedAt, "open");
    serverSide.end('data: {"n":2}\n\n');
    assert.equal(new TextDecoder().decode((await reader.read()).value), 'data: {"n":2}\n\n');
    assert.equal((await reader.read()).done, true);
    closedAt = "idle";
    await closeOf(request.socket);
    brief.close();
  });

  test("chunks that come while the reader is busy are handed on as one, in memory of their own", async () => {
    const exchange = server.next();
    server.handle(sseStart);
    const response = await light.fetch(server.url, exactRequest("{}"));
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const { response: serverSide } = await exchange;
    const events = Array.from({ length: 200 }, (_, index) => `data: {"n":${index + 2}}\n\n`);
    // Each write is an HTTP chunk of its own; the reader reads only once they all came.
    for (const event of events) serverSide.write(event);
    serverSide.end();
    await once(serverSide, "finish");
    await idleTurns(20);
    const reads: Uint8Array[] = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      reads.push(value);
    }
    assert.equal(Buffer.concat(reads).toString(), events.join(""));
    assert.ok(reads.length < 10, `${reads.length} reads for 200 events`);
    for (const chunk of reads) assert.equal(chunk.buffer.byteLength, chunk.byteLength);
  });

  test("TCP keep-alive probes start after 60 s of silence, as undici's (not Node's 1 s)", async () => {
    // What the agent asks of each socket it keeps (Agent#keepSocketAlive); not readable otherwise.
    const original = net.Socket.prototype.setKeepAlive;
    const delays: (number | undefined)[] = [];
    net.Socket.prototype.setKeepAlive = function (this: net.Socket, ...args: unknown[]) {
      if (args[0] === true) delays.push(args[1] as number | undefined);
      return (original as (...given: unknown[]) => net.Socket).apply(this, args);
    } as typeof original;
    const own = createHttpFetch();
    try {
      server.handle((_request, response) => response.end("ok"));
      await (await own.fetch(server.url, exactRequest("{}"))).text();
      await (await own.fetch(server.url, exactRequest("{}"))).text();
    } finally {
      net.Socket.prototype.setKeepAlive = original;
      own.close();
    }
    assert.ok(delays.length > 0, "the agent set no keep-alive");
    assert.deepEqual(new Set(delays), new Set([60_000]));
  });

  test("headers slower than keepAliveMs still come, on a new and on a reused connection", async () => {
    const brief = createHttpFetch({ keepAliveMs: 50 });
    server.handle((_request, response) => {
      setTimeout(() => response.end("late"), 300);
    });
    for (let round = 0; round < 2; round++) {
      const response = await brief.fetch(server.url, exactRequest("{}"));
      assert.equal(await response.text(), "late");
    }
    const [first, second] = server.seen.slice(-2);
    assert.equal(first?.remotePort, second?.remotePort, "the second call reused the connection");
    brief.close();
  });

  test("backpressure: an unread body stops reading from the socket", async () => {
    const exchange = server.next();
    server.handle((_request, response) => {
      response.writeHead(200);
      response.flushHeaders();
    });
    const response = await light.fetch(server.url, exactRequest("{}"));
    const { response: serverSide } = await exchange;
    const total = 64 * 2 ** 20;
    const piece = Buffer.alloc(2 ** 20, 97);
    let written = 0;
    // Writes until the socket will not take more, i.e. the client has stopped reading.
    const blocked = async () => {
      for (;;) {
        while (written < total && serverSide.write(piece)) written += piece.length;
        if (written >= total) return false;
        written += piece.length;
        const drained = await Promise.race([
          once(serverSide, "drain").then(() => true),
          idleTurns(50).then(() => false),
        ]);
        if (!drained) return true;
      }
    };
    assert.equal(await blocked(), true, "the server could write everything: no backpressure");
    assert.ok(written < total);
    const stopped = written;
    // Reading it all lets the server go on.
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let read = 0;
    const reading = (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        read += value.byteLength;
      }
    })();
    while (written < total) {
      if (!serverSide.write(piece)) await once(serverSide, "drain");
      written += piece.length;
    }
    serverSide.end();
    await reading;
    assert.equal(read, total);
    assert.ok(stopped < total);
  });

  test("headers that do not come in time: fetch failed, UND_ERR_HEADERS_TIMEOUT", async () => {
    const quick = createHttpFetch({ timeoutMs: 100 });
    const exchange = server.next();
    server.handle(() => undefined);
    const pending = quick.fetch(server.url, exactRequest("{}"));
    const { request } = await exchange;
    const closed = closeOf(request.socket);
    const error = await rejection(pending);
    assert.ok(error instanceof TypeError);
    assert.equal(describeError(error), "fetch failed (UND_ERR_HEADERS_TIMEOUT)");
    await closed;
    quick.close();
  });

  test("a body silent for too long: terminated, UND_ERR_BODY_TIMEOUT", async () => {
    const quick = createHttpFetch({ timeoutMs: 100 });
    server.handle(sseStart);
    const response = await quick.fetch(server.url, exactRequest("{}"));
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const error = await rejection(reader.read());
    assert.ok(error instanceof TypeError);
    assert.equal(describeError(error), "terminated (UND_ERR_BODY_TIMEOUT)");
    quick.close();
  });

  test("https with a CA the caller trusts; refused without it", async () => {
    const ca = await createCertificateAuthority({ permittedDomains: [] });
    const leaf = await createLeafIssuer(ca, { permittedDomains: [] }).certificateFor("localhost");
    const secure = https.createServer({ cert: leaf.certPem, key: leaf.keyPem }, (_r, response) =>
      response.end("secret ok"),
    );
    await new Promise<void>((resolve) => secure.listen(0, "127.0.0.1", resolve));
    const { port } = secure.address() as AddressInfo;
    const trusting = createHttpFetch({ tls: { ca: ca.certPem, servername: "localhost" } });
    const strict = createHttpFetch({ tls: { servername: "localhost" } });
    try {
      const response = await trusting.fetch(`https://127.0.0.1:${port}/`, exactRequest("{}"));
      assert.equal(await response.text(), "secret ok");
      const error = await rejection(strict.fetch(`https://127.0.0.1:${port}/`, exactRequest("{}")));
      assert.ok(error instanceof TypeError);
      assert.match(describeError(error), /^fetch failed \((UNABLE_TO_VERIFY|SELF_SIGNED)/);
    } finally {
      trusting.close();
      strict.close();
      secure.closeAllConnections();
      secure.close();
    }
  });

  test("HTTP_PROXY / HTTPS_PROXY / NO_PROXY from proxyEnv", async () => {
    const proxy = await startProxy();
    const ca = await createCertificateAuthority({ permittedDomains: [] });
    const leaf = await createLeafIssuer(ca, { permittedDomains: [] }).certificateFor("localhost");
    const secure = https.createServer({ cert: leaf.certPem, key: leaf.keyPem }, (_r, response) =>
      response.end("tunnelled"),
    );
    await new Promise<void>((resolve) => secure.listen(0, "127.0.0.1", resolve));
    const { port } = secure.address() as AddressInfo;
    const proxied = createHttpFetch({
      // With credentials: Node adds the proxy's own headers to the request (checked below).
      proxyEnv: { HTTP_PROXY: proxy.url.replace("http://", "http://u:p@"), HTTPS_PROXY: proxy.url },
      tls: { ca: ca.certPem, servername: "localhost" },
    });
    const bypassing = createHttpFetch({
      proxyEnv: { HTTP_PROXY: proxy.url, NO_PROXY: "127.0.0.1" },
    });
    try {
      server.handle((_request, response) => response.end("via proxy"));
      const response = await proxied.fetch(`${server.url}/v1/chat`, exactRequest('{"a":1}'));
      assert.equal(await response.text(), "via proxy");
      assert.deepEqual(proxy.seen.at(-1), `POST ${server.url}/v1/chat`);
      assert.equal(server.seen.at(-1)?.body.toString(), '{"a":1}');
      assert.equal(server.seen.at(-1)?.headers["proxy-authorization"], "Basic dTpw");
      assert.equal(server.seen.at(-1)?.headers["proxy-connection"], "keep-alive");

      const tunnelled = await proxied.fetch(`https://127.0.0.1:${port}/`, exactRequest("{}"));
      assert.equal(await tunnelled.text(), "tunnelled");
      assert.equal(proxy.seen.at(-1), `CONNECT 127.0.0.1:${port}`);

      const count = proxy.seen.length;
      await (await bypassing.fetch(server.url, exactRequest("{}"))).text();
      assert.equal(proxy.seen.length, count, "NO_PROXY: straight to the server");
    } finally {
      proxied.close();
      bypassing.close();
      secure.closeAllConnections();
      secure.close();
      await proxy.close();
    }
  });
});

describe("http-fetch: connect timeout (undici's connectTimeout)", { timeout: 20_000 }, () => {
  test("a TLS handshake that never completes: fetch failed, UND_ERR_CONNECT_TIMEOUT", async () => {
    const silent = await startSilentServer();
    const quick = createHttpFetch({ connectTimeoutMs: 100 });
    try {
      const error = await rejection(
        quick.fetch(`https://127.0.0.1:${silent.port}/`, exactRequest("{}")),
      );
      assert.ok(error instanceof TypeError);
      assert.equal(describeError(error), "fetch failed (UND_ERR_CONNECT_TIMEOUT)");
      await silent.allClosed();
    } finally {
      quick.close();
      await silent.close();
    }
  });

  test("a lookup that never answers (no connection at all): UND_ERR_CONNECT_TIMEOUT", async () => {
    // The connect phase before a TCP connection: the same timer covers DNS and the SYN.
    const quick = createHttpFetch({ connectTimeoutMs: 100, tls: { lookup: () => undefined } });
    try {
      const error = await rejection(
        quick.fetch("https://provider.invalid/v1/chat", exactRequest("{}")),
      );
      assert.equal(describeError(error), "fetch failed (UND_ERR_CONNECT_TIMEOUT)");
    } finally {
      quick.close();
    }
  });

  test("a proxy that never answers CONNECT: UND_ERR_CONNECT_TIMEOUT", async () => {
    const proxy = await startSilentServer();
    const quick = createHttpFetch({
      connectTimeoutMs: 100,
      proxyEnv: { HTTPS_PROXY: `http://127.0.0.1:${proxy.port}` },
    });
    try {
      const error = await rejection(quick.fetch("https://127.0.0.1:9/", exactRequest("{}")));
      assert.equal(describeError(error), "fetch failed (UND_ERR_CONNECT_TIMEOUT)");
      assert.equal(proxy.accepted(), 1);
      await proxy.allClosed();
    } finally {
      quick.close();
      await proxy.close();
    }
  });

  test("through the exact fetch: retried, and a connection failure for failover", async () => {
    const silent = await startSilentServer();
    const quick = createHttpFetch({ connectTimeoutMs: 50 });
    const { sleep, delays } = recordingSleep();
    const exact = createExactFetch({
      callID: "c",
      model: "m",
      baseFetch: quick.fetch,
      policy: createRetryPolicy({ sleep, random: () => 0 }),
      signal: new AbortController().signal,
      secrets: [],
    });
    try {
      const error = await rejection(
        exact.fetch(`https://127.0.0.1:${silent.port}/v1/chat`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{}",
        }),
      );
      assert.equal(describeError(error), "fetch failed (UND_ERR_CONNECT_TIMEOUT)");
      assert.equal(delays.length, 3, "4 attempts, as for any connection failure");
      assert.equal(silent.accepted(), 4);
      assert.equal(toFailureKind(exact.state.attempts, (error as Error).message), "connection");
    } finally {
      quick.close();
      await silent.close();
    }
  });

  test("answers slower than the connect timeout come: http, https, via a proxy, new and reused", async () => {
    const proxy = await startProxy();
    const ca = await createCertificateAuthority({ permittedDomains: [] });
    const leaf = await createLeafIssuer(ca, { permittedDomains: [] }).certificateFor("localhost");
    // Headers 4 × the connect timeout after the request: only a timer still running fails them.
    const secure = https.createServer({ cert: leaf.certPem, key: leaf.keyPem }, (_r, response) => {
      setTimeout(() => response.end("late"), 200);
    });
    await new Promise<void>((resolve) => secure.listen(0, "127.0.0.1", resolve));
    const { port } = secure.address() as AddressInfo;
    const tls = { ca: ca.certPem, servername: "localhost" };
    const direct = createHttpFetch({ connectTimeoutMs: 50, tls });
    const proxied = createHttpFetch({
      connectTimeoutMs: 50,
      tls,
      proxyEnv: { HTTP_PROXY: proxy.url, HTTPS_PROXY: proxy.url },
    });
    server.handle((_request, response) => {
      setTimeout(() => response.end("late"), 200);
    });
    try {
      for (const send of [direct.fetch, proxied.fetch]) {
        for (const url of [server.url, `https://127.0.0.1:${port}/`]) {
          for (let round = 0; round < 2; round++) {
            const response = await send(url, exactRequest("{}"));
            assert.equal(await response.text(), "late", `${url} round ${round}`);
          }
        }
      }
      assert.ok(proxy.seen.includes(`CONNECT 127.0.0.1:${port}`));
    } finally {
      direct.close();
      proxied.close();
      secure.closeAllConnections();
      secure.close();
      await proxy.close();
    }
  });

  test("many calls leave no timer running and, once closed, no handle", async () => {
    const ca = await createCertificateAuthority({ permittedDomains: [] });
    const leaf = await createLeafIssuer(ca, { permittedDomains: [] }).certificateFor("localhost");
    const secure = https.createServer(
      { cert: leaf.certPem, key: leaf.keyPem },
      (request, response) => sseStart(request, response, Buffer.alloc(0)),
    );
    await new Promise<void>((resolve) => secure.listen(0, "127.0.0.1", resolve));
    const { port } = secure.address() as AddressInfo;
    const counted = () => {
      const counts = new Map<string, number>();
      for (const kind of process.getActiveResourcesInfo()) {
        counts.set(kind, (counts.get(kind) ?? 0) + 1);
      }
      return counts;
    };
    const before = counted();
    const own = createHttpFetch({ tls: { ca: ca.certPem, servername: "localhost" } });
    server.handle(sseStart);
    try {
      // Streams held open (the timer must go at connect, not only when the call ends), then
      // calls that end; a refused connection and an abort too.
      const open: ReadableStreamDefaultReader<Uint8Array>[] = [];
      for (const url of [server.url, `https://127.0.0.1:${port}/`]) {
        const responses = await Promise.all(
          Array.from({ length: 20 }, () => own.fetch(url, exactRequest("{}"))),
        );
        for (const response of responses) {
          const reader = (response.body as ReadableStream<Uint8Array>).getReader();
          await reader.read();
          open.push(reader);
        }
      }
      assert.equal(counted().get("Timeout") ?? 0, before.get("Timeout") ?? 0, "timers while open");
      for (const reader of open) await reader.cancel();
      await rejection(own.fetch(`http://127.0.0.1:${await closedPort()}/`, exactRequest("{}")));
      const aborted = new AbortController();
      const pending = own.fetch(server.url, exactRequest("{}", aborted.signal));
      aborted.abort();
      await rejection(pending);
      server.handle((_request, response) => response.end("ok"));
      for (let call = 0; call < 20; call++) {
        await (await own.fetch(server.url, exactRequest("{}"))).text();
      }
      assert.equal(counted().get("Timeout") ?? 0, before.get("Timeout") ?? 0, "timers after");
    } finally {
      own.close();
      secure.closeAllConnections();
      secure.close();
    }
    await idleTurns(20);
    const after = counted();
    for (const [kind, count] of after) {
      if (kind === "Timeout") continue;
      assert.ok(count <= (before.get(kind) ?? 0), `${kind}: ${before.get(kind) ?? 0} → ${count}`);
    }
  });
});

test("createLLM sends over this transport; Node's fetch with CURSOR_BYOK_UPSTREAM_FETCH=global or an env proxy it cannot take", async () => {
  const provider = await startFakeProvider();
  const original = globalThis.fetch;
  let globalCalls = 0;
  globalThis.fetch = ((input: string | URL | Request, init?: RequestInit) => {
    globalCalls++;
    return original(input, init);
  }) as typeof fetch;
  try {
    // This process was started without NODE_USE_ENV_PROXY: its global agent has no proxyEnv, as
    // on a Node < 24.5 that was, so asking for env proxying must fall back to Node's fetch.
    for (const [env, expected, warned] of [
      [{}, 0, undefined],
      [{ CURSOR_BYOK_UPSTREAM_FETCH: "global" }, 1, undefined],
      [{ NODE_USE_ENV_PROXY: "1" }, 1, /NODE_USE_ENV_PROXY .* Node's fetch instead/],
      [{ CURSOR_BYOK_UPSTREAM_FETCH: "undici" }, 0, /"undici" is not "global": ignored/],
    ] as const) {
      globalCalls = 0;
      const warnings: string[] = [];
      const llm = createLLM({
        onWarning: (message) => warnings.push(message),
        models: [
          createModelConfig({
            name: "m",
            api: "openai-compatible",
            model: "scripted",
            baseUrl: `${provider.url}/v1`,
            apiKey: "sk-test",
          }),
        ],
        env,
      });
      provider.reply({ type: "sse", body: readFixture("openai-chat", "text") });
      const events = await collect(
        llm.stream({ callID: "c", model: "m", request: firstRequest(), conversationID: "v" }),
      );
      assert.equal(terminalOf(events).type, "done");
      assert.equal(globalCalls, expected, JSON.stringify(env));
      if (warned === undefined) assert.deepEqual(warnings, []);
      else {
        assert.equal(warnings.length, 1);
        assert.match(warnings[0] ?? "", warned);
      }
    }
  } finally {
    globalThis.fetch = original;
    await provider.close();
  }
});

test("envProxyGap: env proxying asked for, and an agent that cannot take it", () => {
  const plain = new http.Agent();
  const proxying = new http.Agent({ proxyEnv: {} } as http.AgentOptions);
  assert.equal(envProxyGap({}, [], plain), undefined, "not asked");
  assert.equal(envProxyGap({ NODE_USE_ENV_PROXY: "1" }, [], proxying), undefined, "agent takes it");
  assert.match(envProxyGap({ NODE_USE_ENV_PROXY: "1" }, [], plain) ?? "", /Node's fetch/);
  assert.match(envProxyGap({}, ["--use-env-proxy"], plain) ?? "", /Node's fetch/);
  assert.match(envProxyGap({ NODE_OPTIONS: "--use-env-proxy" }, [], plain) ?? "", /Node's fetch/);
  // This Node (>= 24.5, engines) started without it: nothing to fall back from.
  assert.equal(envProxyGap(process.env), undefined);
});

test("NODE_USE_ENV_PROXY=1 and HTTP_PROXY: the default transport goes through the proxy (child process)", async () => {
  const proxy = await startProxy();
  server.handle((_request, response) => response.end("proxied by env"));
  const script = [
    `import { createHttpFetch, envProxyGap } from ${JSON.stringify(new URL("./http-fetch.ts", import.meta.url).href)};`,
    `if (envProxyGap(process.env) !== undefined) throw new Error(envProxyGap(process.env));`,
    `const { fetch, close } = createHttpFetch();`,
    `const response = await fetch(${JSON.stringify(`${server.url}/v1/env`)}, { method: "POST", body: "{}" });`,
    "process.stdout.write(await response.text());",
    "close();",
  ].join("\n");
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_USE_ENV_PROXY: "1", HTTP_PROXY: proxy.url };
  for (const name of ["NO_PROXY", "no_proxy", "http_proxy", "HTTPS_PROXY", "https_proxy"]) {
    delete env[name];
  }
  try {
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let errors = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      errors += chunk.toString();
    });
    const [code] = (await once(child, "exit")) as [number];
    assert.equal(code, 0, errors);
    assert.equal(out, "proxied by env");
    assert.deepEqual(proxy.seen, [`POST ${server.url}/v1/env`]);
  } finally {
    await proxy.close();
  }
});

test("NODE_EXTRA_CA_CERTS is honoured (a child process with the variable set)", async () => {
  const ca = await createCertificateAuthority({ permittedDomains: [] });
  const leaf = await createLeafIssuer(ca, { permittedDomains: [] }).certificateFor("localhost");
  const secure = https.createServer({ cert: leaf.certPem, key: leaf.keyPem }, (_r, response) =>
    response.end("trusted via NODE_EXTRA_CA_CERTS"),
  );
  await new Promise<void>((resolve) => secure.listen(0, "127.0.0.1", resolve));
  const { port } = secure.address() as AddressInfo;
  const directory = mkdtempSync(join(tmpdir(), "http-fetch-ca-"));
  const caFile = join(directory, "ca.pem");
  writeFileSync(caFile, ca.certPem);
  const script = [
    `import { createHttpFetch } from ${JSON.stringify(new URL("./http-fetch.ts", import.meta.url).href)};`,
    `const { fetch, close } = createHttpFetch({ tls: { servername: "localhost" } });`,
    `const response = await fetch("https://127.0.0.1:${port}/");`,
    "process.stdout.write(await response.text());",
    "close();",
  ].join("\n");
  try {
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: caFile },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let errors = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      errors += chunk.toString();
    });
    const [code] = (await once(child, "exit")) as [number];
    assert.equal(code, 0, errors);
    assert.equal(out, "trusted via NODE_EXTRA_CA_CERTS");
  } finally {
    rmSync(directory, { recursive: true, force: true });
    secure.closeAllConnections();
    secure.close();
  }
});

/** Resolves when `socket` has closed, whether or not it failed first. */
function closeOf(socket: net.Socket): Promise<void> {
  return new Promise((resolve) => socket.once("close", () => resolve()));
}

/** Event-loop turns in which nothing else is awaited: enough for loopback bytes to move. */
async function idleTurns(count: number): Promise<void> {
  for (let turn = 0; turn < count; turn++) {
    await new Promise((resolve) => setImmediate(resolve));
  }
}

async function closedPort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** A TCP server on 127.0.0.1 that accepts and never says a word (no TLS handshake, no CONNECT answer). */
async function startSilentServer(): Promise<{
  readonly port: number;
  accepted(): number;
  /** Resolves once every accepted connection has been closed (by the client). */
  allClosed(): Promise<void>;
  close(): Promise<void>;
}> {
  const sockets: net.Socket[] = [];
  const closed: Promise<void>[] = [];
  const silent = net.createServer((socket) => {
    sockets.push(socket);
    socket.on("error", () => undefined);
    // Read (and drop) what comes, or the client's close is never seen.
    socket.resume();
    closed.push(closeOf(socket));
  });
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  const { port } = silent.address() as AddressInfo;
  return {
    port,
    accepted: () => sockets.length,
    allClosed: async () => {
      await Promise.all(closed);
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => silent.close(() => resolve()));
    },
  };
}

/** A forward proxy on 127.0.0.1: absolute-form requests and CONNECT tunnels, recorded. */
async function startProxy(): Promise<{
  readonly url: string;
  readonly seen: string[];
  close(): Promise<void>;
}> {
  const seen: string[] = [];
  const proxy = http.createServer((request, response) => {
    seen.push(`${request.method} ${request.url}`);
    const target = new URL(request.url ?? "");
    const upstream = http.request(
      target,
      { method: request.method, headers: request.headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    request.pipe(upstream);
  });
  proxy.on("connect", (request: IncomingMessage, socket: net.Socket, head: Buffer) => {
    seen.push(`CONNECT ${request.url}`);
    const [host, port] = (request.url ?? "").split(":");
    const upstream = net.connect(Number(port), host, () => {
      socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on("error", () => socket.destroy());
    socket.on("error", () => upstream.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const { port } = proxy.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => {
      proxy.closeAllConnections();
      return new Promise((resolve) => proxy.close(() => resolve()));
    },
  };
}
