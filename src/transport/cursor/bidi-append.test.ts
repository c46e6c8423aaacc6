import assert from "node:assert/strict";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import { create, equals, toBinary, toJsonString } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import fc from "fast-check";
import {
  type BidiAppend,
  DEFAULT_DECODE_LIMITS,
  fromAgentClientMessageBytes,
  fromBidiAppendBody,
  toBidiAppendBody,
} from "./bidi-append.ts";
import { fromClientMessage } from "./client-message.ts";
import { AgentClientMessageSchema } from "./gen/agent/v1/agent_stream_pb.js";
import { AgentRunRequestSchema } from "./gen/agent/v1/run_request_pb.js";
import { BidiAppendRequestSchema } from "./gen/aiserver/v1/bidi_pb.js";
import { ideRunRequest, REQUEST_ID } from "./testing.ts";

const runAppend: BidiAppend = {
  requestID: REQUEST_ID,
  appendSeqno: 0,
  message: create(AgentClientMessageSchema, {
    message: { case: "runRequest", value: ideRunRequest() },
  }),
};

function decode(
  body: Uint8Array,
  options: { format?: "binary" | "json"; contentEncoding?: string } = {},
) {
  return fromBidiAppendBody({ body, ...options });
}

function assertDecodes(
  body: Uint8Array,
  options: Parameters<typeof decode>[1] = {},
  expected = runAppend,
) {
  const decoded = decode(body, options);
  assert.ok(decoded.ok, decoded.ok ? "" : decoded.error.message);
  assert.equal(decoded.value.requestID, expected.requestID);
  assert.equal(decoded.value.appendSeqno, expected.appendSeqno);
  assert.ok(equals(AgentClientMessageSchema, decoded.value.message, expected.message));
}

function assertError(body: Uint8Array, reason: string, options: Parameters<typeof decode>[1] = {}) {
  const decoded = decode(body, options);
  assert.equal(decoded.ok, false);
  if (!decoded.ok) assert.equal(decoded.error.reason, reason);
}

test("hex data form decodes to the same message as the binary form", () => {
  assertDecodes(toBidiAppendBody(runAppend, { form: "hex" }));
  assertDecodes(toBidiAppendBody(runAppend, { form: "binary" }));
});

test("data_binary wins over data when both are set", () => {
  const other = create(AgentClientMessageSchema, {
    message: { case: "clientHeartbeat", value: {} },
  });
  const request = create(BidiAppendRequestSchema, {
    requestId: { requestId: REQUEST_ID },
    data: Buffer.from(toBinary(AgentClientMessageSchema, other)).toString("hex"),
    dataBinary: toBinary(AgentClientMessageSchema, runAppend.message),
  });
  assertDecodes(toBinary(BidiAppendRequestSchema, request));
});

test("uppercase hex is accepted", () => {
  const request = create(BidiAppendRequestSchema, {
    requestId: { requestId: REQUEST_ID },
    data: Buffer.from(toBinary(AgentClientMessageSchema, runAppend.message))
      .toString("hex")
      .toUpperCase(),
  });
  assertDecodes(toBinary(BidiAppendRequestSchema, request));
});

test("gzip bodies inflate (content-encoding is case-insensitive)", () => {
  for (const form of ["hex", "binary"] as const) {
    const body = gzipSync(toBidiAppendBody(runAppend, { form }));
    assertDecodes(body, { contentEncoding: "gzip" });
    assertDecodes(body, { contentEncoding: " GZIP " });
  }
});

test("identity and absent content-encoding read the body as is", () => {
  assertDecodes(toBidiAppendBody(runAppend, { form: "binary" }), { contentEncoding: "identity" });
});

test("Connect JSON bodies decode", () => {
  const request = create(BidiAppendRequestSchema, {
    requestId: { requestId: REQUEST_ID },
    appendSeqno: 7n,
    dataBinary: toBinary(AgentClientMessageSchema, runAppend.message),
  });
  const body = new TextEncoder().encode(toJsonString(BidiAppendRequestSchema, request));
  assertDecodes(body, { format: "json" }, { ...runAppend, appendSeqno: 7 });
});

test("append_seqno is carried as a number; absent means 0", () => {
  const body = toBidiAppendBody({ ...runAppend, appendSeqno: 41 }, { form: "binary" });
  assertDecodes(body, {}, { ...runAppend, appendSeqno: 41 });
});

test("bad hex: odd length, non-hex digits", () => {
  // Beyond Latin-1: Node's hex decoding reads `İ` (U+0130) and `š` (U+0161) by their low bytes,
  // "0" and "a"; the Kelvin sign lower-cases to "k".
  for (const data of ["abc", "zz00", "0g", "00 11", "\u01300", "\u0161a", "a\u0161", "\u212a0"]) {
    const request = create(BidiAppendRequestSchema, { requestId: { requestId: REQUEST_ID }, data });
    assertError(toBinary(BidiAppendRequestSchema, request), "bad_hex");
  }
});

test("data is taken as hex exactly when it is pairs of hex digits (either case)", () => {
  const HEX = /^(?:[0-9a-fA-F]{2})*$/;
  const alphabet = "0123456789abcdefABCDEFgGzZ \u0130\u0161\u212a\u00e0\u0660\uff10";
  fc.assert(
    fc.property(
      fc.array(fc.constantFrom(...alphabet), { minLength: 1, maxLength: 24 }),
      (chars) => {
        const data = chars.join("");
        const request = create(BidiAppendRequestSchema, {
          requestId: { requestId: REQUEST_ID },
          data,
        });
        const decoded = decode(toBinary(BidiAppendRequestSchema, request));
        const badHex = !decoded.ok && decoded.error.reason === "bad_hex";
        assert.equal(badHex, !HEX.test(data), JSON.stringify(data));
      },
    ),
    { numRuns: 2000 },
  );
  // What is accepted is the bytes the digits spell, in any mix of cases: the same outcome as the
  // same bytes in `data_binary`.
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 1, maxLength: 64 }), fc.boolean(), (bytes, upper) => {
      const hex = Buffer.from(bytes).toString("hex");
      const data = upper ? hex.toUpperCase() : hex;
      const asHex = decode(
        toBinary(
          BidiAppendRequestSchema,
          create(BidiAppendRequestSchema, { requestId: { requestId: REQUEST_ID }, data }),
        ),
      );
      const asBinary = decode(
        toBinary(
          BidiAppendRequestSchema,
          create(BidiAppendRequestSchema, {
            requestId: { requestId: REQUEST_ID },
            dataBinary: bytes,
          }),
        ),
      );
      assert.equal(asHex.ok, asBinary.ok);
      if (asHex.ok && asBinary.ok) {
        assert.ok(equals(AgentClientMessageSchema, asHex.value.message, asBinary.value.message));
      } else if (!asHex.ok && !asBinary.ok) {
        assert.equal(asHex.error.reason, asBinary.error.reason);
      }
    }),
    { numRuns: 500 },
  );
});

test("a request without a request id or without a message is rejected", () => {
  const noID = create(BidiAppendRequestSchema, { data: "0a00" });
  assertError(toBinary(BidiAppendRequestSchema, noID), "bad_field");
  const noMessage = create(BidiAppendRequestSchema, { requestId: { requestId: REQUEST_ID } });
  assertError(toBinary(BidiAppendRequestSchema, noMessage), "empty");
  assertError(new Uint8Array(), "empty");
});

test("a negative append_seqno is rejected", () => {
  const request = create(BidiAppendRequestSchema, {
    requestId: { requestId: REQUEST_ID },
    appendSeqno: -1n,
    data: "3a00",
  });
  assertError(toBinary(BidiAppendRequestSchema, request), "bad_field");
});

test("unsupported encodings and bad gzip are typed errors", () => {
  const body = toBidiAppendBody(runAppend, { form: "binary" });
  assertError(body, "bad_encoding", { contentEncoding: "br" });
  assertError(body, "bad_gzip", { contentEncoding: "gzip" });
  assertError(new TextEncoder().encode("{not json"), "bad_json", { format: "json" });
});

test("a gzip bomb stops at the message limit", () => {
  const bomb = gzipSync(new Uint8Array(8 * 1024 * 1024));
  assert.ok(bomb.length < 64 * 1024, "the bomb is small on the wire");
  const decoded = fromBidiAppendBody(
    { body: bomb, contentEncoding: "gzip" },
    { ...DEFAULT_DECODE_LIMITS, maxMessageBytes: 1024 * 1024 },
  );
  assert.equal(decoded.ok, false);
  if (!decoded.ok) assert.equal(decoded.error.reason, "too_large");
});

test("oversized bodies and messages are rejected before decoding", () => {
  const limits = { ...DEFAULT_DECODE_LIMITS, maxBodyBytes: 100, maxMessageBytes: 50 };
  const body = toBidiAppendBody(runAppend, { form: "binary" });
  const decoded = fromBidiAppendBody({ body }, limits);
  assert.equal(decoded.ok, false);
  if (!decoded.ok) assert.equal(decoded.error.reason, "too_large");
  const small = fromAgentClientMessageBytes(new Uint8Array(60), limits);
  assert.equal(small.ok, false);
  if (!small.ok) assert.equal(small.error.reason, "too_large");
});

test("truncated and wrong-wire-type messages are typed protobuf errors", () => {
  const bytes = toBinary(AgentClientMessageSchema, runAppend.message);
  const truncated = fromAgentClientMessageBytes(bytes.subarray(0, bytes.length - 3));
  assert.equal(truncated.ok, false);
  if (!truncated.ok) assert.equal(truncated.error.reason, "bad_protobuf");
  // Field 1 (run_request, a message) sent as a varint.
  const wrongType = fromAgentClientMessageBytes(new Uint8Array([0x08, 0x01]));
  assert.equal(wrongType.ok, false);
  if (!wrongType.ok) assert.equal(wrongType.error.reason, "bad_protobuf");
});

test("nesting beyond the depth limit is a typed error, not a stack overflow", () => {
  // exec_client_message(2) → ls_result(8) → success(1) → directory_tree_root(1) → a directory
  // tree 200 levels deep through children_dirs(2), a recursive field.
  const wrap = (field: number, body: Uint8Array) =>
    new Uint8Array([(field << 3) | 2, ...varint(body.length), ...body]);
  let node = new Uint8Array();
  for (let i = 0; i < 200; i += 1) node = wrap(2, node);
  const message = wrap(2, wrap(8, wrap(1, wrap(1, node))));
  const decoded = fromAgentClientMessageBytes(message, { ...DEFAULT_DECODE_LIMITS, maxDepth: 16 });
  assert.equal(decoded.ok, false);
  if (!decoded.ok) assert.equal(decoded.error.reason, "bad_protobuf");
  assert.ok(fromAgentClientMessageBytes(message).ok === false, "the default limit applies too");
});

function varint(value: number): number[] {
  const bytes: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest & 0x7f) | 0x80);
    rest >>>= 7;
  }
  bytes.push(rest);
  return bytes;
}

test("unknown fields survive decode → encode, at every depth and in unknown oneof branches", () => {
  const known = toBinary(AgentClientMessageSchema, runAppend.message);
  // Inside run_request (field 1): field 26 (agent_session_id, newer than our schema) and an
  // unknown ConversationAction branch (19, inject_context_action) appended to `action` (2).
  const runRequest =
    runAppend.message.message.case === "runRequest" ? runAppend.message.message.value : undefined;
  assert.ok(runRequest);
  const extra = new Uint8Array([
    ...[0xd2, 0x01, 0x03, 0x61, 0x62, 0x63], // field 26, "abc"
  ]);
  const runBytes = new Uint8Array([...toBinary(AgentRunRequestSchema, runRequest), ...extra]);
  const withUnknown = new Uint8Array([0x0a, ...varint(runBytes.length), ...runBytes]);
  const decoded = fromAgentClientMessageBytes(withUnknown);
  assert.ok(decoded.ok);
  assert.deepEqual(toBinary(AgentClientMessageSchema, decoded.value), withUnknown);
  assert.notDeepEqual(withUnknown, known);
  const action = new Uint8Array([0x9a, 0x01, 0x02, 0x0a, 0x00]); // field 19 of ConversationAction
  const message = fromAgentClientMessageBytes(new Uint8Array([0x22, action.length, ...action]));
  assert.ok(message.ok);
  assert.equal(message.value.message.case, "conversationAction");
  assert.deepEqual(
    toBinary(AgentClientMessageSchema, message.value),
    new Uint8Array([0x22, action.length, ...action]),
  );
});

test("an exec result that does not decode but has readable exec ids fails that exec", () => {
  // A published client encodes LsSuccess field 1 (a message) as a path string.
  const lsSuccess = new BinaryWriter().tag(1, WireType.LengthDelimited).string("/w/src").finish();
  const lsResult = new BinaryWriter().tag(1, WireType.LengthDelimited).bytes(lsSuccess).finish();
  const exec = new BinaryWriter()
    .tag(1, WireType.Varint)
    .uint32(3)
    .tag(8, WireType.LengthDelimited)
    .bytes(lsResult)
    .tag(15, WireType.LengthDelimited)
    .string("exec-abc")
    .finish();
  const message = new BinaryWriter().tag(2, WireType.LengthDelimited).bytes(exec).finish();
  assert.equal(fromAgentClientMessageBytes(message).ok, false, "the message itself is bad");
  const body = toBinary(
    BidiAppendRequestSchema,
    create(BidiAppendRequestSchema, {
      requestId: { requestId: REQUEST_ID },
      appendSeqno: 4n,
      dataBinary: message,
    }),
  );
  const decoded = decode(body);
  assert.ok(decoded.ok, decoded.ok ? "" : decoded.error.message);
  assert.equal(decoded.value.appendSeqno, 4);
  assert.match(decoded.value.salvaged ?? "", /exec 3 "exec-abc"/);
  const event = fromClientMessage(decoded.value.message);
  assert.ok(event.type === "exec_throw");
  assert.equal(event.id, 3);
  assert.match(event.error, /could not be decoded/);
  // Bytes that carry no exec ids stay an error.
  const random = create(BidiAppendRequestSchema, {
    requestId: { requestId: REQUEST_ID },
    dataBinary: new Uint8Array([0x12, 0x03, 0xff, 0xff, 0xff]),
  });
  assert.equal(decode(toBinary(BidiAppendRequestSchema, random)).ok, false);
});
