/**
 * The wire surface end to end: the same conversation over HTTP/2 `Run`, both append forms and
 * gzip, both RunSSE content types, the start-up RPCs, and malformed requests (answered with a
 * Connect error while the server keeps serving).
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { afterEach, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { BidiAppendRequestSchema } from "../cursor/gen/aiserver/v1/bidi_pb.js";
import { Http2Config } from "../cursor/gen/aiserver/v1/server_config_pb.js";
import { AgentClientMessageSchema } from "../cursor/index.ts";
import { type Harness, MODEL, startHarness } from "./test-harness.ts";

const CONVERSATION = "7a6b5c4d-3333-4a5b-8c6d-7e8f9a0b1c2d";

/** A raw HTTP/1.1 POST, for requests no well-behaved client would send. */
function post(
  url: string,
  path: string,
  headers: Record<string, string>,
  body: Uint8Array,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const target = new URL(path, url);
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: "POST",
        headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString("utf8"),
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("the wire surface end to end", () => {
  let harness: Harness;
  afterEach(async () => harness.close());

  test("the same conversation over HTTP/2 Run", async () => {
    harness = await startHarness();
    writeFileSync(join(harness.workspace, "a.txt"), "alpha\n");
    harness.reply(
      {
        text: "Reading.",
        toolCalls: [{ id: "call_1", name: "read_file", arguments: { path: "a.txt" } }],
      },
      { text: "It says alpha." },
      { text: "Still alpha." },
    );
    const client = harness.client({ httpVersion: "2" });
    const first = await client.startTurn({
      conversationId: CONVERSATION,
      text: "read a.txt",
      modelId: MODEL,
    }).done;
    assert.equal(first.error, undefined);
    assert.equal(first.view.text, "Reading.It says alpha.");
    assert.deepEqual(
      first.view.toolCallsCompleted.map((c) => c.variant),
      ["readToolCall"],
    );
    const second = await client.startTurn({
      conversationId: CONVERSATION,
      text: "again?",
      modelId: MODEL,
    }).done;
    assert.equal(second.view.text, "Still alpha.");
    const loaded = await harness.store.load(CONVERSATION);
    assert.equal(loaded?.state.messages.length, 6);
  });

  test("appends as data_binary and gzip bodies work like hex", async () => {
    harness = await startHarness();
    harness.reply({ text: "binary ok" });
    const result = await harness
      .client({ appendForm: "binary", gzip: true })
      .startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL, flavour: "cli" }).done;
    assert.equal(result.error, undefined);
    assert.equal(result.view.text, "binary ok");
  });

  test("RunSSE is sent as text/event-stream by default and as Connect's type when configured", async () => {
    harness = await startHarness();
    harness.reply({ text: "one" });
    const turn = harness
      .client()
      .startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL });
    await turn.done;
    assert.deepEqual(turn.runSseContentTypes, ["text/event-stream"]);
    await harness.close();

    harness = await startHarness({ server: { runSseContentType: "connect" } });
    harness.reply({ text: "two" });
    const plain = harness
      .client()
      .startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL });
    assert.equal((await plain.done).view.text, "two");
    assert.deepEqual(plain.runSseContentTypes, ["application/connect+proto"]);
  });

  test("start-up RPCs describe the configured models and keep clients on HTTP/1.1", async () => {
    harness = await startHarness();
    const { ai } = harness.client();
    const config = await ai.getServerConfig({});
    assert.equal(config.http2Config, Http2Config.FORCE_ALL_DISABLED);
    const available = await ai.availableModels({});
    assert.deepEqual(
      available.models.map((m) => m.name),
      [MODEL],
    );
    assert.equal(available.composerModelConfig?.defaultModel, MODEL);
    const usable = await ai.getUsableModels({});
    assert.deepEqual(
      usable.models.map((m) => m.modelId),
      [MODEL],
    );
    assert.equal((await ai.getDefaultModelForCli({})).model?.modelId, MODEL);
    const time = await ai.serverTime({});
    assert.ok(time.receiveTimestamp > 0);
    const probe = await post(
      harness.server.url,
      "/aiserver.v1.NetworkService/IsConnected",
      { "content-type": "application/proto" },
      new Uint8Array(),
    );
    assert.equal(probe.status, 200);
    const unknown = await post(
      harness.server.url,
      "/aiserver.v1.SomeService/Nope",
      { "content-type": "application/proto" },
      new Uint8Array(),
    );
    assert.equal(unknown.status, 404);
    assert.equal(JSON.parse(unknown.body).code, "unimplemented");
    assert.ok(
      harness.logs.some((line) => line.fields.procedure === "/aiserver.v1.SomeService/Nope"),
    );
  });

  test("malformed requests get a Connect error and the server keeps serving", async () => {
    harness = await startHarness({ server: { maxMessageBytes: 64 * 1024 } });
    const url = harness.server.url;
    const bidi = "/aiserver.v1.BidiService/BidiAppend";
    const heartbeatHex = Buffer.from(
      toBinary(
        AgentClientMessageSchema,
        create(AgentClientMessageSchema, { message: { case: "clientHeartbeat", value: {} } }),
      ),
    ).toString("hex");
    const append = (requestId: string, data: string) =>
      toBinary(
        BidiAppendRequestSchema,
        create(BidiAppendRequestSchema, { requestId: { requestId }, data }),
      );

    const badType = await post(
      url,
      bidi,
      { "content-type": "text/plain" },
      append("r1", heartbeatHex),
    );
    assert.equal(badType.status, 415);
    assert.ok(
      harness.logs.some(
        (line) =>
          line.level === "warn" &&
          line.fields.status === 415 &&
          line.fields.path === bidi &&
          line.fields.contentType === "text/plain",
      ),
      "a 415 is logged with the path and content type",
    );

    const garbage = await post(
      url,
      bidi,
      { "content-type": "application/proto" },
      new Uint8Array([0xff, 0xff, 0xff]),
    );
    // Bytes that are not the request message are the client's fault, not ours ("internal").
    assert.equal(garbage.status, 400);
    assert.equal(JSON.parse(garbage.body).code, "invalid_argument");
    assert.ok(
      harness.logs.some(
        (line) =>
          line.level === "warn" &&
          /not a valid message/.test(line.message) &&
          line.fields.path === bidi,
      ),
      "the refused append is logged",
    );

    // Announced sizes beyond the limit are refused before any of it is read.
    const huge = await post(
      url,
      "/aiserver.v1.AiService/ServerTime",
      { "content-type": "application/proto", "content-length": String(2 ** 31) },
      new Uint8Array([1, 2, 3]),
    );
    assert.equal(huge.status, 429);
    assert.equal(JSON.parse(huge.body).code, "resource_exhausted");
    const hugeEnvelope = await post(
      url,
      "/agent.v1.AgentService/RunSSE",
      { "content-type": "application/connect+proto", "transfer-encoding": "chunked" },
      new Uint8Array([0, 0x7f, 0xff, 0xff, 0xff, 1, 2, 3]),
    );
    assert.equal(JSON.parse(hugeEnvelope.body).code, "resource_exhausted");
    // A RunSSE request is a request id: a 10 MiB one is refused before it is read.
    const bigRequestId = await post(
      url,
      "/agent.v1.AgentService/RunSSE",
      { "content-type": "application/connect+proto", "transfer-encoding": "chunked" },
      new Uint8Array([0, 0, 0xa0, 0, 0, 10]),
    );
    assert.equal(JSON.parse(bigRequestId.body).code, "resource_exhausted");
    const garbageRunSse = await post(
      url,
      "/agent.v1.AgentService/RunSSE",
      { "content-type": "application/connect+proto" },
      new Uint8Array([0, 0, 0, 0, 3, 0xff, 0xff, 0xff]),
    );
    assert.equal(garbageRunSse.status, 400);
    assert.equal(JSON.parse(garbageRunSse.body).code, "invalid_argument");

    const badHex = await post(
      url,
      bidi,
      { "content-type": "application/proto" },
      append("r2", "zz"),
    );
    assert.equal(JSON.parse(badHex.body).code, "invalid_argument");
    assert.ok(
      harness.logs.some(
        (line) =>
          line.level === "warn" &&
          line.message === "append rejected" &&
          line.fields.reason === "bad_hex",
      ),
      "a rejected append is logged with its reason",
    );

    const badGzip = await post(
      url,
      bidi,
      { "content-type": "application/proto", "content-encoding": "gzip" },
      new Uint8Array([1, 2, 3]),
    );
    assert.equal(badGzip.status, 400);
    assert.equal(JSON.parse(badGzip.body).code, "invalid_argument");

    const noTurn = await post(
      url,
      bidi,
      { "content-type": "application/proto" },
      append(
        "never-started",
        Buffer.from(
          toBinary(
            AgentClientMessageSchema,
            create(AgentClientMessageSchema, {
              message: {
                case: "conversationAction",
                value: { action: { case: "cancelAction", value: { reason: "x" } } },
              },
            }),
          ),
        ).toString("hex"),
      ),
    );
    assert.equal(JSON.parse(noTurn.body).code, "not_found");

    const oversized = await post(
      url,
      bidi,
      { "content-type": "application/proto" },
      append("r3", "ab".repeat(100 * 1024)),
    );
    assert.equal(JSON.parse(oversized.body).code, "resource_exhausted");

    const bomb = gzipSync(Buffer.alloc(8 * 1024 * 1024));
    const inflated = await post(
      url,
      bidi,
      { "content-type": "application/proto", "content-encoding": "gzip" },
      bomb,
    );
    assert.equal(JSON.parse(inflated.body).code, "resource_exhausted");

    const badEnvelope = await post(
      url,
      "/agent.v1.AgentService/RunSSE",
      { "content-type": "application/connect+proto" },
      new Uint8Array([0, 0, 0, 0, 9, 1]),
    );
    assert.match(badEnvelope.body, /invalid_argument|internal/);

    harness.reply({ text: "still serving" });
    const result = await harness
      .client()
      .startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL }).done;
    assert.equal(result.view.text, "still serving");
  });

  test("an access token, when configured, is required on every request", async () => {
    harness = await startHarness({ server: { accessToken: "s3cret-token" } });
    const missing = await post(
      harness.server.url,
      "/aiserver.v1.AiService/ServerTime",
      { "content-type": "application/proto" },
      new Uint8Array(),
    );
    assert.equal(missing.status, 401);
    assert.equal(JSON.parse(missing.body).code, "unauthenticated");
    const wrong = await harness
      .client({ headers: { authorization: "Bearer nope" } })
      .ai.serverTime({})
      .catch((e: unknown) => e);
    assert.equal((wrong as { code?: unknown }).code, Code.Unauthenticated);
    harness.reply({ text: "authorized" });
    const ok = await harness
      .client({ headers: { authorization: "Bearer s3cret-token" } })
      .startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL }).done;
    assert.equal(ok.view.text, "authorized");
  });
});
