import assert from "node:assert/strict";
import { test } from "node:test";
import { create, equals, fromBinary, toBinary } from "@bufbuild/protobuf";
import { detachBytes } from "./detach-bytes.ts";
import { TodoItemSchema } from "./gen/agent/v1/common_pb.js";
import {
  type ConversationStateStructure,
  ConversationStateStructureSchema,
  FileStateStructureSchema,
} from "./gen/agent/v1/conversation_state_pb.js";

/** Every `Uint8Array` under `value`. */
function viewsIn(value: unknown, out: Uint8Array[] = []): Uint8Array[] {
  if (value instanceof Uint8Array) out.push(value);
  else if (typeof value === "object" && value !== null) {
    for (const item of Object.values(value)) viewsIn(item, out);
  }
  return out;
}

/** A checkpoint with bytes in lists, maps, a nested message, singular fields and unknown fields. */
function decodedCheckpoint(): {
  readonly bytes: Uint8Array;
  readonly decoded: ConversationStateStructure;
} {
  const checkpoint = create(ConversationStateStructureSchema, {
    turns: [new Uint8Array([1, 2, 3]), new Uint8Array(0), new Uint8Array([4])],
    todos: [toBinary(TodoItemSchema, create(TodoItemSchema, { id: "1", content: "x" }))],
    summary: new Uint8Array([9, 9]),
    fileStates: { "a.ts": new Uint8Array([5, 6]) },
    fileStatesV2: {
      "b.ts": create(FileStateStructureSchema, { content: new Uint8Array([7]) }),
    },
    activeBranchName: "main",
    tokenDetails: { usedTokens: 5 },
  });
  const bytes = new Uint8Array([
    ...toBinary(ConversationStateStructureSchema, checkpoint),
    // Field 900 (not modelled), length 2, bytes 08 01: an unknown field.
    0xa2,
    0x38,
    0x02,
    0x08,
    0x01,
  ]);
  return { bytes, decoded: fromBinary(ConversationStateStructureSchema, bytes) };
}

test("every view is copied out of the decoded buffer, into one buffer of its own", () => {
  const { bytes, decoded } = decodedCheckpoint();
  const before = viewsIn(decoded);
  assert.ok(before.length >= 7);
  assert.ok(before.every((view) => view.buffer === bytes.buffer));
  const detached = detachBytes(decoded);
  const after = viewsIn(detached);
  assert.equal(after.length, before.length);
  const buffers = new Set(after.map((view) => view.buffer));
  assert.equal(buffers.size, 1);
  assert.ok(!buffers.has(bytes.buffer));
  const [buffer] = buffers;
  assert.equal(
    buffer?.byteLength,
    before.reduce((sum, view) => sum + view.length, 0),
  );
  // The same message, encoding to the same bytes; the input is untouched.
  assert.deepEqual(detached, decoded);
  assert.ok(equals(ConversationStateStructureSchema, detached, decoded));
  assert.deepEqual(toBinary(ConversationStateStructureSchema, detached), bytes);
  assert.ok(viewsIn(decoded).every((view) => view.buffer === bytes.buffer));
});

test("objects without views are shared, a value without any is returned as it is", () => {
  const { decoded } = decodedCheckpoint();
  const detached = detachBytes(decoded);
  assert.notEqual(detached, decoded);
  assert.equal(detached.readPaths, decoded.readPaths);
  assert.ok(decoded.tokenDetails !== undefined);
  assert.equal(detached.tokenDetails, decoded.tokenDetails);
  const plain = { a: [1, "x", { b: 2n }], c: null };
  assert.equal(detachBytes(plain), plain);
  // A Uint8Array that is all of its buffer holds nothing else: kept (a message built here).
  const built = { a: [new Uint8Array([1, 2])], b: new Uint8Array(0) };
  assert.equal(detachBytes(built), built);
});

test("an object's prototype is kept", () => {
  const prototype = { inherited: 1 };
  const value = Object.assign(Object.create(prototype) as object, {
    data: new Uint8Array([0, 1]).subarray(1),
  });
  const detached = detachBytes(value);
  assert.equal(Object.getPrototypeOf(detached), prototype);
  assert.deepEqual((detached as { data: Uint8Array }).data, new Uint8Array([1]));
});

test("views nearly all of their one buffer are kept: a copy would release little", () => {
  const turns = [new Uint8Array(4000).fill(1), new Uint8Array(4000).fill(2)];
  const bytes = toBinary(
    ConversationStateStructureSchema,
    create(ConversationStateStructureSchema, { turns }),
  );
  const decoded = fromBinary(ConversationStateStructureSchema, bytes);
  assert.equal(detachBytes(decoded), decoded);
  // The same views with a body around them 1/7 their size: copied out.
  const body = new Uint8Array(bytes.length + Math.ceil(bytes.length / 7));
  body.set(bytes);
  const inBody = fromBinary(ConversationStateStructureSchema, body.subarray(0, bytes.length));
  const detached = detachBytes(inBody);
  assert.notEqual(detached, inBody);
  assert.ok(detached.turns.every((turn) => turn.buffer !== body.buffer));
  assert.deepEqual(detached.turns, turns);
});
