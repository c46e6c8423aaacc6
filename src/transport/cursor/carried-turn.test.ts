import assert from "node:assert/strict";
import { test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { toBlobStore } from "./blobs.ts";
import {
  toLastClientTurn,
  toSentClientTurn,
  withCarriedTurn,
  withHandedTurn,
} from "./carried-turn.ts";
import { toCheckpoint } from "./checkpoint.ts";
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
import { REQUEST_ID, turnState } from "./testing.ts";
import { rememberTurnBlob } from "./turn-blob-origins.ts";
import type { TurnState } from "./turn-state.ts";

const hex = (bytes: Uint8Array | undefined): string => Buffer.from(bytes ?? []).toString("hex");
const step = (text: string) =>
  create(ConversationStepSchema, { message: { case: "assistantMessage", value: { text } } });
const EARLIER = new Uint8Array(32).fill(7);
const RESUME_ID = "resume-request";

/**
 * The turn as the client holds it after two steps on the stream that started it: its checkpoint
 * (blob form) and every blob written for it (what it sends back in `pre_fetched_blobs`).
 */
function clientTurn(): { checkpoint: ConversationStateStructure; blobs: PreFetchedBlob[] } {
  const state = turnState({
    previous: create(ConversationStateStructureSchema, { turns: [EARLIER] }),
    steps: [step("one"), step("two")],
  });
  const { checkpoint, blobs } = toBlobCheckpoint(state);
  return {
    checkpoint,
    blobs: blobs.map((blob) => create(PreFetchedBlobSchema, { id: blob.id, value: blob.data })),
  };
}

/** A resume stream's turn state (no user message of its own) over the client's checkpoint. */
function resumeState(checkpoint: ConversationStateStructure, blobs: PreFetchedBlob[]): TurnState {
  return {
    ...turnState({ previous: checkpoint, requestID: RESUME_ID }),
    userMessage: create(UserMessageSchema, {}),
    lastClientTurn: toLastClientTurn(checkpoint, blobs),
  };
}

/** Request id, user text and step texts of a turn entry (inline, or a blob in `store`). */
function readTurn(entry: Uint8Array | undefined, store: ReadonlyMap<string, Uint8Array>) {
  assert.ok(entry !== undefined);
  const isBlob = entry.length === 32;
  const get = (bytes: Uint8Array): Uint8Array => {
    if (!isBlob) return bytes;
    const found = store.get(hex(bytes));
    assert.ok(found !== undefined, `blob ${hex(bytes)} is in the store`);
    return found;
  };
  const turn = fromBinary(ConversationTurnStructureSchema, get(entry)).turn;
  assert.ok(turn.case === "agentConversationTurn");
  return {
    requestID: turn.value.requestId,
    user: fromBinary(UserMessageSchema, get(turn.value.userMessage)).text,
    steps: turn.value.steps.map((id) => {
      const message = fromBinary(ConversationStepSchema, get(id)).message;
      return message.case === "assistantMessage" ? message.value.text : "?";
    }),
  };
}

const storeOf = (blobs: readonly PreFetchedBlob[]) =>
  new Map(blobs.map((blob) => [hex(blob.id), blob.value]));

test("a blob-form last turn sent back with its blobs is read: its ids, and its bytes", () => {
  const { checkpoint, blobs } = clientTurn();
  const last = toLastClientTurn(checkpoint, blobs);
  assert.ok(last.type === "read");
  assert.equal(last.turn.requestID, REQUEST_ID);
  assert.deepEqual(last.turn.entry, checkpoint.turns[1]);
  assert.equal(last.turn.ids?.steps.length, 2);
  assert.equal(last.turn.bytes?.steps.length, 2);
  const store = toBlobStore(blobs);
  assert.deepEqual(last.turn.bytes?.userMessage, store.get(hex(last.turn.ids?.userMessage)));
});

test("a blob-form last turn whose step blobs did not come back: ids only; one whose turn blob did not: unresolved", () => {
  const { checkpoint, blobs } = clientTurn();
  const turnOnly = blobs.filter((blob) => hex(blob.id) === hex(checkpoint.turns[1]));
  const idsOnly = toLastClientTurn(checkpoint, turnOnly);
  assert.ok(idsOnly.type === "read");
  assert.equal(idsOnly.turn.ids?.steps.length, 2);
  assert.equal(idsOnly.turn.bytes, null);

  const other = create(ConversationStateStructureSchema, {
    turns: [EARLIER, new Uint8Array(32).fill(9)],
  });
  assert.deepEqual(toLastClientTurn(other, blobs), {
    type: "unresolved",
    blob: hex(new Uint8Array(32).fill(9)),
  });
  // A turn blob this process wrote is named by its request id even when not sent back.
  rememberTurnBlob(hex(new Uint8Array(32).fill(9)), "written-here");
  assert.deepEqual(toLastClientTurn(other, []), {
    type: "unresolved",
    blob: hex(new Uint8Array(32).fill(9)),
    requestID: "written-here",
  });
  assert.deepEqual(toLastClientTurn(create(ConversationStateStructureSchema), blobs), {
    type: "none",
  });
});

test("an inline last turn is read from its own bytes; it has no blob ids", () => {
  const state = turnState({
    previous: create(ConversationStateStructureSchema, { turns: [EARLIER] }),
    steps: [step("one")],
  });
  const inline = toCheckpoint(state);
  const last = toLastClientTurn(inline, []);
  assert.ok(last.type === "read");
  assert.equal(last.turn.ids, null);
  assert.equal(last.turn.bytes?.steps.length, 1);
});

test("carried on: the client's entry leaves the earlier turns only when it is the turn resumed", () => {
  const { checkpoint, blobs } = clientTurn();
  const state = resumeState(checkpoint, blobs);
  const other = withCarriedTurn(state, "another-turn");
  assert.equal(other.carried, undefined);
  assert.equal(other.lastClientTurn, undefined);
  assert.equal(other.previous.turns.length, 2);

  const carried = withCarriedTurn({ ...state, previousReferenced: [10, 20] }, REQUEST_ID);
  assert.equal(carried.lastClientTurn, undefined);
  assert.deepEqual(carried.previous.turns, [EARLIER]);
  assert.deepEqual(carried.previousReferenced, [10]);
  assert.equal(carried.carried?.requestID, REQUEST_ID);
  // The client's checkpoint is not changed.
  assert.equal(checkpoint.turns.length, 2);
});

test("the blob form of a carried turn: the client's user message and steps by their ids (not written again), then this stream's", () => {
  const { checkpoint, blobs } = clientTurn();
  const state = {
    ...withCarriedTurn(resumeState(checkpoint, blobs), REQUEST_ID),
    requestID: REQUEST_ID,
    steps: [step("three")],
  };
  const form = toBlobCheckpoint(state);
  assert.equal(form.checkpoint.turns.length, 2);
  assert.deepEqual(form.checkpoint.turns[0], EARLIER);
  const client = storeOf(blobs);
  const written = form.blobs.map((blob) => blob.key);
  assert.deepEqual(
    written.filter((key) => client.has(key)),
    [],
    "no blob the client has is written",
  );
  assert.equal(written.length, 2, "the new step and the turn");
  const store = new Map([...client, ...form.blobs.map((blob) => [blob.key, blob.data] as const)]);
  assert.deepEqual(readTurn(form.checkpoint.turns[1], store), {
    requestID: REQUEST_ID,
    user: turnState().userMessage.text,
    steps: ["one", "two", "three"],
  });

  // The inline form (a fallback): the same turn, its bytes from the blobs that came back.
  const inline = toCheckpoint(state);
  assert.equal(inline.turns.length, 2);
  assert.deepEqual(readTurn(inline.turns[1], new Map()), readTurn(form.checkpoint.turns[1], store));
});

test("a carried turn with no step of this stream yet: the client's turn blob itself, nothing written", () => {
  const { checkpoint, blobs } = clientTurn();
  const state = {
    ...withCarriedTurn(resumeState(checkpoint, blobs), REQUEST_ID),
    requestID: REQUEST_ID,
  };
  const form = toBlobCheckpoint(state);
  assert.deepEqual(form.blobs, []);
  assert.deepEqual(form.checkpoint.turns, checkpoint.turns);
});

test("a carried turn whose step blobs did not come back: the blob form reuses the ids; the inline form keeps the client's entry and adds this stream's part", () => {
  const { checkpoint, blobs } = clientTurn();
  const turnOnly = blobs.filter((blob) => hex(blob.id) === hex(checkpoint.turns[1]));
  const state = {
    ...withCarriedTurn(resumeState(checkpoint, turnOnly), REQUEST_ID),
    requestID: REQUEST_ID,
    steps: [step("three")],
  };
  const form = toBlobCheckpoint(state);
  const store = new Map([
    ...storeOf(blobs),
    ...form.blobs.map((blob) => [blob.key, blob.data] as const),
  ]);
  assert.deepEqual(readTurn(form.checkpoint.turns[1], store).steps, ["one", "two", "three"]);

  const inline = toCheckpoint(state);
  assert.equal(inline.turns.length, 3);
  assert.deepEqual(inline.turns[1], checkpoint.turns[1]);
  assert.deepEqual(readTurn(inline.turns[2], new Map()).steps, ["three"]);
});

test("an inline carried turn: the blob form writes its user message and steps as blobs, in order before this stream's", () => {
  const first = turnState({
    previous: create(ConversationStateStructureSchema, { turns: [EARLIER] }),
    steps: [step("one")],
  });
  const inline = toCheckpoint(first);
  const state = {
    ...withCarriedTurn(resumeState(inline, []), REQUEST_ID),
    requestID: REQUEST_ID,
    steps: [step("two")],
  };
  const form = toBlobCheckpoint(state);
  assert.equal(form.blobs.length, 4, "user message, two steps, the turn");
  const store = new Map(form.blobs.map((blob) => [blob.key, blob.data]));
  assert.deepEqual(readTurn(form.checkpoint.turns[1], store), {
    requestID: REQUEST_ID,
    user: first.userMessage.text,
    steps: ["one", "two"],
  });
});

test("what is kept of the client's turn is copied out of the run request's body", () => {
  const { checkpoint, blobs } = clientTurn();
  const body = toBinary(
    AgentRunRequestSchema,
    create(AgentRunRequestSchema, { conversationState: checkpoint, preFetchedBlobs: blobs }),
  );
  const request = fromBinary(AgentRunRequestSchema, body);
  const last = toLastClientTurn(request.conversationState, request.preFetchedBlobs);
  assert.ok(last.type === "read" && last.turn.ids !== null && last.turn.bytes !== null);
  const { entry, ids, bytes } = last.turn;
  for (const kept of [entry, ids.userMessage, ...ids.steps, bytes.userMessage, ...bytes.steps]) {
    assert.notEqual(kept.buffer, body.buffer);
  }
  // Inline: the parts are views into the copied turn, held once.
  const inline = toCheckpoint(
    turnState({
      previous: create(ConversationStateStructureSchema, { turns: [EARLIER] }),
      steps: [step("one")],
    }),
  );
  const inlineBody = toBinary(
    AgentRunRequestSchema,
    create(AgentRunRequestSchema, { conversationState: inline }),
  );
  const read = toLastClientTurn(
    fromBinary(AgentRunRequestSchema, inlineBody).conversationState,
    [],
  );
  assert.ok(read.type === "read" && read.turn.bytes !== null);
  assert.notEqual(read.turn.entry.buffer, inlineBody.buffer);
  assert.equal(read.turn.bytes.steps[0]?.buffer, read.turn.entry.buffer);
});

/** The turn as the stream taken over holds it: steps one to `count`, under REQUEST_ID. */
const takenFrom = (count: number): TurnState =>
  turnState({
    previous: create(ConversationStateStructureSchema, { turns: [EARLIER] }),
    steps: ["one", "two", "three", "four"].slice(0, count).map(step),
  });

/** Step texts of `state`'s turn: carried, then its own (inline form). */
const stepsOf = (state: TurnState) => readTurn(toCheckpoint(state).turns.at(-1), new Map()).steps;

test("a takeover: the steps the stream taken over made after the client's checkpoint follow the client's part; the client's blobs are not written again", () => {
  const { checkpoint, blobs } = clientTurn(); // the client has "one", "two"
  const from = takenFrom(4);
  const state = {
    ...withCarriedTurn(resumeState(checkpoint, blobs), REQUEST_ID),
    requestID: REQUEST_ID,
  };
  const handed = withHandedTurn(state, from, undefined);
  assert.ok(handed !== null);
  assert.deepEqual(stepsOf(handed), ["one", "two", "three", "four"]);
  assert.equal(handed.steps.length, 2, "only the steps the client has not seen are this stream's");
  const written = toBlobCheckpoint(handed).blobs.map((blob) => blob.key);
  assert.deepEqual(
    written.filter((key) => storeOf(blobs).has(key)),
    [],
  );
});

test("a takeover: the client's turn unread but written here, or not in its checkpoint yet: the whole turn of the stream taken over", () => {
  const { checkpoint } = clientTurn();
  const from = takenFrom(3);
  // Its turn blob not sent back, but this process wrote it (the client's entry is dropped); the
  // stream taken over no longer knows it (toSentClientTurn, below, reads it when it does).
  const unread: TurnState = { ...resumeState(checkpoint, []), lastClientTurn: undefined };
  const last = {
    type: "unresolved",
    blob: hex(checkpoint.turns[1]),
    requestID: REQUEST_ID,
  } as const;
  const handed = withHandedTurn({ ...unread, requestID: REQUEST_ID }, from, last);
  assert.ok(handed !== null);
  assert.deepEqual(handed.previous.turns, [EARLIER]);
  assert.deepEqual(stepsOf(handed), ["one", "two", "three"]);
  assert.equal(readTurn(toCheckpoint(handed).turns[1], new Map()).user, from.userMessage.text);
  // The client's checkpoint ends with an earlier turn: the turn is not in it yet.
  const before = create(ConversationStateStructureSchema, { turns: [EARLIER] });
  const fresh = { ...withCarriedTurn(resumeState(before, []), REQUEST_ID), requestID: REQUEST_ID };
  const whole = withHandedTurn(fresh, from, { type: "none" });
  assert.ok(whole !== null);
  assert.deepEqual(whole.previous.turns, [EARLIER]);
  assert.deepEqual(stepsOf(whole), ["one", "two", "three"]);
});

test("a takeover: another turn, a client turn that is not a prefix, or an unread blob of unknown origin: the client's view is kept", () => {
  const { checkpoint, blobs } = clientTurn();
  const state = {
    ...withCarriedTurn(resumeState(checkpoint, blobs), REQUEST_ID),
    requestID: REQUEST_ID,
  };
  assert.equal(withHandedTurn(state, { ...takenFrom(4), requestID: "other" }, undefined), null);
  const differs = turnState({ steps: [step("one"), step("deux"), step("three")] });
  assert.equal(withHandedTurn(state, differs, undefined), null);
  assert.equal(withHandedTurn(state, takenFrom(1), undefined), null, "the client has more");
  const unread: TurnState = {
    ...resumeState(checkpoint, []),
    lastClientTurn: undefined,
    requestID: REQUEST_ID,
  };
  assert.equal(
    withHandedTurn(unread, takenFrom(3), { type: "unresolved", blob: hex(checkpoint.turns[1]) }),
    null,
  );
});

test("a takeover: the client's checkpoint ends with another turn's blob, unread but known to be that turn's: the whole turn of the stream taken over", () => {
  // The previous turn's blob, written here (its origin known) but neither sent back nor
  // remembered by its bytes; the first checkpoint of the turn taken over never reached the client.
  const another = new Uint8Array(32).fill(9);
  rememberTurnBlob(hex(another), "the-previous-request");
  const checkpoint = create(ConversationStateStructureSchema, { turns: [EARLIER, another] });
  const resume = resumeState(checkpoint, []);
  const last = resume.lastClientTurn;
  assert.deepEqual(last, {
    type: "unresolved",
    blob: hex(another),
    requestID: "the-previous-request",
  });
  const state = { ...withCarriedTurn(resume, REQUEST_ID), requestID: REQUEST_ID };
  const from = turnState({ previous: checkpoint, steps: [step("one"), step("two")] });
  const handed = withHandedTurn(state, from, last);
  assert.ok(handed !== null, "the same as when that blob is read and is another turn's");
  assert.deepEqual(handed.previous.turns, [EARLIER, another], "the previous turn stays");
  assert.deepEqual(stepsOf(handed), ["one", "two"]);
  assert.equal(readTurn(toCheckpoint(handed).turns.at(-1), new Map()).user, from.userMessage.text);
});

test("a takeover: a client turn blob not sent back that the stream taken over sent is read from its turn; the client's blobs are not written again", () => {
  const from = takenFrom(4);
  // The client's last checkpoint: the one the stream taken over sent after two steps.
  const { checkpoint, blobs, turn: sentBlob, turnSteps } = toBlobCheckpoint(takenFrom(2));
  assert.ok(sentBlob !== undefined);
  const turn = { key: sentBlob.key, steps: turnSteps };
  assert.deepEqual(turn.steps, 2);
  const resume = resumeState(checkpoint, []);
  assert.equal(resume.lastClientTurn?.type, "unresolved");
  const sent = toSentClientTurn(from, turn.key, [1, turn.steps, 3]);
  assert.ok(sent?.type === "read");
  assert.equal(sent.turn.requestID, REQUEST_ID);
  assert.equal(hex(sent.turn.entry), turn.key);
  assert.equal(sent.turn.ids?.steps.length, 2);
  // The ids must give that very turn blob.
  assert.equal(toSentClientTurn(from, turn.key, [1, 3, 4]), null);
  assert.equal(toSentClientTurn(takenFrom(1), turn.key, [2]), null, "fewer steps");
  const state = {
    ...withCarriedTurn({ ...resume, lastClientTurn: sent }, REQUEST_ID),
    requestID: REQUEST_ID,
  };
  assert.deepEqual(state.previous.turns, [EARLIER], "the client's entry is carried");
  const handed = withHandedTurn(state, from, sent);
  assert.ok(handed !== null);
  assert.equal(handed.steps.length, 2, "only the steps the client has not seen are this stream's");
  const written = toBlobCheckpoint(handed);
  const had = new Map(blobs.map((blob) => [blob.key, blob.data] as const));
  assert.deepEqual(
    written.blobs.map((blob) => blob.key).filter((key) => had.has(key)),
    [],
  );
  const store = new Map([...had, ...written.blobs.map((blob) => [blob.key, blob.data] as const)]);
  const read = readTurn(written.checkpoint.turns.at(-1), store);
  assert.deepEqual([read.requestID, read.steps], [REQUEST_ID, ["one", "two", "three", "four"]]);
});
