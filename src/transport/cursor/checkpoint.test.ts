import assert from "node:assert/strict";
import { test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { MAX_CHECKPOINT_BYTES, toCheckpoint } from "./checkpoint.ts";
import { AgentMode, TodoItemSchema } from "./gen/agent/v1/common_pb.js";
import {
  ConversationStateStructureSchema,
  ConversationStepSchema,
  ConversationTurnStructureSchema,
} from "./gen/agent/v1/conversation_state_pb.js";
import { UserMessageSchema } from "./gen/agent/v1/user_message_pb.js";
import { REQUEST_ID, turnState } from "./testing.ts";

test("the checkpoint keeps earlier turns and appends this turn inline", () => {
  const earlier = new Uint8Array([0x0a, 0x00]);
  const state = turnState({
    previous: create(ConversationStateStructureSchema, { turns: [earlier] }),
    steps: [
      create(ConversationStepSchema, {
        message: { case: "assistantMessage", value: { text: "Done." } },
      }),
    ],
  });
  const checkpoint = toCheckpoint(state);
  assert.equal(checkpoint.turns.length, 2);
  assert.deepEqual(checkpoint.turns[0], earlier);
  const turn = fromBinary(ConversationTurnStructureSchema, checkpoint.turns[1] ?? new Uint8Array());
  assert.ok(turn.turn.case === "agentConversationTurn");
  assert.equal(turn.turn.value.requestId, REQUEST_ID);
  const user = fromBinary(UserMessageSchema, turn.turn.value.userMessage);
  assert.equal(user.text, "Fix the failing test in src/math.ts");
  const step = fromBinary(ConversationStepSchema, turn.turn.value.steps[0] ?? new Uint8Array());
  assert.ok(step.message.case === "assistantMessage");
  assert.equal(step.message.value.text, "Done.");
});

test("token details, mode and todos reflect the turn", () => {
  const todo = create(TodoItemSchema, { id: "1", content: "x" });
  const checkpoint = toCheckpoint(
    turnState({ contextTokens: 5000, todos: [todo], agentMode: AgentMode.DEBUG }),
  );
  assert.equal(checkpoint.tokenDetails?.usedTokens, 5000);
  assert.equal(checkpoint.tokenDetails?.maxTokens, 200_000);
  assert.equal(checkpoint.mode, AgentMode.DEBUG);
  assert.deepEqual(checkpoint.todos, [toBinary(TodoItemSchema, todo)]);
  assert.deepEqual(checkpoint.pendingToolCalls, []);
});

test("fields and unknown fields of the client's checkpoint survive", () => {
  const previous = fromBinary(
    ConversationStateStructureSchema,
    new Uint8Array([
      ...toBinary(
        ConversationStateStructureSchema,
        create(ConversationStateStructureSchema, { activeBranchName: "main" }),
      ),
      // Field 32 (goal_state, not modelled), length 2, bytes 08 01.
      0x82,
      0x02,
      0x02,
      0x08,
      0x01,
    ]),
  );
  const bytes = toBinary(ConversationStateStructureSchema, toCheckpoint(turnState({ previous })));
  assert.ok(
    Buffer.from(bytes).includes(Buffer.from([0x82, 0x02, 0x02, 0x08, 0x01])),
    "unknown field re-encoded",
  );
  assert.equal(fromBinary(ConversationStateStructureSchema, bytes).activeBranchName, "main");
  assert.equal(previous.turns.length, 0, "the state's checkpoint is not mutated");
});

test("an oversized checkpoint drops older material first and always keeps this turn", () => {
  const big = new Uint8Array(200 * 1024);
  const previous = create(ConversationStateStructureSchema, {
    rootPromptMessagesJson: [big],
    turns: [big, big, big],
    readPaths: ["/a"],
  });
  const checkpoint = toCheckpoint(turnState({ previous }));
  assert.ok(toBinary(ConversationStateStructureSchema, checkpoint).length <= MAX_CHECKPOINT_BYTES);
  assert.deepEqual(checkpoint.rootPromptMessagesJson, []);
  assert.equal(checkpoint.turns.length, 3, "two earlier turns and this one");
  assert.equal(
    fromBinary(ConversationTurnStructureSchema, checkpoint.turns.at(-1) ?? new Uint8Array()).turn
      .case,
    "agentConversationTurn",
  );
});
