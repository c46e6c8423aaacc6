import assert from "node:assert/strict";
import { test } from "node:test";
import { create, fromBinary } from "@bufbuild/protobuf";
import { AgentServerMessageSchema } from "./gen/agent/v1/agent_stream_pb.js";
import { InteractionUpdateSchema, ThinkingStyle } from "./gen/agent/v1/interaction_update_pb.js";
import {
  toHeartbeatMessage,
  toServerMessageBytes,
  toServerNotice,
  toTextDeltaMessage,
  toThinkingDeltaMessage,
  toUpdateMessage,
} from "./server-message.ts";

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

test("the hand-built delta messages are create()'s, object for object and byte for byte", () => {
  const viaCreate = (update: Parameters<typeof toUpdateMessage>[0]) =>
    create(AgentServerMessageSchema, {
      message: {
        case: "interactionUpdate",
        value: create(InteractionUpdateSchema, { message: update }),
      },
    });
  const cases = [
    [toTextDeltaMessage("hi"), viaCreate({ case: "textDelta", value: { text: "hi" } })],
    [toTextDeltaMessage(""), viaCreate({ case: "textDelta", value: { text: "" } })],
    [
      toTextDeltaMessage("é\u{1F600}\n"),
      viaCreate({ case: "textDelta", value: { text: "é\u{1F600}\n" } }),
    ],
    [
      toServerNotice("note"),
      viaCreate({ case: "textDelta", value: { text: "note", isServerNotice: true } }),
    ],
    [toThinkingDeltaMessage("hm"), viaCreate({ case: "thinkingDelta", value: { text: "hm" } })],
    [
      toThinkingDeltaMessage("hm", ThinkingStyle.CODEX),
      viaCreate({
        case: "thinkingDelta",
        value: { text: "hm", thinkingStyle: ThinkingStyle.CODEX },
      }),
    ],
  ] as const;
  for (const [built, reference] of cases) {
    assert.deepStrictEqual(built, reference);
    assert.deepEqual(toServerMessageBytes(built), toServerMessageBytes(reference));
  }
});
