import assert from "node:assert/strict";
import {
  type ClientRequest,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type Server,
  type ServerResponse,
} from "node:http";
import { type AddressInfo, connect } from "node:net";
import { describe, test } from "node:test";
import { gunzipSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { AgentServerMessageSchema } from "./cursor/gen/agent/v1/agent_stream_pb.js";
import {
  type AgentServerMessage,
  BidiRequestIdSchema,
  joinDeltas,
  toConnectError,
  toHeartbeatMessage,
} from "./cursor/index.ts";
import { toUpdateMessage } from "./cursor/server-message.ts";
import { silentLog } from "./log.ts";
import { createOutboundStream, type OutboundStream } from "./outbound-stream.ts";
import { createRoutes } from "./routes.ts";
import type { OpenRunSse } from "./run-sse-open.ts";
import {
  COMPRESS_MIN_BYTES,
  CONNECT_COMPRESSION,
  createRunSseHandler,
  toFramedEnvelope,
} from "./run-sse-response.ts";
import { createStreamResponses, type StreamResponses } from "./stream-responses.ts";

const PATH = "/agent.v1.AgentService/RunSSE";
const text = (value: string) => toUpdateMessage({ case: "textDelta", value: { text: value } });
const thinking = (value: string) =>
  toUpdateMessage({ case: "thinkingDelta", value: { text: value } });

type Responder = "direct" | "connect";

interface Served {
  readonly url: string;
  readonly outbound: OutboundStream<AgentServerMessage>;
  /** Server side: how many subscribers' readings ended. */
  readonly detached: () => number;
  /** Server side: the RunSSE response objects, in arrival order. */
  readonly responses: ServerResponse[];
  /** Server side: the responses as a shutdown sees them (stream-responses.ts). */
  readonly tracked: StreamResponses;
  close(): Promise<void>;
}

/**
 * A RunSSE server as server.ts assembles it (the same handler, Connect adapter settings and
 * route), over one scripted outbound stream (the agent stream's: heartbeats, coalescing).
 */
async function serve(
  responder: Responder,
  settings: {
    readonly heartbeatMs?: number;
    readonly contentType?: "event-stream" | "connect";
    readonly open?: OpenRunSse;
    /** Runs on each response before the handler gets it. */
    readonly onResponse?: (response: ServerResponse) => void;
  } = {},
): Promise<Served> {
  const outbound = createOutboundStream<AgentServerMessage>({
    heartbeatMs: settings.heartbeatMs ?? 60_000,
    heartbeat: toHeartbeatMessage,
    join: joinDeltas,
  });
  let detached = 0;
  const onDetach = () => {
    detached += 1;
  };
  const open: OpenRunSse =
    settings.open ??
    (async () => ({
      subscribe: (signal, onHeld) => outbound.subscribe(signal, onDetach, onHeld),
      read: (signal) => outbound.read(signal, onDetach),
    }));
  const unused = undefined as never;
  const streamResponses = createStreamResponses();
  const connect = connectNodeAdapter({
    contextValues: (request) => streamResponses.contextValues(request),
    routes: createRoutes(unused, unused, Date.now, silentLog, {
      openRunSse: open,
      applyBidiAppend: unused,
      offerHttp2: false,
      pathEncryptionKeys: unused,
      helper: unused,
    }),
    acceptCompression: [...CONNECT_COMPRESSION],
    compressMinBytes: COMPRESS_MIN_BYTES,
  });
  const handler = createRunSseHandler({
    open,
    connect,
    responder,
    contentType: settings.contentType ?? "event-stream",
    maxEnvelopeBytes: 64 * 1024,
    envelopeTimeoutMs: 10_000,
    responses: streamResponses,
    log: silentLog,
  });
  const responses: ServerResponse[] = [];
  const server: Server = createServer((request, response) => {
    responses.push(response);
    settings.onResponse?.(response);
    handler(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    outbound,
    detached: () => detached,
    responses,
    tracked: streamResponses,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

interface Call {
  /** Resolves with the status and headers as soon as the head arrives. */
  readonly head: Promise<{ status: number; headers: IncomingHttpHeaders }>;
  /** Resolves once `count` whole envelopes have arrived. */
  envelopes(count: number): Promise<void>;
  /** The whole body, once the response ended. */
  readonly body: Promise<Buffer>;
  /** Whole envelopes received so far. */
  received(): number;
  readonly request: ClientRequest;
}

/** A raw HTTP/1.1 RunSSE call as a Connect client makes it, reading the body's bytes as they come. */
function call(
  url: string,
  options: { readonly headers?: Record<string, string>; readonly trailing?: Uint8Array } = {},
): Call {
  const payload = toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId: "r-1" }));
  const body = Buffer.concat([encodeEnvelope(0, payload), options.trailing ?? new Uint8Array()]);
  const chunks: Buffer[] = [];
  let count = 0;
  let received = 0;
  let waiting: { count: number; resolve: () => void } | null = null;
  /** Bytes still to be counted: the start of an envelope not yet whole. */
  let pending: Buffer = Buffer.alloc(0);
  const countEnvelopes = (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    let offset = 0;
    while (offset + 5 <= pending.length) {
      const length = pending.readUInt32BE(offset + 1);
      if (offset + 5 + length > pending.length) break;
      offset += 5 + length;
      count += 1;
    }
    pending = pending.subarray(offset);
    if (waiting !== null && count >= waiting.count) {
      waiting.resolve();
      waiting = null;
    }
  };
  let resolveHead!: Call["head"] extends Promise<infer T> ? (value: T) => void : never;
  const head = new Promise<{ status: number; headers: IncomingHttpHeaders }>((resolve) => {
    resolveHead = resolve;
  });
  let resolveBody!: (body: Buffer) => void;
  let rejectBody!: (error: Error) => void;
  const whole = new Promise<Buffer>((resolve, reject) => {
    resolveBody = resolve;
    rejectBody = reject;
  });
  const request = httpRequest(`${url}${PATH}`, {
    method: "POST",
    agent: false,
    headers: {
      "content-type": "application/connect+proto",
      "connect-protocol-version": "1",
      "content-length": String(body.length),
      "x-request-id": "r-1",
      ...options.headers,
    },
  });
  request.on("response", (response) => {
    resolveHead({ status: response.statusCode ?? 0, headers: response.headers });
    response.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      received += chunk.length;
      countEnvelopes(chunk);
    });
    response.on("end", () => resolveBody(Buffer.concat(chunks, received)));
    response.on("error", rejectBody);
  });
  request.on("error", rejectBody);
  request.end(body);
  return {
    head,
    envelopes: (wanted) =>
      count >= wanted
        ? Promise.resolve()
        : new Promise((resolve) => {
            waiting = { count: wanted, resolve };
          }),
    body: whole,
    received: () => count,
    request,
  };
}

/** The body's HTTP/1.1 chunks (RFC 9112 §7.1), each checked to be framed whole. */
function chunksOf(body: Buffer): Buffer[] {
  const chunks: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const line = body.indexOf("\r\n", offset);
    assert.ok(line > offset, "a chunk size line");
    const size = Number.parseInt(body.subarray(offset, line).toString("latin1"), 16);
    const start = line + 2;
    chunks.push(body.subarray(start, start + size));
    assert.equal(body.subarray(start + size, start + size + 2).toString("latin1"), "\r\n");
    offset = start + size + 2;
    if (size === 0) break;
  }
  assert.equal(offset, body.length, "nothing after the last chunk");
  return chunks;
}

/**
 * A RunSSE call over a bare TCP connection in HTTP `version` (the server closes the connection
 * after the response): the response's head, and its body's bytes as sent.
 */
function rawCall(url: string, version: "1.1" | "1.0"): Promise<{ head: string; body: Buffer }> {
  const payload = toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId: "r-1" }));
  const envelope = encodeEnvelope(0, payload);
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("end", () => {
      const all = Buffer.concat(chunks);
      const split = all.indexOf("\r\n\r\n");
      resolve({
        head: all.subarray(0, split + 4).toString("latin1"),
        body: all.subarray(split + 4),
      });
    });
    const head = [
      `POST ${PATH} HTTP/${version}`,
      `host: ${hostname}:${port}`,
      "content-type: application/connect+proto",
      "connect-protocol-version: 1",
      `content-length: ${envelope.length}`,
      "connection: close",
    ];
    socket.write(`${head.join("\r\n")}\r\n\r\n`);
    socket.write(envelope);
  });
}

/** The body's envelopes: flags, and the message or the end-of-stream JSON. */
function envelopesOf(body: Buffer, gzipped = false): { flags: number; value: unknown }[] {
  const out: { flags: number; value: unknown }[] = [];
  let offset = 0;
  while (offset < body.length) {
    const flags = body.readUInt8(offset);
    const length = body.readUInt32BE(offset + 1);
    let data = body.subarray(offset + 5, offset + 5 + length);
    if ((flags & 1) !== 0) {
      assert.ok(gzipped, "compressed only when the client accepts gzip");
      data = gunzipSync(data);
    }
    out.push({
      flags,
      value:
        (flags & 2) !== 0
          ? JSON.parse(data.toString("utf8"))
          : fromBinary(AgentServerMessageSchema, data).message,
    });
    offset += 5 + length;
  }
  return out;
}

/** The head without what differs between any two responses (the date). */
function headOf(head: { status: number; headers: IncomingHttpHeaders }) {
  const { date: _date, ...headers } = head.headers;
  return { status: head.status, headers };
}

type Script = (outbound: OutboundStream<AgentServerMessage>, call: Call) => Promise<void>;

/** Runs `script` through one responder; the response's head and bytes. */
async function record(
  responder: Responder,
  script: Script,
  settings: Parameters<typeof serve>[1] & { readonly headers?: Record<string, string> } = {},
) {
  const served = await serve(responder, settings);
  try {
    const running = call(served.url, { headers: settings.headers ?? {} });
    await script(served.outbound, running);
    const body = await running.body;
    return { head: headOf(await running.head), body };
  } finally {
    await served.close();
  }
}

/** The same script through Connect's handler and the direct responder: identical on the wire. */
async function assertSameBytes(
  script: Script,
  settings: Parameters<typeof record>[2] = {},
): Promise<Buffer> {
  const connect = await record("connect", script, settings);
  const direct = await record("direct", script, settings);
  assert.deepEqual(direct.head, connect.head);
  assert.equal(direct.body.toString("hex"), connect.body.toString("hex"));
  return direct.body;
}

/** Messages (a coalesced pair among them), a heartbeat, a large message, then `end`. */
const turn =
  (end: (outbound: OutboundStream<AgentServerMessage>) => void): Script =>
  async (outbound, running) => {
    // Waiting before the client reads: joined into one message.
    outbound.push(text("Hel"));
    outbound.push(text("lo"));
    await running.envelopes(1);
    outbound.push(toHeartbeatMessage());
    await running.envelopes(2);
    // Pushed together while the subscriber waits: "cd" joined, then the thinking delta.
    outbound.push(text("c"));
    outbound.push(text("d"));
    outbound.push(thinking("hmm"));
    await running.envelopes(4);
    outbound.push(thinking("x".repeat(3 * COMPRESS_MIN_BYTES)));
    await running.envelopes(5);
    end(outbound);
  };

const ERROR_WITH_METADATA = new ConnectError(
  "the model provider failed",
  Code.Unavailable,
  { "x-cursor-byok-retry": "later" },
  [{ desc: BidiRequestIdSchema, value: { requestId: "r-1" } }],
);

test("toFramedEnvelope: Connect's envelope, as one HTTP/1.1 chunk when chunked", () => {
  // Payload sizes whose envelopes' sizes take one to five hex digits.
  for (const length of [0, 10, 11, 250, 4_091, 70_000]) {
    const data = Uint8Array.from({ length }, (_, i) => i % 251);
    for (const flags of [0, 1]) {
      const envelope = Buffer.from(encodeEnvelope(flags, data));
      assert.deepEqual(toFramedEnvelope(flags, data, false), envelope);
      const size = Buffer.from(`${envelope.length.toString(16)}\r\n`, "latin1");
      assert.deepEqual(
        toFramedEnvelope(flags, data, true),
        Buffer.concat([size, envelope, Buffer.from("\r\n", "latin1")]),
      );
    }
  }
});

describe("the direct RunSSE responder writes what Connect's handler writes", () => {
  test("a turn ending cleanly: `{}`; the response typed text/event-stream", async () => {
    const body = await assertSameBytes(turn((outbound) => outbound.end()));
    const envelopes = envelopesOf(body);
    assert.deepEqual(
      envelopes.map((e) => e.flags),
      [0, 0, 0, 0, 0, 2],
    );
    assert.deepEqual(envelopes.at(-1)?.value, {});
    const first = envelopes[0]?.value as AgentServerMessage["message"];
    assert.equal(
      first.case === "interactionUpdate" && first.value.message.case === "textDelta"
        ? first.value.message.value.text
        : null,
      "Hello",
    );
  });

  test("a turn ending in a ConnectError: its code, message, details and metadata", async () => {
    const body = await assertSameBytes(
      turn((outbound) => outbound.end(ERROR_WITH_METADATA)),
      { contentType: "connect" },
    );
    const end = envelopesOf(body).at(-1);
    assert.equal(end?.flags, 2);
    const json = end?.value as { error: { code: string; details: unknown[] }; metadata: unknown };
    assert.equal(json.error.code, "unavailable");
    assert.equal(json.error.details.length, 1);
    assert.deepEqual(json.metadata, { "x-cursor-byok-retry": ["later"] });
  });

  test("with gzip accepted: large messages compressed, the same bytes", async () => {
    const body = await assertSameBytes(
      turn((outbound) => outbound.end(toConnectError({ kind: "canceled", detail: "x" }))),
      { headers: { "connect-accept-encoding": "gzip" } },
    );
    const envelopes = envelopesOf(body, true);
    assert.deepEqual(
      envelopes.map((e) => e.flags),
      [0, 0, 0, 0, 1, 2],
    );
  });

  test("an error that is not a ConnectError ends as `internal`", async () => {
    const body = await assertSameBytes(turn((outbound) => outbound.end(new Error("a bug"))));
    assert.deepEqual(envelopesOf(body).at(-1)?.value, {
      error: { code: "internal", message: "internal error" },
    });
  });

  test("a refused open (the stream cap): status 200, the error as the only message", async () => {
    const refused = new ConnectError("too many agent streams", Code.ResourceExhausted);
    const body = await assertSameBytes(async () => {}, {
      open: () => Promise.reject(refused),
    });
    assert.deepEqual(envelopesOf(body), [
      {
        flags: 2,
        value: { error: { code: "resource_exhausted", message: "too many agent streams" } },
      },
    ]);
  });

  test("connect-timeout-ms ends the stream after that long, as Connect's deadline does", async () => {
    const body = await assertSameBytes(
      async (outbound, running) => {
        outbound.push(text("before the deadline"));
        await running.envelopes(1);
      },
      { headers: { "connect-timeout-ms": "50" } },
    );
    assert.deepEqual(
      envelopesOf(body).map((e) => e.value),
      [envelopesOf(body)[0]?.value, {}],
      "a clean end, as Connect ends a handler whose deadline passed",
    );
  });
});

describe("the direct RunSSE responder", () => {
  test("sends the head as soon as the stream is open, before any message", async () => {
    const served = await serve("direct");
    try {
      const running = call(served.url);
      const head = await running.head;
      assert.equal(head.status, 200);
      assert.equal(head.headers["content-type"], "text/event-stream");
      assert.equal(served.outbound.length, 0, "nothing was sent yet");
      served.outbound.push(text("hi"));
      served.outbound.end();
      assert.deepEqual(
        envelopesOf(await running.body).map((e) => e.flags),
        [0, 2],
      );
    } finally {
      await served.close();
    }
  });

  test("a message leaves for the socket at once, not when the current chain of promise steps ends", async () => {
    const served = await serve("direct");
    try {
      const running = call(served.url);
      await running.head;
      const socket = served.responses[0]?.socket;
      assert.ok(socket !== null && socket !== undefined);
      served.outbound.push(text("now"));
      // The rest of a model's burst, as the runner applies it: promise steps, one after another.
      let seen: { corked: number; buffered: number } | null = null;
      for (let step = 0; step < 100 && seen === null; step += 1) {
        await null;
        if (served.outbound.delivered === 1) {
          seen = { corked: socket.writableCorked, buffered: socket.writableLength };
        }
      }
      assert.deepEqual(seen, { corked: 0, buffered: 0 }, "written, and not held corked");
      served.outbound.end();
      assert.equal(envelopesOf(await running.body).length, 2);
    } finally {
      await served.close();
    }
  });

  test("the rest of a burst pushed in one chain of promise steps goes out joined, after the first", async () => {
    const served = await serve("direct");
    try {
      const running = call(served.url);
      await running.head;
      served.outbound.push(text("a"));
      // The rest of a model's burst, as the runner applies it: promise steps, one after another.
      for (let i = 0; i < 50; i += 1) {
        await null;
        served.outbound.push(text(`${i},`));
      }
      served.outbound.end();
      const texts = envelopesOf(await running.body)
        .filter((envelope) => envelope.flags === 0)
        .map((envelope) => {
          const message = envelope.value as AgentServerMessage["message"];
          return message.case === "interactionUpdate" && message.value.message.case === "textDelta"
            ? message.value.message.value.text
            : "?";
        });
      const all = Array.from({ length: 50 }, (_, i) => `${i},`).join("");
      assert.deepEqual(texts, ["a", all], "the first at once, then the other 50 as one message");
    } finally {
      await served.close();
    }
  });

  test("an idle stream gets heartbeats", async () => {
    const served = await serve("direct", { heartbeatMs: 5 });
    try {
      const running = call(served.url);
      await running.envelopes(2);
      served.outbound.end();
      const envelopes = envelopesOf(await running.body);
      const first = envelopes[0]?.value as AgentServerMessage["message"];
      assert.equal(
        first.case === "interactionUpdate" ? first.value.message.case : null,
        "heartbeat",
      );
      assert.equal(served.outbound.length, 0, "heartbeats are not backlogged");
    } finally {
      await served.close();
    }
  });

  test("a client that goes away ends the subscriber; the next one resumes", async () => {
    const served = await serve("direct");
    try {
      served.outbound.push(text("one"));
      const first = call(served.url);
      await first.envelopes(1);
      first.request.destroy();
      first.body.catch(() => {});
      // The responder's own 'close' listener (the reader closes) runs before this one.
      await new Promise((resolve) => served.responses[0]?.once("close", resolve));
      assert.equal(served.detached(), 1);
      assert.equal(served.outbound.subscribed, false);
      served.outbound.push(thinking("two"));
      served.outbound.end();
      const second = call(served.url);
      assert.deepEqual(
        envelopesOf(await second.body).map((e) => e.flags),
        [0, 2],
        "only the message the first connection did not get, then the end",
      );
    } finally {
      await served.close();
    }
  });

  test("waits for 'drain' when the socket pushes back; a message not yet written stays undelivered", async () => {
    const served = await serve("direct");
    try {
      // Text and thinking alternate, so no two are joined: one envelope each, 256 KiB apiece.
      const big = (i: number) =>
        i % 2 === 0 ? text(`${i}:`.padEnd(256 * 1024, "t")) : thinking(`${i}:`.padEnd(256 * 1024));
      const count = 200;
      for (let i = 0; i < count; i += 1) served.outbound.push(big(i));
      const running = call(served.url);
      await running.head;
      const response = served.responses[0];
      const socket = response?.socket;
      assert.ok(response !== undefined && socket !== null && socket !== undefined);
      // The client reads nothing more: the server writes until the socket pushes back.
      running.request.socket?.pause();
      if (!socket.writableNeedDrain) {
        await new Promise<void>((resolve) => {
          const write = socket.write.bind(socket);
          socket.write = ((chunk: Uint8Array) => {
            const flowing = write(chunk);
            if (!flowing) resolve();
            return flowing;
          }) as typeof socket.write;
        });
      }
      const delivered = served.outbound.delivered;
      assert.ok(delivered < count - 1, `stopped at ${delivered} of ${count}`);
      assert.ok(socket.writableLength < 4 * 256 * 1024, `${socket.writableLength} bytes buffered`);
      running.request.destroy();
      running.body.catch(() => {});
      await new Promise((resolve) => response.once("close", resolve));
      assert.equal(served.outbound.delivered, delivered, "the message written last is not counted");
      served.outbound.end();
      const second = call(served.url);
      const envelopes = envelopesOf(await second.body);
      const firstAgain = envelopes[0]?.value as AgentServerMessage["message"];
      const textOf = (message: AgentServerMessage["message"]) =>
        message.case === "interactionUpdate" &&
        (message.value.message.case === "textDelta" ||
          message.value.message.case === "thinkingDelta")
          ? message.value.message.value.text.split(":")[0]
          : null;
      assert.equal(textOf(firstAgain), String(delivered));
      assert.equal(envelopes.length, count - delivered + 1);
    } finally {
      await served.close();
    }
  });

  test("each message is one HTTP/1.1 chunk; an HTTP/1.0 client gets the envelopes unframed", async () => {
    for (const version of ["1.1", "1.0"] as const) {
      const served = await serve("direct");
      try {
        served.outbound.push(text("one"));
        const reading = rawCall(served.url, version);
        served.outbound.push(thinking("two"));
        served.outbound.push(toHeartbeatMessage());
        served.outbound.end();
        const { head, body } = await reading;
        assert.match(head, /^HTTP\/1\.1 200 OK\r\n/);
        if (version === "1.1") {
          assert.match(head, /\r\ntransfer-encoding: chunked\r\n/i);
          const chunks = chunksOf(body);
          assert.equal(chunks.at(-1)?.length, 0, "the last chunk");
          const envelopes = chunks.slice(0, -1).map((chunk) => {
            const within = envelopesOf(chunk);
            assert.equal(within.length, 1, "one envelope per chunk");
            return within[0]?.flags;
          });
          assert.deepEqual(envelopes, [0, 0, 0, 2]);
        } else {
          assert.doesNotMatch(head, /transfer-encoding/i);
          assert.deepEqual(
            envelopesOf(body).map((envelope) => envelope.flags),
            [0, 0, 0, 2],
          );
        }
      } finally {
        await served.close();
      }
    }
  });

  test("on a Node that does not say how it frames the response, Node's own write frames each message", async () => {
    let writes = 0;
    const served = await serve("direct", {
      // Node's property, read as Node reads it, but not a boolean: our check sees no answer.
      onResponse: (response) => {
        let chunked: unknown;
        Object.defineProperty(response, "chunkedEncoding", {
          get: () => (chunked === true ? "yes" : chunked),
          set: (value: unknown) => {
            chunked = value;
          },
        });
        const write = response.write.bind(response);
        response.write = ((...args: Parameters<typeof write>) => {
          writes += 1;
          return write(...args);
        }) as typeof response.write;
      },
    });
    try {
      served.outbound.push(text("one"));
      const reading = rawCall(served.url, "1.1");
      served.outbound.push(thinking("two"));
      served.outbound.end();
      const chunks = chunksOf((await reading).body);
      assert.deepEqual(
        chunks.slice(0, -1).map((chunk) => envelopesOf(chunk).map((envelope) => envelope.flags)),
        [[0], [0], [2]],
      );
      assert.equal(writes, 2, "both messages through response.write");
    } finally {
      await served.close();
    }
  });

  test("a body that goes on after its envelope is left to Connect (the same answer)", async () => {
    const extra = encodeEnvelope(0, new Uint8Array([10, 1, 65]));
    const answers: Buffer[] = [];
    for (const responder of ["connect", "direct"] as const) {
      const served = await serve(responder);
      try {
        const running = call(served.url, { trailing: extra });
        answers.push(await running.body);
      } finally {
        await served.close();
      }
    }
    assert.equal(answers[1]?.toString("hex"), answers[0]?.toString("hex"));
    const end = envelopesOf(answers[0] as Buffer).at(-1)?.value as { error: { code: string } };
    assert.equal(end.error.code, "unimplemented");
  });
});

describe("a graceful shutdown (server.ts `close`, stream-responses.ts)", () => {
  for (const responder of ["direct", "connect"] as const) {
    test(`${responder}: a held stream gets no end of stream; its connection is left to be dropped`, async () => {
      const served = await serve(responder);
      try {
        const running = call(served.url);
        served.outbound.push(text("before the shutdown"));
        await running.envelopes(1);
        served.outbound.hold();
        served.outbound.push(text("after it"));
        served.outbound.end(new ConnectError("the server is shutting down", Code.Canceled));
        // The writer marks its response held: the shutdown does not wait for it.
        await served.tracked.settled(10_000);
        assert.equal(served.tracked.size, 0);
        const outcome = running.body.then(
          (body) => envelopesOf(body),
          () => "dropped",
        );
        await served.close(); // every connection dropped, as server.ts does then
        assert.equal(await outcome, "dropped");
        assert.equal(running.received(), 1, "nothing after the hold, no end of stream");
      } finally {
        await served.close();
      }
    });

    test(`${responder}: a stream that ended before the hold gets its end, and the shutdown waits for it`, async () => {
      const served = await serve(responder);
      try {
        const running = call(served.url);
        served.outbound.push(text("the last words"));
        await running.envelopes(1);
        served.outbound.end();
        served.outbound.hold();
        assert.equal(served.outbound.held, false);
        assert.equal(served.tracked.size, 1);
        await served.tracked.settled(10_000);
        assert.equal(served.tracked.size, 0);
        assert.deepEqual(
          envelopesOf(await running.body).map((envelope) => envelope.value),
          [{ case: "interactionUpdate", value: text("the last words").message.value }, {}],
        );
      } finally {
        await served.close();
      }
    });
  }
});
