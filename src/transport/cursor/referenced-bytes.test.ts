import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import {
  ConversationStateStructureSchema,
  ConversationTurnStructureSchema,
} from "./gen/agent/v1/conversation_state_pb.js";
import { type PreFetchedBlob, PreFetchedBlobSchema } from "./gen/agent/v1/run_request_pb.js";
import {
  PREFETCHED_BLOB_OVERHEAD,
  REFERENCED_COUNTED_FROM,
  toReferencedBytes,
} from "./referenced-bytes.ts";

const sha = (bytes: Uint8Array) => new Uint8Array(createHash("sha256").update(bytes).digest());

/** `turns` blob-form turns of one user message and one step of `stepBytes` each, all prefetched. */
function conversation(turns: number, stepBytes: number) {
  const blobs: PreFetchedBlob[] = [];
  const ids: Uint8Array[] = [];
  const blob = (value: Uint8Array): Uint8Array => {
    const id = sha(value);
    blobs.push(create(PreFetchedBlobSchema, { id, value }));
    return id;
  };
  for (let turn = 0; turn < turns; turn += 1) {
    const userMessage = blob(new Uint8Array(10).fill(turn));
    const step = blob(new Uint8Array(stepBytes).fill(turn + 100));
    const value = create(ConversationTurnStructureSchema, {
      turn: {
        case: "agentConversationTurn",
        value: { userMessage, steps: [step], requestId: `r${turn}` },
      },
    });
    ids.push(blob(toBinary(ConversationTurnStructureSchema, value)));
  }
  return { state: create(ConversationStateStructureSchema, { turns: ids }), blobs };
}

test("each earlier turn counts its turn, user message and step blobs once much comes back", () => {
  const { state, blobs } = conversation(4, 100 * 1024);
  const referenced = toReferencedBytes(state, blobs);
  assert.equal(referenced?.length, 4);
  for (const bytes of referenced ?? []) {
    assert.ok(bytes > 100 * 1024 + 3 * PREFETCHED_BLOB_OVERHEAD, `${bytes}`);
    assert.ok(bytes < 100 * 1024 + 200 + 3 * PREFETCHED_BLOB_OVERHEAD, `${bytes}`);
  }
});

test("with little coming back, the turns' shares are not worked out", () => {
  const { state, blobs } = conversation(4, 10 * 1024);
  const total = blobs.reduce((sum, blob) => sum + blob.value.length + PREFETCHED_BLOB_OVERHEAD, 0);
  assert.ok(total <= REFERENCED_COUNTED_FROM);
  assert.equal(toReferencedBytes(state, blobs), undefined);
});
