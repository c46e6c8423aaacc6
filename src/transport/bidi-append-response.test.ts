/**
 * The direct BidiAppend responder (bidi-append-response.ts) against Connect's handler: the same
 * raw requests get the same status, headers (but `date`) and body bytes from both, through the
 * real server (option `bidiAppendResponder`) and, for what the server cannot be made to answer
 * (a long error, error metadata, a thrown non-Connect error), through the handler alone with a
 * scripted append. Requests the direct responder does not take are shown to reach Connect.
 */
import assert from "node:assert/strict";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import {
  type ClientRequest,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
} from "node:http";
import {
  createServer as createHttp2Server,
  type Http2ServerResponse,
  connect as http2Connect,
} from "node:http2";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import { create, toBinary, toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { ApplyBidiAppend } from "./bidi-append-apply.ts";
import { createBidiAppendHandler } from "./bidi-append-response.ts";
import { asClientFault } from "./client-faults.ts";
import { AgentClientMessageSchema } from "./cursor/gen/agent/v1/agent_stream_pb.js";
import { BidiAppendRequestSchema } from "./cursor/gen/aiserver/v1/bidi_pb.js";
import { BidiRequestIdSchema } from "./cursor/index.ts";
import { type Harness, MODEL, startHarness } from "./e2e/test-harness.ts";
import type { RequestHandler } from "./http/listen.ts";
import { silentLog } from "./log.ts";
import { createRoutes } from "./routes.ts";
import { COMPRESS_MIN_BYTES, CONNECT_COMPRESSION } from "./run-sse-response.ts";
import { createRunRequest } from "./testing/run-request.ts";

const PATH = "/aiserver.v1.BidiService/BidiAppend";
const ALIAS = "/agent.v1.AgentService/BidiAppend";
const REQUEST_ID = "5d1c7f2e-1111-4a5b-8c6d-7e8f9a0b1c2d";
const CONVERSATION = "7a6b5c4d-1111-4a5b-8c6d-7e8f9a0b1c2d";
/** The message limit of the handler-alone servers. */
const LIMIT = 64 * 1024;
const PROTO = { "content-type": "application/proto", "connect-protocol-version": "1" };

interface Answer {
  readonly status: number;
  /** Raw header names and values in order, without `date`. */
  readonly headers: readonly string[];
  readonly body: Buffer;
}

/** Sends `body` as one raw HTTP/1.1 request (`content-length` unless `chunked`). */
function post(
  url: string,
  body: Uint8Array,
  options: { headers?: Record<string, string>; path?: string; chunked?: boolean } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${url}${options.path ?? PATH}`, {
      method: "POST",
      agent: false,
      headers: {
        ...PROTO,
        ...(options.chunked === true ? {} : { "content-length": String(body.length) }),
        ...options.headers,
      },
    });
    request.on("response", (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => {
        const headers: string[] = [];
        for (let i = 0; i < response.rawHeaders.length; i += 2) {
          const name = response.rawHeaders[i] as string;
          if (name.toLowerCase() !== "date") headers.push(name, response.rawHeaders[i + 1] ?? "");
        }
        resolve({ status: response.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
      });
      response.on("error", reject);
    });
    request.on("error", reject);
    if (options.chunked === true) {
      request.write(body.subarray(0, 1));
      request.end(body.subarray(1));
    } else {
      request.end(body);
    }
  });
}

function append(seqno: number, message: Parameters<typeof toAgentMessage>[0]): Uint8Array {
  return toBinary(
    BidiAppendRequestSchema,
    create(BidiAppendRequestSchema, {
      requestId: create(BidiRequestIdSchema, { requestId: REQUEST_ID }),
      appendSeqno: BigInt(seqno),
      data: Buffer.from(toAgentMessage(message)).toString("hex"),
    }),
  );
}

function toAgentMessage(kind: "run" | "heartbeat"): Uint8Array {
  const message =
    kind === "run"
      ? create(AgentClientMessageSchema, {
          message: {
            case: "runRequest",
            value: createRunRequest({
              conversationId: CONVERSATION,
              text: "hi",
              modelId: MODEL,
              workspace: "/tmp",
              messageId: "m-1",
              os: "linux",
            }),
          },
        })
      : create(AgentClientMessageSchema, { message: { case: "clientHeartbeat", value: {} } });
  return toBinary(AgentClientMessageSchema, message);
}

function errorOf(answer: Answer): { code: string; message: string } {
  return JSON.parse(answer.body.toString("utf8")) as { code: string; message: string };
}

describe("BidiAppend through the server, direct and through Connect", () => {
  const harnesses: Record<"direct" | "connect", Harness | undefined> = {
    direct: undefined,
    connect: undefined,
  };
  before(async () => {
    for (const responder of ["direct", "connect"] as const) {
      const harness = await startHarness({ server: { bidiAppendResponder: responder } });
      harness.reply({ text: "Hello." });
      harnesses[responder] = harness;
    }
  });
  after(async () => {
    await harnesses.direct?.close();
    await harnesses.connect?.close();
  });

  /** Sends the same request to both servers (direct first) and checks the answers are equal. */
  async function both(body: Uint8Array, options: Parameters<typeof post>[2] = {}): Promise<Answer> {
    const direct = await post((harnesses.direct as Harness).server.url, body, options);
    const connect = await post((harnesses.connect as Harness).server.url, body, options);
    assert.deepEqual(
      { status: direct.status, headers: direct.headers, body: direct.body.toString("hex") },
      { status: connect.status, headers: connect.headers, body: connect.body.toString("hex") },
    );
    return direct;
  }

  // In order: each test leaves the stream as the next expects.
  test("a run request is appended: 200 and the empty response", async () => {
    const answer = await both(append(0, "run"));
    assert.equal(answer.status, 200);
    assert.equal(answer.body.length, 0);
    assert.ok(answer.headers.includes("application/proto"));
  });

  test("an append the stream refuses (too far ahead) is append_out_of_order", async () => {
    const answer = await both(append(1000, "heartbeat"), { path: ALIAS });
    assert.equal(answer.status, 400);
    assert.equal(errorOf(answer).code, "failed_precondition");
    assert.match(errorOf(answer).message, /1000/);
  });

  test("an append to a stream that does not exist is refused alike", async () => {
    const body = toBinary(
      BidiAppendRequestSchema,
      create(BidiAppendRequestSchema, {
        requestId: create(BidiRequestIdSchema, { requestId: "no-such-stream" }),
        appendSeqno: 1n,
        data: Buffer.from(toAgentMessage("heartbeat")).toString("hex"),
      }),
    );
    const answer = await both(body);
    assert.notEqual(answer.status, 200);
  });

  test("a body that is not a BidiAppendRequest is invalid_argument (asClientFault)", async () => {
    const answer = await both(Uint8Array.of(0x0a, 0xff, 0xff, 0xff));
    assert.equal(answer.status, 400);
    assert.equal(errorOf(answer).code, "invalid_argument");
    assert.match(errorOf(answer).message, /parse binary/);
  });

  test("a request whose message does not decode is bad_input", async () => {
    const body = toBinary(
      BidiAppendRequestSchema,
      create(BidiAppendRequestSchema, {
        requestId: create(BidiRequestIdSchema, { requestId: REQUEST_ID }),
        appendSeqno: 1n,
        data: "not hex",
      }),
    );
    const answer = await both(body);
    assert.equal(answer.status, 400);
    assert.equal(errorOf(answer).code, "invalid_argument");
  });

  test("an empty body (no request id) is refused alike", async () => {
    const answer = await both(new Uint8Array(0));
    assert.equal(answer.status, 400);
  });

  test("what the direct responder leaves to Connect is answered alike", async () => {
    const json = new TextEncoder().encode(
      toJsonString(
        BidiAppendRequestSchema,
        create(BidiAppendRequestSchema, {
          requestId: create(BidiRequestIdSchema, { requestId: REQUEST_ID }),
          appendSeqno: 1000n,
        }),
      ),
    );
    await both(json, { headers: { "content-type": "application/json" } });
    await both(gzipSync(append(1000, "heartbeat")), { headers: { "content-encoding": "gzip" } });
    await both(append(1000, "heartbeat"), { headers: { "content-type": "text/plain" } });
  });

  test("a chunked body (connect-es's Node transport) is answered alike", async () => {
    await both(append(1000, "heartbeat"), { chunked: true });
    const answer = await both(append(0, "run"), { chunked: true });
    assert.equal(answer.status, 200);
  });
});

describe("the answer to a run request and its model request", () => {
  // Node's global fetch writes from an immediate of its own: that variant fails without the
  // deferral (`afterQueuedWork`). The default transport (node:http, src/llm/http-fetch.ts) writes
  // from process.nextTick, before the deferral's immediate, so its variant passes with or without
  // the deferral: it does not test the deferral, only that the default transport keeps the order
  // (it fails if the provider request were written later than the answer).
  for (const [transport, fetch] of [
    ["Node's global fetch: the deferral", globalThis.fetch],
    ["the default transport: written before, deferral or not", undefined],
  ] as const) {
    test(`the append is answered after the model call it started was written upstream (${transport})`, async () => {
      const harness = await startHarness(fetch === undefined ? {} : { fetch });
      const order: string[] = [];
      const onModelRequest = (): void => {
        order.push("model request");
      };
      // The provider calls go over node:http (src/llm/http-fetch.ts), which publishes once a
      // request has been written whole; the client's own requests go elsewhere.
      const onHttpRequest = (message: unknown): void => {
        const { request } = message as { request: ClientRequest };
        if (`http://${request.host}:${request.socket?.remotePort}` === harness.provider.url) {
          onModelRequest();
        }
      };
      const onAnswered = (message: unknown): void => {
        const { request } = message as { request: IncomingMessage };
        if (request.url === PATH) order.push("append answered");
      };
      // Node's fetch (undici) publishes when it writes a request's head; the HTTP server when a
      // response has been written.
      subscribe("undici:client:sendHeaders", onModelRequest);
      subscribe("http.client.request.start", onHttpRequest);
      subscribe("http.server.response.finish", onAnswered);
      try {
        harness.reply({ text: "Hello." }, { text: "Again." });
        const client = harness.client();
        // The first turn opens the connection to the provider (its request waits for the connect);
        // the second sends on the kept-alive one, as a server that has served a turn does.
        const first = await client.startTurn({
          conversationId: CONVERSATION,
          text: "hi",
          modelId: MODEL,
        }).done;
        assert.equal(first.error, undefined);
        order.length = 0;
        const second = await client.startTurn({
          conversationId: CONVERSATION,
          text: "again",
          modelId: MODEL,
        }).done;
        assert.equal(second.error, undefined);
        assert.deepEqual(order.slice(0, 2), ["model request", "append answered"], order.join(", "));
      } finally {
        unsubscribe("undici:client:sendHeaders", onModelRequest);
        unsubscribe("http.client.request.start", onHttpRequest);
        unsubscribe("http.server.response.finish", onAnswered);
        await harness.close();
      }
    });
  }
});

describe("the BidiAppend handler alone, with a scripted append", () => {
  let apply: ApplyBidiAppend = async () => {};
  const connectCalls = { count: 0 };
  const servers: Server[] = [];
  const urls = { direct: "", connect: "" };

  before(async () => {
    const connect = connectNodeAdapter({
      routes: createRoutes(undefined as never, undefined as never, Date.now, silentLog, {
        openRunSse: undefined as never,
        applyBidiAppend: (request, header) => apply(request, header),
        offerHttp2: false,
        pathEncryptionKeys: undefined as never,
        helper: undefined as never,
      }),
      acceptCompression: [...CONNECT_COMPRESSION],
      compressMinBytes: COMPRESS_MIN_BYTES,
      readMaxBytes: LIMIT,
    });
    const counted: RequestHandler = (request, response) => {
      connectCalls.count += 1;
      connect(request, response as Parameters<typeof connect>[1]);
    };
    for (const responder of ["direct", "connect"] as const) {
      const handler = createBidiAppendHandler({
        apply: (request, header, hex) => apply(request, header, hex),
        connect: counted,
        responder,
        maxMessageBytes: LIMIT,
        log: silentLog,
      });
      const server = createServer((request, response) => {
        asClientFault(response, () => {});
        handler(request, response);
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      servers.push(server);
      urls[responder] = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    }
  });
  after(async () => {
    for (const server of servers) {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  /** Sends to both; checks the answers are equal and whether Connect answered the direct one. */
  async function both(
    body: Uint8Array,
    options: Parameters<typeof post>[2],
    viaConnect: boolean,
  ): Promise<Answer> {
    const before = connectCalls.count;
    const direct = await post(urls.direct, body, options);
    assert.equal(connectCalls.count - before, viaConnect ? 1 : 0, "the direct server's path");
    const connect = await post(urls.connect, body, options);
    assert.equal(connectCalls.count - before, viaConnect ? 2 : 1);
    assert.deepEqual(
      { status: direct.status, headers: direct.headers, body: direct.body.toString("hex") },
      { status: connect.status, headers: connect.headers, body: connect.body.toString("hex") },
    );
    return direct;
  }

  test("success, with the request's message and x-request-id given to the append", async () => {
    const seen: string[] = [];
    apply = async (request, header) => {
      seen.push(`${request.requestId?.requestId} ${request.appendSeqno} ${header}`);
    };
    const answer = await both(
      append(3, "heartbeat"),
      { headers: { "x-request-id": REQUEST_ID, "accept-encoding": "gzip" } },
      false,
    );
    assert.equal(answer.status, 200);
    assert.deepEqual(seen, [`${REQUEST_ID} 3 ${REQUEST_ID}`, `${REQUEST_ID} 3 ${REQUEST_ID}`]);
  });

  test("a long error is gzip-compressed for a client that accepts gzip", async () => {
    apply = async () => {
      throw new ConnectError("x".repeat(2 * COMPRESS_MIN_BYTES), Code.FailedPrecondition);
    };
    const answer = await both(
      append(1, "heartbeat"),
      { headers: { "accept-encoding": "gzip" } },
      false,
    );
    assert.equal(answer.status, 400);
    assert.ok(answer.headers.includes("content-encoding"), answer.headers.join(" "));
    assert.ok(answer.body.length < COMPRESS_MIN_BYTES);
    // Not compressed for a client that does not say it accepts it.
    const plain = await both(append(1, "heartbeat"), {}, false);
    assert.ok(!plain.headers.includes("content-encoding"));
  });

  test("an error's metadata becomes headers", async () => {
    apply = async () => {
      throw new ConnectError("busy", Code.ResourceExhausted, { "retry-after": "3" });
    };
    const answer = await both(append(1, "heartbeat"), {}, false);
    assert.equal(answer.status, 429);
    assert.ok(answer.headers.includes("retry-after"));
  });

  test("a thrown non-Connect error is `internal error`", async () => {
    apply = async () => {
      throw new Error("secret detail");
    };
    const answer = await both(append(1, "heartbeat"), {}, false);
    assert.equal(answer.status, 500);
    assert.equal(errorOf(answer).message, "internal error");
  });

  test("a chunked body is served directly up to the limit; a larger one goes to Connect whole", async () => {
    const seen: string[] = [];
    apply = async (request, _header, hex) => {
      // The direct responder decodes the hex as it reads it (cursor/bidi-append-reader.ts).
      seen.push(hex === undefined ? request.data : Buffer.from(hex).toString("hex"));
    };
    const answer = await both(append(2, "heartbeat"), { chunked: true }, false);
    assert.equal(answer.status, 200);
    // Both got the whole message, read from a body sent in two chunks.
    const message = Buffer.from(toAgentMessage("heartbeat")).toString("hex");
    assert.deepEqual(seen, [message, message]);
    // Exactly at the limit: read and parsed here (it is no BidiAppendRequest).
    await both(new Uint8Array(LIMIT), { chunked: true }, false);
    // Over it: every byte put back, so Connect refuses it as before.
    const oversized = await both(new Uint8Array(LIMIT + 1), { chunked: true }, true);
    assert.equal(errorOf(oversized).code, "resource_exhausted");
    // A valid request behind a large field: Connect gets all of it, not what was left.
    const big = toBinary(
      BidiAppendRequestSchema,
      create(BidiAppendRequestSchema, {
        requestId: create(BidiRequestIdSchema, { requestId: REQUEST_ID }),
        appendSeqno: 4n,
        data: "ab".repeat(LIMIT),
      }),
    );
    const refused = await both(big, { chunked: true }, true);
    assert.equal(errorOf(refused).code, "resource_exhausted");
  });

  test("JSON, compressed, timed and oversized requests go to Connect", async () => {
    apply = async () => {};
    const json = new TextEncoder().encode(
      toJsonString(
        BidiAppendRequestSchema,
        create(BidiAppendRequestSchema, {
          requestId: create(BidiRequestIdSchema, { requestId: REQUEST_ID }),
        }),
      ),
    );
    await both(json, { headers: { "content-type": "application/json" } }, true);
    await both(gzipSync(append(1, "heartbeat")), { headers: { "content-encoding": "gzip" } }, true);
    await both(append(1, "heartbeat"), { headers: { "connect-timeout-ms": "5000" } }, true);
    await both(append(1, "heartbeat"), { headers: { "content-encoding": "zstd" } }, true);
    await both(append(1, "heartbeat"), { headers: { "content-type": "application/xml" } }, true);
    const oversized = await both(new Uint8Array(LIMIT + 1), {}, true);
    assert.equal(errorOf(oversized).code, "resource_exhausted");
    await both(new Uint8Array(LIMIT), {}, false);
    // Identity is no compression: served directly.
    await both(append(1, "heartbeat"), { headers: { "content-encoding": "identity" } }, false);
  });

  test("HTTP/2 requests go to Connect", async () => {
    apply = async () => {};
    const handler = createBidiAppendHandler({
      apply,
      connect: (request, response) => {
        connectCalls.count += 1;
        request.resume();
        (response as Http2ServerResponse).writeHead(204);
        (response as Http2ServerResponse).end();
      },
      responder: "direct",
      maxMessageBytes: LIMIT,
      log: silentLog,
    });
    const server = createHttp2Server((request, response) => handler(request, response));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const session = http2Connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    const before = connectCalls.count;
    const body = append(1, "heartbeat");
    const status = await new Promise<number>((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": PATH,
        ...PROTO,
        "content-length": String(body.length),
      });
      stream.on("response", (headers) => resolve(Number(headers[":status"])));
      stream.on("error", reject);
      stream.end(body);
      stream.resume();
    });
    session.close();
    await new Promise((resolve) => server.close(resolve));
    assert.equal(status, 204);
    assert.equal(connectCalls.count - before, 1);
  });
});
