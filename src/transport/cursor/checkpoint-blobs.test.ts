import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { MAX_CHECKPOINT_BYTES, toCheckpoint } from "./checkpoint.ts";
import { toBlobCheckpoint } from "./checkpoint-blobs.ts";
import {
  type ConversationStateStructure,
  ConversationStateStructureSchema,
  ConversationStepSchema,
  ConversationTurnStructureSchema,
} from "./gen/agent/v1/conversation_state_pb.js";
import {
  AgentRunRequestSchema,
  type PreFetchedBlob,
  PreFetchedBlobSchema,
} from "./gen/agent/v1/run_request_pb.js";
import { UserMessageSchema } from "./gen/agent/v1/user_message_pb.js";
import { fromRunRequest } from "./run-request.ts";
import { ideRunRequest, REQUEST_ID, T0, turnState } from "./testing.ts";

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");
const hex = (bytes: Uint8Array | undefined): string => Buffer.from(bytes ?? []).toString("hex");

const step = (text: string) =>
  create(ConversationStepSchema, { message: { case: "assistantMessage", value: { text } } });

test("the blob form: this turn is the id of a turn blob whose user message and steps are blob ids", () => {
  const earlier = new Uint8Array(32).fill(7);
  const state = turnState({
    previous: create(ConversationStateStructureSchema, { turns: [earlier] }),
    steps: [step("one"), step("two")],
  });
  const { checkpoint, blobs } = toBlobCheckpoint(state);
  // The client's turn is passed on as it came; ours is 32 bytes, the SHA-256 of the turn blob.
  assert.equal(checkpoint.turns.length, 2);
  assert.deepEqual(checkpoint.turns[0], earlier);
  const store = new Map(blobs.map((blob) => [blob.key, blob.data]));
  for (const blob of blobs) {
    assert.equal(blob.key, sha256(blob.data));
    assert.equal(hex(blob.id), blob.key);
  }
  const turnBytes = store.get(hex(checkpoint.turns[1]));
  assert.ok(turnBytes !== undefined, "the turn blob is written");
  assert.equal(blobs.at(-1)?.key, hex(checkpoint.turns[1]), "the turn blob comes last");
  const turn = fromBinary(ConversationTurnStructureSchema, turnBytes).turn;
  assert.ok(turn.case === "agentConversationTurn");
  assert.equal(turn.value.requestId, REQUEST_ID);
  const user = store.get(hex(turn.value.userMessage));
  assert.equal(
    fromBinary(UserMessageSchema, user ?? new Uint8Array()).text,
    state.userMessage.text,
  );
  assert.deepEqual(
    turn.value.steps.map((id) => {
      const message = fromBinary(
        ConversationStepSchema,
        store.get(hex(id)) ?? new Uint8Array(),
      ).message;
      return message.case === "assistantMessage" ? message.value.text : "?";
    }),
    ["one", "two"],
  );
  // The same bytes as the inline form's user message and steps (byte for byte).
  const inline = fromBinary(
    ConversationTurnStructureSchema,
    toCheckpoint(state).turns[1] ?? new Uint8Array(),
  ).turn;
  assert.ok(inline.case === "agentConversationTurn");
  assert.deepEqual(user, inline.value.userMessage);
  assert.deepEqual(
    turn.value.steps.map((id) => store.get(hex(id))),
    inline.value.steps,
  );
  // Every field but the turns is the inline form's.
  const withoutTurns = (bytes: typeof checkpoint) =>
    toBinary(ConversationStateStructureSchema, { ...bytes, turns: [] });
  assert.deepEqual(withoutTurns(checkpoint), withoutTurns(toCheckpoint(state)));
});

test("equal steps are one blob; a later checkpoint of the turn reuses the earlier blobs' ids", () => {
  const first = toBlobCheckpoint(turnState({ steps: [step("same"), step("same")] }));
  assert.equal(first.blobs.length, 3, "user message, one step blob, the turn");
  const steps = [step("a")];
  const before = toBlobCheckpoint(turnState({ steps }));
  const after = toBlobCheckpoint(turnState({ steps: [...steps, step("b")] }));
  assert.equal(before.blobs[1]?.key, after.blobs[1]?.key);
  assert.notEqual(before.blobs.at(-1)?.key, after.blobs.at(-1)?.key, "a new turn blob");
});

test("the 512 KiB cap holds for the blob form: earlier turns dropped oldest first, never this one", () => {
  const big = new Uint8Array(200 * 1024).fill(1);
  const previous = create(ConversationStateStructureSchema, { turns: [big, big, big] });
  // This turn is large inline; in the blob form it is 32 bytes, but its blobs come back with the
  // next run request (pre_fetched_blobs) and count as much: the same earlier turns go.
  const state = turnState({ previous, steps: [step("x".repeat(150 * 1024))] });
  const inline = toCheckpoint(state);
  const blob = toBlobCheckpoint(state).checkpoint;
  for (const checkpoint of [inline, blob]) {
    assert.ok(
      toBinary(ConversationStateStructureSchema, checkpoint).length <= MAX_CHECKPOINT_BYTES,
    );
  }
  assert.equal(inline.turns.length, 2);
  assert.equal(blob.turns.length, 2);
  assert.equal(blob.turns.at(-1)?.length, 32);
  // Client turns that are ids cost 32 bytes each: hundreds fit.
  const ids = Array.from({ length: 500 }, (_, index) => new Uint8Array(32).fill(index % 256));
  const many = toBlobCheckpoint(
    turnState({ previous: create(ConversationStateStructureSchema, { turns: ids }) }),
  ).checkpoint;
  assert.equal(many.turns.length, 501);
});

test("a turn without a user message of its own (a resume) still has a user message blob", () => {
  const { checkpoint, blobs } = toBlobCheckpoint(
    turnState({ userMessage: create(UserMessageSchema, {}), steps: [step("resumed")] }),
  );
  const store = new Map(blobs.map((blob) => [blob.key, blob.data]));
  const turn = fromBinary(
    ConversationTurnStructureSchema,
    store.get(hex(checkpoint.turns.at(-1))) ?? new Uint8Array(),
  ).turn;
  assert.ok(turn.case === "agentConversationTurn");
  // The IDE's clone throws on an empty user message id.
  assert.equal(turn.value.userMessage.length, 32);
  // Not empty (blob_data would be absent on the wire): the message id is the request id.
  const user = store.get(hex(turn.value.userMessage));
  assert.ok(user !== undefined && user.length > 0);
  assert.deepEqual(
    {
      text: fromBinary(UserMessageSchema, user).text,
      id: fromBinary(UserMessageSchema, user).messageId,
    },
    { text: "", id: REQUEST_ID },
  );
  // The same blob for every checkpoint of the turn; another turn's is another blob.
  const again = toBlobCheckpoint(
    turnState({ userMessage: create(UserMessageSchema, {}), steps: [step("resumed")] }),
  );
  assert.equal(again.blobs[0]?.key, blobs[0]?.key);
  const other = toBlobCheckpoint(
    turnState({ userMessage: create(UserMessageSchema, {}), requestID: "r-other" }),
  );
  assert.notEqual(other.blobs[0]?.key, blobs[0]?.key);
});

test("the cap counts the blobs the client sends back (pre_fetched_blobs): the oldest earlier turns go, never the last", () => {
  // Ten turns of one 100 KiB step each, every run request carrying back the blobs its
  // checkpoint references (as the test client and peers do).
  const big = "x".repeat(100 * 1024);
  const store = new Map<string, Uint8Array>();
  let checkpoint: ConversationStateStructure | undefined;
  const kept: number[] = [];
  for (let index = 0; index < 10; index++) {
    const prefetched = referencedBlobs(checkpoint, store);
    const request = ideRunRequest((edit) => {
      edit.conversationState = checkpoint;
      edit.preFetchedBlobs = prefetched;
    });
    // What the client sends back of the previous checkpoint fits the cap (framing aside).
    const back = toBinary(
      AgentRunRequestSchema,
      create(AgentRunRequestSchema, { conversationState: checkpoint, preFetchedBlobs: prefetched }),
    ).length;
    assert.ok(back <= MAX_CHECKPOINT_BYTES + 16, `turn ${index}: ${back} bytes come back`);
    const start = fromRunRequest(request, "user_message", {
      at: T0,
      inputID: `r${index}:0`,
      requestID: `r${index}`,
      contextWindow: 200_000,
    });
    assert.ok(start.ok);
    const built = toBlobCheckpoint({ ...start.value.state, steps: [step(`${index}${big}`)] });
    for (const blob of built.blobs) store.set(blob.key, blob.data);
    checkpoint = built.checkpoint;
    kept.push(checkpoint.turns.length);
  }
  // Four turns of ~100 KiB fit in 512 KiB with this one; five do not.
  assert.deepEqual(kept, [1, 2, 3, 4, 5, 5, 5, 5, 5, 5]);
  // The last turn is this turn (r9).
  const last = store.get(hex(checkpoint?.turns.at(-1)));
  const turn = fromBinary(ConversationTurnStructureSchema, last ?? new Uint8Array()).turn;
  assert.equal(turn.case === "agentConversationTurn" ? turn.value.requestId : "", "r9");
});

/** The blobs `checkpoint` references (turns, their user messages and steps) from `store`. */
function referencedBlobs(
  checkpoint: ConversationStateStructure | undefined,
  store: ReadonlyMap<string, Uint8Array>,
): PreFetchedBlob[] {
  const out: PreFetchedBlob[] = [];
  const add = (id: Uint8Array): Uint8Array | undefined => {
    const value = store.get(hex(id));
    if (value !== undefined) out.push(create(PreFetchedBlobSchema, { id, value }));
    return value;
  };
  for (const id of checkpoint?.turns ?? []) {
    const bytes = add(id);
    const turn = fromBinary(ConversationTurnStructureSchema, bytes ?? new Uint8Array()).turn;
    if (turn.case !== "agentConversationTurn") continue;
    add(turn.value.userMessage);
    for (const stepID of turn.value.steps) add(stepID);
  }
  return out;
}
