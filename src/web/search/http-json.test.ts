import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, describe, test } from "node:test";
import { type FakeWebServer, startFakeWebServer } from "../testing/fake-web-server.ts";
import { requestJson } from "./http-json.ts";

const KEY = "secret-key-that-must-not-leak";

describe("requestJson: failures become one-line messages", () => {
  let server: FakeWebServer;
  before(async () => {
    server = await startFakeWebServer((request, response) => {
      if (request.url === "/hang") return undefined; // never answers
      if (request.url === "/html") {
        response.writeHead(200, { "content-type": "text/html" });
        return response.end("<html>not json</html>");
      }
      if (request.url === "/echo-key") {
        response.writeHead(500, { "content-type": "text/plain" });
        return response.end(`internal error for key ${KEY}\nat line 2`);
      }
      response.writeHead(503, { "content-type": "application/json" });
      return response.end(JSON.stringify({ message: "overloaded" }));
    });
  });
  after(() => server.close());

  const call = (path: string, timeoutMs = 5_000, signal?: AbortSignal) =>
    requestJson({
      provider: "P",
      url: new URL(path, server.url),
      method: "GET",
      headers: { "x-key": KEY },
      timeoutMs,
      ...(signal === undefined ? {} : { signal }),
      secrets: [KEY],
      toDetail: (body) => (body as { message?: string }).message,
    });

  test("provider down: the connection is refused", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const outcome = await requestJson({
      provider: "P",
      url: new URL(`http://127.0.0.1:${port}/`),
      method: "GET",
      headers: {},
      timeoutMs: 5_000,
      secrets: [],
      toDetail: () => undefined,
    });
    assert.deepEqual(outcome, { ok: false, message: "P could not be reached (ECONNREFUSED)" });
  });

  test("a provider that never answers times out", async () => {
    assert.deepEqual(await call("/hang", 200), {
      ok: false,
      message: "P did not answer within 0.2 s",
    });
  });

  test("the caller's abort is a cancel, not a timeout", async () => {
    const controller = new AbortController();
    const pending = call("/hang", 60_000, controller.signal);
    controller.abort();
    assert.deepEqual(await pending, { ok: false, message: "the search was canceled" });
  });

  test("5xx with the provider's message; a 200 that is not JSON", async () => {
    assert.deepEqual(await call("/down"), {
      ok: false,
      message: "P failed (HTTP 503 Service Unavailable): overloaded",
    });
    assert.deepEqual(await call("/html"), {
      ok: false,
      message: "P answered with something that is not JSON",
    });
  });

  test("an error body that echoes the key is redacted and kept on one line", async () => {
    const outcome = await call("/echo-key");
    assert.deepEqual(outcome, {
      ok: false,
      message:
        "P failed (HTTP 500 Internal Server Error): internal error for key [redacted] at line 2",
    });
  });
});
