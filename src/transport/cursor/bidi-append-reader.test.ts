import assert from "node:assert/strict";
import { test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import fc from "fast-check";
import { fromBidiAppendRequest } from "./bidi-append.ts";
import { createBidiAppendReader } from "./bidi-append-reader.ts";
import { AgentClientMessageSchema } from "./gen/agent/v1/agent_stream_pb.js";
import { ConversationStateStructureSchema } from "./gen/agent/v1/conversation_state_pb.js";
import {
  type BidiAppendRequest,
  BidiAppendRequestSchema,
  BidiRequestIdSchema,
} from "./gen/aiserver/v1/bidi_pb.js";
import { ideRunRequest, REQUEST_ID } from "./testing.ts";

/**
 * What the server made of a body before the reader: parsed whole as Connect's binary
 * serialization does (bidi-append-response.ts `parseRequest`), then decoded.
 */
function whole(body: Uint8Array) {
  let request: BidiAppendRequest;
  try {
    request = fromBinary(BidiAppendRequestSchema, body);
  } catch (error) {
    return { thrown: error instanceof Error ? error.message : String(error) };
  }
  return { decoded: fromBidiAppendRequest(request) };
}

/** The body read in chunks cut at `cuts`, then decoded as bidi-append-response.ts does. */
function read(body: Uint8Array, cuts: readonly number[] = []) {
  const reader = createBidiAppendReader();
  let from = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    const to = Math.min(Math.max(cut, from), body.length);
    reader.push(body.subarray(from, to));
    from = to;
  }
  reader.push(body.subarray(from));
  const result = reader.end();
  if (result.type === "body") {
    assert.deepEqual(Buffer.from(result.body), Buffer.from(body), "the whole body, as it came");
    return { type: result.type, ...whole(result.body) };
  }
  return {
    type: result.type,
    decoded: fromBidiAppendRequest(result.request, undefined, result.message),
  };
}

/** Both ways give the same; the chunks are Buffers, as a socket's are. */
function same(bytes: Uint8Array, cuts: readonly number[] = []): string {
  const body = Buffer.from(bytes);
  const { type, ...got } = read(body, cuts);
  assert.deepEqual(got, whole(body));
  return type;
}

function body(fields: {
  data?: string | string[];
  requestId?: string;
  seqno?: bigint;
  dataBinary?: Uint8Array;
  unknown?: boolean;
  dataLast?: boolean;
}): Uint8Array {
  const writer = new BinaryWriter();
  const data = fields.data === undefined ? [] : [fields.data].flat();
  const writeData = () => {
    for (const text of data) writer.tag(1, WireType.LengthDelimited).string(text);
  };
  if (fields.dataLast !== true) writeData();
  if (fields.requestId !== undefined) {
    writer
      .tag(2, WireType.LengthDelimited)
      .bytes(
        toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId: fields.requestId })),
      );
  }
  if (fields.seqno !== undefined) writer.tag(3, WireType.Varint).int64(fields.seqno);
  if (fields.dataBinary !== undefined) {
    writer.tag(4, WireType.LengthDelimited).bytes(fields.dataBinary);
  }
  if (fields.unknown === true) writer.tag(99, WireType.Varint).uint32(7);
  if (fields.dataLast === true) writeData();
  return writer.finish();
}

const runMessage = toBinary(
  AgentClientMessageSchema,
  create(AgentClientMessageSchema, { message: { case: "runRequest", value: ideRunRequest() } }),
);
const runHex = Buffer.from(runMessage).toString("hex");

test("a run request's hex is decoded as it arrives, to what decoding the whole body gives", () => {
  const typical = body({ data: runHex, requestId: REQUEST_ID, seqno: 0n });
  // One chunk, every cut in the tag/length, in the digits (odd and even), in the tail.
  assert.equal(same(typical), "decoded");
  for (const cut of [1, 2, 3, 4, 5, 6, 7, 100, 101, typical.length - 3, typical.length - 1]) {
    assert.equal(same(typical, [cut]), "decoded", `cut at ${cut}`);
  }
  assert.equal(same(typical, [1, 2, 3, 4, 5, 6, 7, 8, 9]), "decoded");
  // Upper case hex, as Buffer.from(…, "hex") reads it.
  assert.equal(same(body({ data: runHex.toUpperCase(), requestId: REQUEST_ID })), "decoded");
  const decoded = read(typical, [77]).decoded;
  assert.ok(decoded?.ok);
  assert.equal(decoded.value.message.message.case, "runRequest");
});

test("anything but the common shape is decoded whole, with the same result and errors", () => {
  const cases: [string, Uint8Array][] = [
    ["data not first", body({ data: runHex, requestId: REQUEST_ID, dataLast: true })],
    ["data twice", body({ data: [runHex, "00"], requestId: REQUEST_ID })],
    ["odd hex", body({ data: `${runHex}0`, requestId: REQUEST_ID })],
    ["not hex", body({ data: `${runHex.slice(0, -2)}zz`, requestId: REQUEST_ID })],
    ["beyond ASCII", body({ data: `${runHex.slice(0, -2)}İ`, requestId: REQUEST_ID })],
    ["no data", body({ requestId: REQUEST_ID })],
    ["empty data", body({ data: "", requestId: REQUEST_ID })],
    ["binary beside hex", body({ data: "0a00", dataBinary: runMessage, requestId: REQUEST_ID })],
    ["no request id", body({ data: runHex })],
    ["a negative seqno", body({ data: runHex, requestId: REQUEST_ID, seqno: -1n })],
    ["not a client message", body({ data: "ffff", requestId: REQUEST_ID })],
    ["an unknown field after", body({ data: runHex, requestId: REQUEST_ID, unknown: true })],
    ["truncated", body({ data: runHex, requestId: REQUEST_ID }).subarray(0, 200)],
    ["truncated tail", body({ data: runHex, requestId: REQUEST_ID }).slice(0, -2)],
    ["empty body", new Uint8Array(0)],
  ];
  // A bad digit split from its pair by a chunk boundary, as the high digit and as the low one.
  for (const at of [100, 101]) {
    const data = `${runHex.slice(0, at)}z${runHex.slice(at + 1)}`;
    const bytes = body({ data, requestId: REQUEST_ID });
    const start = Buffer.from(bytes).indexOf(runHex.slice(0, 100));
    assert.equal(same(bytes, [start + 101]), "body", `bad digit at ${at}`);
  }
  const types: Record<string, string> = {};
  for (const [name, bytes] of cases) {
    for (const cuts of [[], [1], [3, 50]]) types[name] = same(bytes, cuts);
  }
  // The ones that are the common shape (bad only after decoding) took the fast way.
  for (const name of ["no request id", "a negative seqno", "not a client message"]) {
    assert.equal(types[name], "decoded", name);
  }
  assert.equal(types["an unknown field after"], "decoded");
  for (const name of ["data not first", "data twice", "odd hex", "not hex", "beyond ASCII"]) {
    assert.equal(types[name], "body", name);
  }
});

test("any body, cut anywhere, decodes as the whole body does", () => {
  const hexish = fc.stringMatching(/^[0-9a-fA-Fg ]{0,40}$/);
  const fields = fc.record(
    {
      data: fc.oneof(
        hexish,
        fc.constant(runHex),
        fc.array(fc.oneof(hexish, fc.constant(runHex)), { maxLength: 2 }),
        fc.string({ unit: "binary", maxLength: 8 }),
      ),
      requestId: fc.oneof(fc.constant(REQUEST_ID), fc.string({ maxLength: 4 })),
      seqno: fc.bigInt({ min: -2n, max: 2n ** 63n - 1n }),
      dataBinary: fc.uint8Array({ maxLength: 8 }),
      unknown: fc.boolean(),
      dataLast: fc.boolean(),
    },
    { requiredKeys: [] },
  );
  const cuts = fc.array(fc.nat({ max: 400 }), { maxLength: 4 });
  fc.assert(
    fc.property(fields, cuts, (f, at) => {
      same(body(f), at);
    }),
    { numRuns: 600 },
  );
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), cuts, (bytes, at) => {
      same(bytes, at);
    }),
    { numRuns: 600 },
  );
  // Bodies that start like a data field, then anything.
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), cuts, (bytes, at) => {
      same(Buffer.concat([Buffer.from([0x0a]), bytes]), at);
    }),
    { numRuns: 600 },
  );
});

test("a large message decodes the same in chunks of any size (its buffer grows as they come)", () => {
  const large = toBinary(
    AgentClientMessageSchema,
    create(AgentClientMessageSchema, {
      message: {
        case: "runRequest",
        value: ideRunRequest((request) => {
          request.conversationState = create(ConversationStateStructureSchema, {
            turns: Array.from({ length: 8 }, (_, turn) => new Uint8Array(40_000).fill(turn)),
          });
        }),
      },
    }),
  );
  const bytes = body({ data: Buffer.from(large).toString("hex"), requestId: REQUEST_ID });
  for (const step of [1_000, 4_097, 65_536, 200_001]) {
    const cuts = Array.from({ length: Math.ceil(bytes.length / step) }, (_, i) => i * step);
    assert.equal(same(bytes, cuts), "decoded", `chunks of ${step}`);
  }
  const decoded = read(bytes, [70_000, 300_000]).decoded;
  assert.ok(decoded?.ok);
  assert.deepEqual(
    toBinary(AgentClientMessageSchema, decoded.value.message),
    toBinary(AgentClientMessageSchema, fromBinary(AgentClientMessageSchema, large)),
  );
});

test("a body that announces a large message allocates for what arrived, not what it claims", () => {
  const announced = new BinaryWriter().tag(1, WireType.LengthDelimited).uint32(30_000_000).finish();
  const reader = createBidiAppendReader();
  const before = process.memoryUsage().arrayBuffers;
  reader.push(Buffer.concat([announced, Buffer.from("0a0b0c0d")]));
  const grown = process.memoryUsage().arrayBuffers - before;
  assert.ok(grown < 1024 * 1024, `${grown} bytes for four digits`);
  // And it is decoded whole (it ends early: Connect's error, as before).
  assert.equal(reader.end().type, "body");
});
