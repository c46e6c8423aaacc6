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
  // A copy, not a view of the message's bytes.
  assert.notEqual(kept.buffer, bytes.buffer);
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
