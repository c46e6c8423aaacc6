import assert from "node:assert/strict";
import { test } from "node:test";
import { clone, create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { MAX_CHECKPOINT_BYTES, toCheckpoint } from "./checkpoint.ts";
import { AgentMode, TodoItemSchema } from "./gen/agent/v1/common_pb.js";
import {
  type ConversationStateStructure,
  ConversationStateStructureSchema,
  ConversationStepSchema,
  ConversationTokenDetailsSchema,
  ConversationTurnStructureSchema,
} from "./gen/agent/v1/conversation_state_pb.js";
import { UserMessageSchema } from "./gen/agent/v1/user_message_pb.js";
import { REQUEST_ID, turnState } from "./testing.ts";
import type { TurnState } from "./turn-state.ts";

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
  assert.deepEqual(previous.rootPromptMessagesJson, [big], "the state's checkpoint is not changed");
  assert.deepEqual(previous.readPaths, ["/a"]);
  assert.equal(previous.turns.length, 3);
  assert.equal(checkpoint.turns.length, 3, "two earlier turns and this one");
  assert.equal(
    fromBinary(ConversationTurnStructureSchema, checkpoint.turns.at(-1) ?? new Uint8Array()).turn
      .case,
    "agentConversationTurn",
  );
});

/** The checkpoint as built before issue #19: a deep copy, encoded again for every size tried. */
function referenceCheckpoint(state: TurnState): ConversationStateStructure {
  const checkpoint = clone(ConversationStateStructureSchema, state.previous);
  const turn = create(ConversationTurnStructureSchema, {
    turn: {
      case: "agentConversationTurn",
      value: {
        userMessage: toBinary(UserMessageSchema, state.userMessage),
        steps: state.steps.map((step) => toBinary(ConversationStepSchema, step)),
        requestId: state.requestID,
      },
    },
  });
  checkpoint.turns = [...state.previous.turns, toBinary(ConversationTurnStructureSchema, turn)];
  checkpoint.pendingToolCalls = state.open.map((open) =>
    JSON.stringify({
      id: open.toolCallID,
      role: "assistant",
      content: [
        {
          type: "tool-call",
          toolCallId: open.toolCallID,
          toolName: open.toolName,
          args: open.arguments,
        },
      ],
    }),
  );
  checkpoint.tokenDetails = create(ConversationTokenDetailsSchema, {
    usedTokens: Math.min(state.contextTokens, 0xffff_ffff),
    maxTokens: Math.min(state.contextWindow, 0xffff_ffff),
  });
  checkpoint.mode = state.agentMode;
  checkpoint.todos = state.todos.map((todo) => toBinary(TodoItemSchema, todo));
  const size = () => toBinary(ConversationStateStructureSchema, checkpoint).length;
  if (size() <= MAX_CHECKPOINT_BYTES) return checkpoint;
  checkpoint.rootPromptMessagesJson = [];
  checkpoint.fileStates = {};
  checkpoint.fileStatesV2 = {};
  checkpoint.readPaths = [];
  while (size() > MAX_CHECKPOINT_BYTES && checkpoint.turns.length > 1) {
    checkpoint.turns = checkpoint.turns.slice(1);
  }
  return checkpoint;
}

test("the checkpoint's bytes are those of a deep copy fitted by encoding, at every size", () => {
  const decodedPrevious = (turns: number, turnBytes: number, extra: number) =>
    fromBinary(
      ConversationStateStructureSchema,
      new Uint8Array([
        ...toBinary(
          ConversationStateStructureSchema,
          create(ConversationStateStructureSchema, {
            turns: Array.from({ length: turns }, (_, i) => new Uint8Array(turnBytes).fill(i)),
            rootPromptMessagesJson: [new Uint8Array(extra).fill(1)],
            fileStates: { "a.ts": new Uint8Array(extra).fill(2) },
            fileStatesV2: { "b.ts": { content: new Uint8Array(extra).fill(3) } },
            readPaths: ["/a", "/b"],
            summary: new Uint8Array([1, 2]),
            tokenDetails: { usedTokens: 7, maxTokens: 9 },
            mode: AgentMode.PLAN,
            todos: [new Uint8Array([0x0a, 0x01, 0x31])],
            pendingToolCalls: ["{}"],
            activeBranchName: "main",
            selfSummaryCount: 3,
          }),
        ),
        // Field 32 (goal_state, not modelled), length 2, bytes 08 01.
        0x82,
        0x02,
        0x02,
        0x08,
        0x01,
      ]),
    );
  const open = {
    operationID: "op",
    toolCallID: "toolu_01",
    toolName: "read_file",
    modelCallID: "m",
    arguments: { path: "a.ts" },
    args: null,
    stage: "s",
    data: null,
    awaiting: { type: "exec", id: 1, execID: "e" },
    startedAt: 0,
    recovered: null,
  } as const;
  const step = create(ConversationStepSchema, {
    message: { case: "assistantMessage", value: { text: "Done. ".repeat(500) } },
  });
  const todo = create(TodoItemSchema, { id: "1", content: "x" });
  // Small; just fits; over by the side material; over by turns (one, several, all but this one);
  // a 16 KiB turn (two-byte length varint) and a 2 MiB one (four-byte).
  const cases = [
    [3, 100, 10],
    [10, 50_000, 1_000],
    [10, 50_000, 30_000],
    [12, 50_000, 1_000],
    [40, 16_384, 2_000],
    [3, 300_000, 0],
    [1, 2_100_000, 5],
    [0, 0, 600_000],
  ] as const;
  const cut = new Set<string>();
  for (const [turns, turnBytes, extra] of cases) {
    for (const overrides of [
      {},
      {
        open: [open],
        steps: [step],
        todos: [todo],
        contextTokens: 12_345,
        agentMode: AgentMode.ASK,
      },
    ]) {
      const state = turnState({ previous: decodedPrevious(turns, turnBytes, extra), ...overrides });
      const expected = toBinary(ConversationStateStructureSchema, referenceCheckpoint(state));
      const actual = toBinary(ConversationStateStructureSchema, toCheckpoint(state));
      assert.ok(
        Buffer.from(actual).equals(Buffer.from(expected)),
        `${turns} turns of ${turnBytes} B, ${extra} B of side material: the same bytes`,
      );
      const fitted = referenceCheckpoint(state);
      if (fitted.readPaths.length === 0) cut.add("side material");
      if (fitted.turns.length <= turns) cut.add("turns");
      if (fitted.turns.length === 1 && turns > 0) cut.add("all earlier turns");
    }
  }
  assert.deepEqual([...cut].sort(), ["all earlier turns", "side material", "turns"]);
});

test("the earlier turns are shared with the state's checkpoint, not copied for each checkpoint", () => {
  const earlier = new Uint8Array(64 * 1024).fill(7);
  const state = turnState({
    previous: create(ConversationStateStructureSchema, { turns: [earlier], readPaths: ["/a"] }),
  });
  const first = toCheckpoint(state);
  const second = toCheckpoint(state);
  assert.equal(first.turns[0], earlier);
  assert.equal(second.turns[0], earlier);
  assert.equal(first.readPaths, state.previous.readPaths);
  assert.deepEqual(state.previous.turns, [earlier], "the state's checkpoint is not changed");
});
