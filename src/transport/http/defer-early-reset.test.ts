/**
 * The reset Connect's handler sends right after a response whose client has not ended its
 * request, put off (defer-early-reset.ts). The server here does what Connect's does
 * (`waitForTrailers`, trailers, then `close(NO_ERROR)` on setImmediate); the client is Node's
 * http2 client reading as connect-es does (the stream's async iterator), its request left open as
 * a bidi `Run` client leaves it.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import http2, { type ClientHttp2Stream, type ServerHttp2Stream } from "node:http2";
import type { AddressInfo } from "node:net";
import { afterEach, test } from "node:test";
import { deferEarlyReset } from "./defer-early-reset.ts";

const BODY_BYTES = 256 * 1024;

interface Setup {
  readonly server: http2.Http2Server;
  readonly client: http2.ClientHttp2Session;
  /** The server side of the next request, with its response written whole. */
  readonly served: Promise<ServerHttp2Stream>;
}

let setup: Setup | undefined;
afterEach(async () => {
  if (setup === undefined) return;
  setup.client.destroy();
  await new Promise<void>((resolve) => setup?.server.close(() => resolve()));
  setup = undefined;
});

/** `resetCode`: what the server closes the stream with after the trailers (Connect: NO_ERROR). */
async function start(graceMs: number | null, resetCode = http2.constants.NGHTTP2_NO_ERROR) {
  const server = http2.createServer();
  const served = new Promise<ServerHttp2Stream>((resolve) => {
    server.once("stream", (stream) => {
      if (graceMs !== null) deferEarlyReset(stream, graceMs);
      stream.respond({ ":status": 200 }, { waitForTrailers: true });
      stream.once("wantTrailers", () => {
        stream.sendTrailers({});
        setImmediate(() => {
          if (stream.state.remoteClose === 0) stream.close(resetCode);
          resolve(stream);
        });
      });
      stream.end(Buffer.alloc(BODY_BYTES, 0x61));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  // A window that holds the whole response, so that the server finishes while nobody reads.
  const client = http2.connect(`http://127.0.0.1:${port}`, {
    settings: { initialWindowSize: 4 * BODY_BYTES },
  });
  setup = { server, client, served };
  return setup;
}

/** A request whose body is never ended, as a bidi `Run`'s. */
function open(client: http2.ClientHttp2Session): ClientHttp2Stream {
  const stream = client.request({ ":method": "POST", ":path": "/run" }, { endStream: false });
  stream.write("request");
  return stream;
}

/** Reads the whole response, as connect-es does: the stream's async iterator. */
async function readAll(stream: ClientHttp2Stream): Promise<number> {
  let bytes = 0;
  for await (const chunk of stream) bytes += (chunk as Buffer).length;
  return bytes;
}

/** Resolves once a PING went to the server and back: everything it sent before has arrived. */
function roundTrip(client: http2.ClientHttp2Session): Promise<void> {
  return new Promise((resolve, reject) =>
    client.ping((error) => (error === null ? resolve() : reject(error))),
  );
}

test("without it, a client that reads the end late fails with Premature close", async () => {
  const { client, served } = await start(null);
  const stream = open(client);
  await served;
  await roundTrip(client);
  await assert.rejects(readAll(stream), { code: "ERR_STREAM_PREMATURE_CLOSE" });
});

test("a client that reads the end late gets all of it; the stream closes when the client closes it", async () => {
  const { client, served } = await start(60_000);
  const stream = open(client);
  const server = await served;
  await roundTrip(client);
  await roundTrip(client);
  assert.equal(server.closed, false, "not reset while the client has not read the end");
  assert.equal(await readAll(stream), BODY_BYTES);
  // A client that read the end and has nothing more to send resets its side with NO_ERROR.
  stream.close(http2.constants.NGHTTP2_NO_ERROR);
  await once(server, "close");
  assert.equal(server.rstCode, http2.constants.NGHTTP2_NO_ERROR);
});

test("a client that neither reads the end nor closes its side is reset after the grace", async () => {
  const { client, served } = await start(50);
  const stream = open(client);
  const server = await served;
  await once(server, "close");
  assert.equal(server.rstCode, http2.constants.NGHTTP2_NO_ERROR);
  stream.destroy();
});

test("a reset with an error code is not put off", async () => {
  const { client, served } = await start(60_000, http2.constants.NGHTTP2_CANCEL);
  const stream = open(client);
  stream.on("error", () => {});
  const server = await served;
  if (!server.closed) await once(server, "close");
  assert.equal(server.rstCode, http2.constants.NGHTTP2_CANCEL);
});
