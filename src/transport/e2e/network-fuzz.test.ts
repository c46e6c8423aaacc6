/**
 * The network as an unlucky or hostile client uses it: fast-check generates bodies, envelopes,
 * headers and seqnos for every route of the real server in a process of its own (SQLite). Every
 * request is answered (or its connection closed) within a bound, the server never crashes, and
 * after each batch it still serves a normal turn while the database holds only the turns that
 * were accepted. Bounded runs with a fixed seed.
 */
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { DatabaseSync } from "node:sqlite";
import { after, before, describe, test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { AgentClientMessageSchema } from "../cursor/gen/agent/v1/agent_stream_pb.js";
import { BidiAppendRequestSchema } from "../cursor/gen/aiserver/v1/bidi_pb.js";
import { type Harness, MODEL, startHarness } from "./test-harness.ts";

/** No shrinking: a failing batch is reported as generated, so the run stays bounded in time. */
const RUNS = { numRuns: 12, seed: 20_261_130, endOnFailure: true };
/** Requests per batch. */
const BATCH = 40;
/**
 * The longest any request may go unanswered: the server's own bounds are shorter (here a RunSSE
 * envelope gets 1 s; HTTP/1.1 bodies `requestTimeoutMs`, which a lying content-length can hit).
 */
const ANSWER_WITHIN_MS = 15_000;

const PATHS = [
  "/aiserver.v1.BidiService/BidiAppend",
  "/agent.v1.AgentService/BidiAppend",
  "/agent.v1.AgentService/RunSSE",
  "/agent.v1.AgentService/Run",
  "/aiserver.v1.AiService/GetServerConfig",
  "/aiserver.v1.AiService/ServerTime",
  "/aiserver.v1.AiService/AvailableModels",
  "/aiserver.v1.DashboardService/GetMe",
  "/nope",
] as const;

const CONTENT_TYPES = [
  "application/proto",
  "application/json",
  "application/connect+proto",
  "application/connect+json",
  "text/plain",
  "",
] as const;

/** A Connect envelope header (flags, length) in front of `payload`, the length possibly lying. */
const envelope = fc
  .tuple(
    fc.constantFrom(0, 1, 2, 0x80, 0xff),
    fc.oneof(fc.constant(null), fc.integer({ min: 0, max: 0xffffffff })),
    fc.uint8Array({ maxLength: 64 }),
  )
  .map(([flags, length, payload]) => {
    const head = Buffer.alloc(5);
    head.writeUInt8(flags, 0);
    head.writeUInt32BE(length ?? payload.length, 1);
    return Buffer.concat([head, payload]);
  });

/** A BidiAppend with a known or random request id, any seqno, and a real or random message. */
const append = fc
  .tuple(
    fc.oneof(fc.constant("fuzz-known"), fc.string({ maxLength: 40 }), fc.constant("x".repeat(300))),
    fc.bigInt({ min: -5n, max: 2n ** 63n - 1n }),
    fc.oneof(
      fc.constant(
        toBinary(
          AgentClientMessageSchema,
          create(AgentClientMessageSchema, { message: { case: "clientHeartbeat", value: {} } }),
        ),
      ),
      fc.constant(
        toBinary(
          AgentClientMessageSchema,
          create(AgentClientMessageSchema, {
            message: {
              case: "conversationAction",
              value: { action: { case: "cancelAction", value: { reason: "fuzz" } } },
            },
          }),
        ),
      ),
      fc.uint8Array({ maxLength: 64 }),
    ),
    fc.boolean(),
  )
  .map(([requestId, seqno, data, hex]) => {
    const request = create(BidiAppendRequestSchema, {
      requestId: { requestId },
      appendSeqno: seqno < 0n ? 0n : seqno,
    });
    if (hex) request.data = Buffer.from(data).toString("hex");
    else request.dataBinary = data;
    return Buffer.from(toBinary(BidiAppendRequestSchema, request));
  });

interface FuzzRequest {
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

const fuzzRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(
    fc.constantFrom(...PATHS),
    fc.constantFrom(...CONTENT_TYPES),
    fc.oneof(
      fc.uint8Array({ maxLength: 256 }).map((bytes) => Buffer.from(bytes)),
      envelope,
      append,
      fc.json().map((text) => Buffer.from(text)),
    ),
    fc.record(
      {
        "content-encoding": fc.constantFrom("gzip", "identity", "br", "zz"),
        "connect-protocol-version": fc.constantFrom("1", "2", "x"),
        "content-length": fc.constantFrom("0", "1", String(2 ** 31), "-1"),
        "connect-timeout-ms": fc.constantFrom("1", "999999999999", "x"),
      },
      { requiredKeys: [] },
    ),
  )
  .map(([path, contentType, body, headers]) => ({
    path,
    headers: { ...(contentType === "" ? {} : { "content-type": contentType }), ...headers },
    body,
  }));

/** Sends one request; resolves with its status (0: the connection was closed without one). */
function send(url: string, fuzz: FuzzRequest): Promise<number> {
  return new Promise((resolve, reject) => {
    const target = new URL(fuzz.path, url);
    const timer = setTimeout(
      () => reject(new Error(`unanswered for ${ANSWER_WITHIN_MS} ms: ${describeRequest(fuzz)}`)),
      ANSWER_WITHIN_MS,
    );
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: "POST",
        headers: fuzz.headers,
        agent: false,
      },
      (res) => {
        res.resume();
        // A RunSSE that opened a stream stays open: its status is the answer.
        clearTimeout(timer);
        resolve(res.statusCode ?? 0);
        res.destroy();
      },
    );
    req.on("error", () => {
      clearTimeout(timer);
      resolve(0);
    });
    // A lying content-length is part of the fuzz: Node refuses to send more or fewer bytes.
    try {
      req.end(fuzz.body);
    } catch {
      clearTimeout(timer);
      req.destroy();
      resolve(0);
    }
  });
}

function describeRequest(fuzz: FuzzRequest): string {
  return `${fuzz.path} ${JSON.stringify(fuzz.headers)} ${fuzz.body.subarray(0, 32).toString("hex")}`;
}

describe("network fuzz against a server process", () => {
  let harness: Harness;
  let dbPath: string;
  before(async () => {
    harness = await startHarness({ mode: "process", process: { envelopeTimeoutMs: 1_000 } });
    dbPath = `${harness.workspace}.db`;
  });
  after(async () => harness.close());

  test("every request is answered, the server keeps serving, and only accepted turns are saved", {
    timeout: 120_000,
  }, async () => {
    let turns = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fuzzRequest, { minLength: BATCH, maxLength: BATCH }),
        async (batch) => {
          const statuses = await Promise.all(batch.map((fuzz) => send(harness.server.url, fuzz)));
          assert.ok(
            statuses.every((status) => status !== 500),
            `a 500 in ${statuses.join(",")}`,
          );
          // A normal turn still works.
          turns += 1;
          harness.reply({ text: `answer ${turns}` });
          const result = await harness
            .client()
            .startTurn({ conversationId: `fuzz-${turns}`, text: "hi", modelId: MODEL }).done;
          assert.equal(result.error, undefined);
          assert.equal(result.view.text, `answer ${turns}`);
          // The database holds exactly the normal turns.
          const db = new DatabaseSync(dbPath, { readOnly: true });
          try {
            const rows = db.prepare("select conversation_id from conversations order by 1").all();
            assert.deepEqual(
              rows.map((row) => row.conversation_id),
              Array.from({ length: turns }, (_, i) => `fuzz-${i + 1}`).sort(),
            );
          } finally {
            db.close();
          }
        },
      ),
      RUNS,
    );
  });
});
