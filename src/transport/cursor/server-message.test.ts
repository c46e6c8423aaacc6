import assert from "node:assert/strict";
import { test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { AgentServerMessageSchema, TtftBreakdownSchema } from "./gen/agent/v1/agent_stream_pb.js";
import { InteractionUpdateSchema, ThinkingStyle } from "./gen/agent/v1/interaction_update_pb.js";
import { ToolCallSchema } from "./gen/agent/v1/tool_call_pb.js";
import {
  toDeltaBytes,
  toHeartbeatMessage,
  toServerMessageBytes,
  toServerNotice,
  toTextDeltaMessage,
  toThinkingDeltaMessage,
  toUpdateMessage,
} from "./server-message.ts";
import { findTool } from "./tools/catalogue.ts";

test("a heartbeat is interaction_update(1).heartbeat(13), two tags and no payload", () => {
  assert.deepEqual(
    toServerMessageBytes(toHeartbeatMessage()),
    new Uint8Array([0x0a, 0x02, 0x6a, 0x00]),
  );
});

test("the heartbeat is one frozen message, and each caller gets its bytes to keep", () => {
  const heartbeat = toHeartbeatMessage();
  assert.equal(toHeartbeatMessage(), heartbeat);
  assert.ok(Object.isFrozen(heartbeat) && Object.isFrozen(heartbeat.message.value));
  assert.deepEqual(heartbeat, toUpdateMessage({ case: "heartbeat", value: {} }));
  const first = toServerMessageBytes(heartbeat);
  first.fill(0);
  assert.deepEqual(
    toServerMessageBytes(heartbeat),
    toBinary(AgentServerMessageSchema, toUpdateMessage({ case: "heartbeat", value: {} })),
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
    assert.deepEqual(toServerMessageBytes(built), toBinary(AgentServerMessageSchema, reference));
  }
});

test("a delta's bytes are toBinary's, for any text, notice flag, thinking style, tool call (property)", () => {
  const style = fc.option(
    fc.constantFrom(...Object.values(ThinkingStyle).filter(Number.isInteger)),
    {
      nil: undefined,
    },
  ) as fc.Arbitrary<ThinkingStyle | undefined>;
  // Any UTF-16 code units (lone surrogates included: "binary" has none), and lengths across the
  // varint sizes.
  const surrogate = fc
    .integer({ min: 0xd800, max: 0xdfff })
    .map((code) => String.fromCharCode(code));
  const text = fc.oneof(
    fc.string({ unit: "binary", maxLength: 40 }),
    fc.string({ unit: fc.oneof(surrogate, fc.constantFrom("a", "é", "\u{1F600}")), maxLength: 40 }),
    fc.string({ unit: "grapheme", maxLength: 20 }),
    fc.nat({ max: 20_000 }).map((n) => "x".repeat(n)),
  );
  // UI forms of tool calls, each shared by many updates as a streaming call's is.
  const previews = [
    create(ToolCallSchema, {
      toolCallId: "toolu_1",
      tool: findTool("read_file", "agent", [])?.preview(),
    }),
    create(ToolCallSchema, {
      toolCallId: "toolu_2",
      tool: findTool("edit_file", "agent", [])?.preview(),
    }),
    create(ToolCallSchema, { toolCallId: "toolu_3" }),
  ];
  assert.deepEqual(
    previews.map((preview) => preview.tool.case),
    ["readToolCall", "editToolCall", undefined],
  );
  const message = fc.oneof(
    fc.tuple(text, fc.boolean()).map(([value, notice]) => toTextDeltaMessage(value, notice)),
    fc
      .tuple(text, style)
      .map(([value, thinkingStyle]) => toThinkingDeltaMessage(value, thinkingStyle)),
    fc
      .tuple(text, fc.option(fc.constantFrom(...previews), { nil: undefined }), text, text)
      .map(([callId, toolCall, argsTextDelta, modelCallId]) =>
        toUpdateMessage({
          case: "partialToolCall",
          value: {
            callId,
            argsTextDelta,
            modelCallId,
            ...(toolCall === undefined ? {} : { toolCall }),
          },
        }),
      ),
  );
  fc.assert(
    fc.property(message, (built) => {
      const direct = toDeltaBytes(built);
      assert.ok(direct !== undefined, "written directly");
      assert.deepEqual(direct, toBinary(AgentServerMessageSchema, built));
      assert.deepEqual(toServerMessageBytes(built), direct);
    }),
  );
});

test("anything but a plain delta is left to toBinary: unknown fields, other updates", () => {
  const withUnknown = toTextDeltaMessage("hi");
  const update = withUnknown.message.value as { message: { value: { $unknown?: unknown } } };
  update.message.value.$unknown = [{ no: 9, wireType: 0, data: new Uint8Array([1]) }];
  const others = [
    withUnknown,
    toHeartbeatMessage(),
    toUpdateMessage({ case: "thinkingCompleted", value: { thinkingDurationMs: 5 } }),
  ];
  const withBreakdown = toTextDeltaMessage("hi");
  withBreakdown.ttftBreakdown = create(TtftBreakdownSchema);
  others.push(withBreakdown);
  for (const message of others) {
    assert.equal(toDeltaBytes(message), undefined);
    assert.deepEqual(toServerMessageBytes(message), toBinary(AgentServerMessageSchema, message));
  }
});
