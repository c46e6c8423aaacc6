import assert from "node:assert/strict";
import { test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { toCheckpointMessage } from "./checkpoint.ts";
import { toCheckpointFieldBytes, toTurnStructureBytes } from "./checkpoint-bytes.ts";
import { AgentServerMessageSchema, TtftBreakdownSchema } from "./gen/agent/v1/agent_stream_pb.js";
import { AgentMode } from "./gen/agent/v1/common_pb.js";
import {
  type ConversationStateStructure,
  ConversationStateStructureSchema,
  ConversationTokenDetailsSchema,
  ConversationTurnStructureSchema,
} from "./gen/agent/v1/conversation_state_pb.js";
import { toServerMessageBytes } from "./server-message.ts";
import { turnState } from "./testing.ts";

const bytes = fc.oneof(
  fc.uint8Array({ maxLength: 40 }),
  // Lengths whose varint takes two and three bytes.
  fc.integer({ min: 120, max: 20_000 }).map((length) => new Uint8Array(length).fill(length)),
);
const maybe = <T>(value: fc.Arbitrary<T>) => fc.option(value, { nil: undefined });

/** Checkpoints with fields before and after the turns, explicit zeros and unknown fields. */
const checkpoint: fc.Arbitrary<ConversationStateStructure> = fc
  .record({
    turns: fc.array(bytes, { maxLength: 6 }),
    rootPromptMessagesJson: fc.array(bytes, { maxLength: 2 }),
    todos: fc.array(bytes, { maxLength: 2 }),
    pendingToolCalls: fc.array(fc.string(), { maxLength: 2 }),
    usedTokens: maybe(fc.nat()),
    summary: maybe(bytes),
    mode: maybe(fc.constantFrom(AgentMode.UNSPECIFIED, AgentMode.AGENT, AgentMode.PLAN)),
    fileStates: fc.dictionary(fc.string({ maxLength: 8 }), bytes, { maxKeys: 2 }),
    readPaths: fc.array(fc.string(), { maxLength: 2 }),
    previousWorkspaceUris: fc.array(fc.string(), { maxLength: 2 }),
    plan: maybe(bytes),
    selfSummaryCount: fc.nat(),
    activeBranchName: maybe(fc.string({ maxLength: 8 })),
    startedAt: maybe(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })),
    unknown: fc.array(
      fc.tuple(fc.integer({ min: 32, max: 2000 }), fc.uint8Array({ maxLength: 8 })),
      {
        maxLength: 2,
      },
    ),
  })
  .map((fields) => {
    const message = create(ConversationStateStructureSchema, {
      turns: fields.turns,
      rootPromptMessagesJson: fields.rootPromptMessagesJson,
      todos: fields.todos,
      pendingToolCalls: fields.pendingToolCalls,
      fileStates: fields.fileStates,
      readPaths: fields.readPaths,
      previousWorkspaceUris: fields.previousWorkspaceUris,
      selfSummaryCount: fields.selfSummaryCount,
    });
    if (fields.usedTokens !== undefined) {
      message.tokenDetails = create(ConversationTokenDetailsSchema, {
        usedTokens: fields.usedTokens,
      });
    }
    if (fields.summary !== undefined) message.summary = fields.summary;
    if (fields.mode !== undefined) message.mode = fields.mode;
    if (fields.plan !== undefined) message.plan = fields.plan;
    if (fields.activeBranchName !== undefined) message.activeBranchName = fields.activeBranchName;
    if (fields.startedAt !== undefined) message.conversationStartedTimestampMs = fields.startedAt;
    if (fields.unknown.length > 0) {
      // Length-delimited unknown fields: the bytes after the tag are the length, then the data.
      message.$unknown = fields.unknown.map(([no, data]) => ({
        no,
        wireType: 2,
        data: new Uint8Array([data.length, ...data]),
      }));
    }
    return message;
  });

test("a checkpoint update's bytes are toBinary's, the turns copied in directly", () => {
  fc.assert(
    fc.property(checkpoint, (value) => {
      const message = create(AgentServerMessageSchema, {
        message: { case: "conversationCheckpointUpdate", value },
      });
      const expected = toBinary(AgentServerMessageSchema, message);
      assert.deepEqual(toServerMessageBytes(message), expected);
      const direct = toCheckpointFieldBytes(value, 0x1a);
      if (value.turns.length > 0) assert.deepEqual(direct, expected);
      else assert.equal(direct, undefined);
    }),
    { numRuns: 300 },
  );
});

test("the checkpoint a turn sends is written directly, to toBinary's bytes", () => {
  const earlier = new Uint8Array(300_000).fill(3);
  const message = toCheckpointMessage(
    turnState({
      previous: create(ConversationStateStructureSchema, { turns: [earlier], readPaths: ["/a"] }),
    }),
  );
  assert.equal(message.message.case, "conversationCheckpointUpdate");
  const direct = toCheckpointFieldBytes(message.message.value, 0x1a);
  assert.ok(direct !== undefined);
  assert.deepEqual(direct, toBinary(AgentServerMessageSchema, message));
  assert.deepEqual(toServerMessageBytes(message), direct);
});

test("a checkpoint update with other fields of the server message is left to toBinary", () => {
  const message = toCheckpointMessage(
    turnState({
      previous: create(ConversationStateStructureSchema, { turns: [new Uint8Array(9)] }),
    }),
  );
  message.ttftBreakdown = create(TtftBreakdownSchema);
  assert.deepEqual(toServerMessageBytes(message), toBinary(AgentServerMessageSchema, message));
  message.ttftBreakdown = undefined;
  message.$unknown = [{ no: 900, wireType: 0, data: new Uint8Array([1]) }];
  assert.deepEqual(toServerMessageBytes(message), toBinary(AgentServerMessageSchema, message));
});

test("a turn's bytes are toBinary's, its steps copied in once", () => {
  fc.assert(
    fc.property(
      fc.oneof(fc.constant(new Uint8Array(0)), bytes),
      fc.array(bytes, { maxLength: 5 }),
      fc.string(),
      (userMessage, steps, requestId) => {
        const expected = toBinary(
          ConversationTurnStructureSchema,
          create(ConversationTurnStructureSchema, {
            turn: { case: "agentConversationTurn", value: { userMessage, steps, requestId } },
          }),
        );
        assert.deepEqual(toTurnStructureBytes(userMessage, steps, requestId), expected);
      },
    ),
    { numRuns: 300 },
  );
});
