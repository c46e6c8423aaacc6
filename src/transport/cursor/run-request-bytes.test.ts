import assert from "node:assert/strict";
import { test } from "node:test";
import { create, equals, fromBinary, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { fromAgentClientMessageBytes } from "./bidi-append.ts";
import { AgentClientMessageSchema } from "./gen/agent/v1/agent_stream_pb.js";
import { type AgentRunRequest, AgentRunRequestSchema } from "./gen/agent/v1/run_request_pb.js";
import { fromReceivedRunRequest } from "./run-request-bytes.ts";
import { ideRunRequest } from "./testing.ts";

function decodedRunRequest(bytes: Uint8Array): AgentRunRequest {
  const decoded = fromAgentClientMessageBytes(bytes);
  assert.ok(decoded.ok);
  assert.equal(decoded.value.message.case, "runRequest");
  return decoded.value.message.value as AgentRunRequest;
}

test("a decoded run request keeps the bytes it came in, which decode to the same request", () => {
  const sent = ideRunRequest();
  const bytes = toBinary(
    AgentClientMessageSchema,
    create(AgentClientMessageSchema, { message: { case: "runRequest", value: sent } }),
  );
  const request = decodedRunRequest(bytes);
  const kept = fromReceivedRunRequest(request);
  assert.ok(kept !== undefined);
  assert.deepEqual(kept, toBinary(AgentRunRequestSchema, sent));
  assert.ok(equals(AgentRunRequestSchema, fromBinary(AgentRunRequestSchema, kept), request));
  // A view of the message's own buffer (the request's fields are views into it anyway): no copy
  // of a large request at each turn start.
  assert.equal(kept.buffer, bytes.buffer);
});

test("the bytes kept are a copy when the message is a small part of a larger buffer", () => {
  const message = toBinary(
    AgentClientMessageSchema,
    create(AgentClientMessageSchema, { message: { case: "runRequest", value: ideRunRequest() } }),
  );
  // E.g. a read buffer holding more than this message, or a slice of Node's shared pool.
  const large = new Uint8Array(message.length * 4);
  large.set(message, 100);
  const bytes = large.subarray(100, 100 + message.length);
  const kept = fromReceivedRunRequest(decodedRunRequest(bytes));
  assert.ok(kept !== undefined);
  assert.notEqual(kept.buffer, large.buffer);
  assert.equal(kept.buffer.byteLength, kept.length);
  assert.deepEqual(kept, message.subarray(message.length - kept.length));
});

test("a run request sent in two parts (merged by the decoder) keeps no bytes of its own", () => {
  const first = toBinary(
    AgentRunRequestSchema,
    create(AgentRunRequestSchema, { conversationId: "c" }),
  );
  const second = toBinary(AgentRunRequestSchema, ideRunRequest());
  const writer = new BinaryWriter();
  writer.tag(1, WireType.LengthDelimited).bytes(first);
  writer.tag(1, WireType.LengthDelimited).bytes(second);
  const request = decodedRunRequest(writer.finish());
  assert.equal(fromReceivedRunRequest(request), undefined);
});

test("a run request built here (not decoded) has no received bytes", () => {
  assert.equal(fromReceivedRunRequest(ideRunRequest()), undefined);
});
