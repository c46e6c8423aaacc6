import assert from "node:assert/strict";
import { test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { toBlobID } from "./blobs.ts";
import { toBlobCheckpoint } from "./checkpoint-blobs.ts";
import { toLastTurnOrigin } from "./checkpoint-origin.ts";
import {
  ConversationStateStructureSchema,
  ConversationTurnStructureSchema,
} from "./gen/agent/v1/conversation_state_pb.js";
import { PreFetchedBlobSchema } from "./gen/agent/v1/run_request_pb.js";
import { turnState } from "./testing.ts";

const agentTurn = (requestId: string) =>
  toBinary(
    ConversationTurnStructureSchema,
    create(ConversationTurnStructureSchema, {
      turn: {
        case: "agentConversationTurn",
        value: { userMessage: new Uint8Array([1]), requestId },
      },
    }),
  );
const checkpoint = (...turns: Uint8Array[]) => create(ConversationStateStructureSchema, { turns });
const NO_BLOBS: never[] = [];

test("no checkpoint, or one without turns: null", () => {
  assert.equal(toLastTurnOrigin(undefined, NO_BLOBS), null);
  assert.equal(toLastTurnOrigin(checkpoint(), NO_BLOBS), null);
});

test("inline turns: the last turn's request id", () => {
  assert.equal(toLastTurnOrigin(checkpoint(agentTurn("r1"), agentTurn("r2")), NO_BLOBS), "r2");
});

test("a blob id: the request id of the blob the request carries, else unknown", () => {
  const bytes = agentTurn("r7");
  const id = Buffer.from(toBlobID(bytes), "hex");
  const blobs = [create(PreFetchedBlobSchema, { id, value: bytes })];
  const forged = [create(PreFetchedBlobSchema, { id, value: agentTurn("r8") })];
  assert.equal(toLastTurnOrigin(checkpoint(agentTurn("r1"), id), blobs), "r7");
  assert.equal(toLastTurnOrigin(checkpoint(agentTurn("r1"), id), NO_BLOBS), "");
  // A blob whose bytes do not hash to its id is not taken.
  assert.equal(toLastTurnOrigin(checkpoint(id), forged), "");
});

test("a turn that is not an agent turn, or does not decode: unknown", () => {
  const shell = toBinary(
    ConversationTurnStructureSchema,
    create(ConversationTurnStructureSchema, {
      turn: { case: "shellConversationTurn", value: { shellCommand: new Uint8Array([1, 2]) } },
    }),
  );
  assert.equal(toLastTurnOrigin(checkpoint(shell), NO_BLOBS), "");
  assert.equal(toLastTurnOrigin(checkpoint(new Uint8Array([0xff, 0xff, 0xff])), NO_BLOBS), "");
});

test("a blob-form last turn the request did not carry: unknown, its id said to onUnresolved", () => {
  const written = toBlobCheckpoint(turnState({ requestID: "r-written" })).checkpoint.turns.at(-1);
  assert.equal(written?.length, 32);
  const unresolved: string[] = [];
  const note = (id: string) => unresolved.push(id);
  assert.equal(toLastTurnOrigin(checkpoint(agentTurn("r1")), NO_BLOBS, note), "r1");
  assert.deepEqual(unresolved, []);
  assert.equal(
    toLastTurnOrigin(checkpoint(agentTurn("r1"), written ?? agentTurn("")), NO_BLOBS, note),
    "",
  );
  assert.deepEqual(unresolved, [Buffer.from(written ?? []).toString("hex")]);
});
