/**
 * carry-turn.ts on its own: the stream's turn is named by the turn's origin, holds the client's
 * entry for it once it is read, and a client entry that cannot be read is logged (the turn is
 * then listed twice, as before).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { createLLM } from "../../llm/index.ts";
import { createRunner } from "../../runner/runner.ts";
import { createMemoryStore } from "../../store/index.ts";
import { toBlobCheckpoint } from "../cursor/checkpoint-blobs.ts";
import {
  ConversationStateStructureSchema,
  ConversationStepSchema,
} from "../cursor/gen/agent/v1/conversation_state_pb.js";
import { KvClientMessageSchema } from "../cursor/gen/agent/v1/kv_pb.js";
import { type AgentServerMessage, toHeartbeatMessage } from "../cursor/index.ts";
import { REQUEST_ID, turnState } from "../cursor/testing.ts";
import type { LastClientTurn } from "../cursor/turn-state.ts";
import { createRecordingLog } from "../log.ts";
import { createOutboundStream } from "../outbound-stream.ts";
import { DEFAULT_SERVER_OPTIONS } from "../server.ts";
import { carryTurn } from "./carry-turn.ts";
import { createCheckpointWriter } from "./checkpoint-writer.ts";
import type { StreamState } from "./stream-state.ts";

const EARLIER = new Uint8Array(32).fill(1);
const LAST = new Uint8Array(32).fill(2);
const UNREAD =
  "the client's checkpoint ends with a turn blob it did not send back nor give when asked; a resumed turn is listed twice in this stream's checkpoints";

function setUp(
  lastClientTurn: LastClientTurn,
  turns: readonly Uint8Array[] = [EARLIER, LAST],
  blobs = false,
) {
  const llm = createLLM({ models: [] });
  const recording = createRecordingLog();
  const outbound = createOutboundStream<AgentServerMessage>({
    heartbeatMs: 60_000,
    heartbeat: toHeartbeatMessage,
  });
  const state: StreamState = {
    requestID: "resume-request",
    deps: {
      runner: createRunner({ store: createMemoryStore(), llm }),
      models: llm,
      now: () => 0,
      log: recording.log,
      options: DEFAULT_SERVER_OPTIONS.stream,
    },
    outbound,
    checkpoints: createCheckpointWriter({
      outbound,
      blobs,
      timeoutMs: 1_000,
      log: recording.log,
      describe: () => ({}),
    }),
    turn: {
      ...turnState({
        requestID: "resume-request",
        previous: create(ConversationStateStructureSchema, { turns: [...turns] }),
      }),
      lastClientTurn,
    },
    conversationID: "c1",
    startedAt: null,
    end: () => {},
  };
  return { state, lines: recording.lines, outbound };
}

test("the client's last turn is the one carried on: it leaves the earlier turns; the turn is named by its origin", () => {
  const { state, lines } = setUp({
    type: "read",
    turn: { requestID: "origin", entry: LAST, ids: null, bytes: null },
  });
  carryTurn(state, "origin");
  assert.equal(state.turn?.requestID, "origin");
  assert.deepEqual(state.turn?.previous.turns, [EARLIER]);
  assert.equal(state.turn?.carried?.entry, LAST);
  assert.equal(state.turn?.lastClientTurn, undefined);
  assert.deepEqual(lines, []);
});

test("a last turn blob that cannot be read: logged when it may be the turn carried on, and left in the earlier turns", () => {
  for (const [requestID, logged] of [
    [undefined, true],
    ["origin", true],
    ["another-turn", false],
  ] as const) {
    const { state, lines } = setUp({
      type: "unresolved",
      blob: "02".repeat(32),
      ...(requestID === undefined ? {} : { requestID }),
    });
    carryTurn(state, "origin");
    assert.equal(state.turn?.requestID, "origin");
    assert.deepEqual(state.turn?.previous.turns, [EARLIER, LAST]);
    assert.equal(state.turn?.carried, undefined);
    assert.deepEqual(
      lines.filter((line) => line.message === UNREAD).map((line) => line.fields.blob),
      logged ? ["02".repeat(32)] : [],
      String(requestID),
    );
  }
});

test("a takeover: a client turn blob not sent back is read from the checkpoints the stream taken over sent; only its later steps are this stream's", () => {
  const step = (text: string) =>
    create(ConversationStepSchema, { message: { case: "assistantMessage", value: { text } } });
  const previous = create(ConversationStateStructureSchema, { turns: [EARLIER] });
  const handing = turnState({ previous, steps: [step("one"), step("two"), step("three")] });
  // The client's last checkpoint: the one that stream sent after two steps.
  const sentAt2 = toBlobCheckpoint(turnState({ previous, steps: [step("one"), step("two")] }));
  assert.ok(sentAt2.turn !== undefined);
  const turn = { key: sentAt2.turn.key, steps: sentAt2.turnSteps };
  for (const known of [true, false]) {
    const { state, lines } = setUp({ type: "unresolved", blob: turn.key, requestID: REQUEST_ID }, [
      EARLIER,
      Buffer.from(turn.key, "hex"),
    ]);
    // Counts of later checkpoints too (the client missed them), newest last.
    const sentTurnSteps = () => (known ? [1, turn.steps, 3] : [1, 3]);
    carryTurn(state, REQUEST_ID, { turn: handing, checkpoints: { sentTurnSteps } });
    assert.deepEqual(state.turn?.previous.turns, [EARLIER]);
    if (known) {
      // The client's turn blob carried, its two steps by id; the third is this stream's.
      assert.equal(Buffer.from(state.turn?.carried?.entry ?? []).toString("hex"), turn.key);
      assert.equal(state.turn?.carried?.ids?.steps.length, 2);
      assert.equal(state.turn?.steps.length, 1);
    } else {
      // Not known there: the whole turn of that stream, its parts written again.
      assert.equal(state.turn?.carried, undefined);
      assert.equal(state.turn?.steps.length, 3);
    }
    assert.deepEqual(lines, []);
  }
});

test("a resume request's last turn blob not sent back: read back from the client's store (get_blob_args); once given, the turn is carried from it, before this stream's steps", async () => {
  const step = (text: string) =>
    create(ConversationStepSchema, { message: { case: "assistantMessage", value: { text } } });
  const client = toBlobCheckpoint(
    turnState({
      requestID: "origin",
      previous: create(ConversationStateStructureSchema, { turns: [EARLIER] }),
      steps: [step("one"), step("two")],
    }),
  );
  assert.ok(client.turn !== undefined);
  const blob = client.turn.key;
  const answer = (data: Uint8Array | undefined) =>
    create(KvClientMessageSchema, {
      id: 1,
      message: {
        case: "getBlobResult",
        value: data === undefined ? { error: { message: "blob not found" } } : { blobData: data },
      },
    }).message;
  for (const given of [true, false]) {
    const { state, lines, outbound } = setUp(
      { type: "unresolved", blob },
      [EARLIER, client.turn.id],
      true,
    );
    const reading = outbound.subscribe();
    carryTurn(state, "origin");
    const asked = (await reading.next()).value as AgentServerMessage | undefined;
    assert.equal(asked?.message.case, "kvServerMessage");
    const kv = asked?.message.value as { id: number; message: { case: string; value: unknown } };
    assert.equal(kv.message.case, "getBlobArgs");
    assert.equal(
      Buffer.from((kv.message.value as { blobId: Uint8Array }).blobId).toString("hex"),
      blob,
    );
    // Until the answer, the client's entry stays where it is.
    assert.deepEqual(state.turn?.previous.turns.length, 2);
    // A step of this stream's meanwhile.
    if (state.turn !== null) state.turn = { ...state.turn, steps: [step("three")] };
    state.checkpoints.result(kv.id, answer(given ? client.turn.data : undefined));
    if (given) {
      assert.deepEqual(state.turn?.previous.turns, [EARLIER]);
      assert.equal(Buffer.from(state.turn?.carried?.entry ?? []).toString("hex"), blob);
      assert.equal(state.turn?.carried?.ids?.steps.length, 2);
      assert.equal(state.turn?.steps.length, 1);
      // The checkpoint now: the client's two steps by id, then this stream's.
      const now = toBlobCheckpoint(state.turn ?? turnState());
      assert.equal(now.checkpoint.turns.length, 2);
      assert.equal(now.turnSteps, 3);
      assert.deepEqual(lines, []);
    } else {
      assert.equal(state.turn?.carried, undefined);
      assert.equal(state.turn?.previous.turns.length, 2);
      assert.deepEqual(
        lines.filter((line) => line.message === UNREAD).map((line) => line.fields.blob),
        [blob],
      );
    }
  }
});

test("the turn's own stream picked up after a restart, whose saved request's checkpoint ends with an earlier turn blob not sent back: the turn's own recorded blobs are read back, not the earlier one, and the turn is carried from the client's", async () => {
  const step = (text: string) =>
    create(ConversationStepSchema, { message: { case: "assistantMessage", value: { text } } });
  // The client's last checkpoint of this turn before the restart: two steps.
  const client = toBlobCheckpoint(
    turnState({
      requestID: "resume-request",
      previous: create(ConversationStateStructureSchema, { turns: [EARLIER] }),
      steps: [step("one"), step("two")],
    }),
  );
  assert.ok(client.turn !== undefined);
  const own = client.turn.key;
  const earlier = Buffer.from(EARLIER).toString("hex");
  // The saved run request predates the turn: its last turn is EARLIER, not sent back and
  // unknown to this fresh process (no request id).
  const { state, lines, outbound } = setUp({ type: "unresolved", blob: earlier }, [EARLIER], true);
  const asked: [string, string][] = [];
  const withTurnBlobs: StreamState = {
    ...state,
    deps: {
      ...state.deps,
      turnBlobs: {
        remember: () => {},
        find: () => Promise.resolve(null),
        writtenFor: (requestID, conversationID) => {
          asked.push([requestID, conversationID]);
          return Promise.resolve([own]);
        },
        flush: () => Promise.resolve(),
      },
    },
  };
  const reading = outbound.subscribe();
  carryTurn(withTurnBlobs, "resume-request");
  assert.deepEqual(
    asked,
    [["resume-request", state.turn?.conversationID]],
    "the turn's recorded blobs are looked up",
  );
  const message = (await reading.next()).value as AgentServerMessage | undefined;
  const kv = message?.message.value as { id: number; message: { case: string; value: unknown } };
  assert.equal(kv.message.case, "getBlobArgs");
  assert.equal(
    Buffer.from((kv.message.value as { blobId: Uint8Array }).blobId).toString("hex"),
    own,
    "the turn's own blob is asked for, not the earlier turn's",
  );
  withTurnBlobs.checkpoints.result(
    kv.id,
    create(KvClientMessageSchema, {
      id: kv.id,
      message: { case: "getBlobResult", value: { blobData: client.turn.data } },
    }).message,
  );
  assert.equal(Buffer.from(withTurnBlobs.turn?.carried?.entry ?? []).toString("hex"), own);
  assert.equal(withTurnBlobs.turn?.carried?.ids?.steps.length, 2);
  assert.deepEqual(lines, [], "nothing said: the turn is listed once");
});
