import assert from "node:assert/strict";
import { test } from "node:test";
import { fromBinary } from "@bufbuild/protobuf";
import { AgentServerMessageSchema } from "./gen/agent/v1/agent_stream_pb.js";
import { toHeartbeatMessage, toServerMessageBytes, toUpdateMessage } from "./server-message.ts";

test("a heartbeat is interaction_update(1).heartbeat(13), two tags and no payload", () => {
  assert.deepEqual(
    toServerMessageBytes(toHeartbeatMessage()),
    new Uint8Array([0x0a, 0x02, 0x6a, 0x00]),
  );
});

test("updates wrap as interaction_update and round-trip", () => {
  const message = toUpdateMessage({ case: "textDelta", value: { text: "hi" } });
  const decoded = fromBinary(AgentServerMessageSchema, toServerMessageBytes(message));
  assert.ok(decoded.message.case === "interactionUpdate");
  const update = decoded.message.value.message;
  assert.ok(update.case === "textDelta");
  assert.equal(update.value.text, "hi");
});
