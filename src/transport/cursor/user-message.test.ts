import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { toBlobStore } from "./blobs.ts";
import { PreFetchedBlobSchema } from "./gen/agent/v1/run_request_pb.js";
import { UserMessageSchema } from "./gen/agent/v1/user_message_pb.js";
import { T0 } from "./testing.ts";
import { sniffImageType, toUserMessage } from "./user-message.ts";

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
const NO_BLOBS = toBlobStore([]);

function blob(value: Uint8Array) {
  return create(PreFetchedBlobSchema, {
    id: new Uint8Array(createHash("sha256").update(value).digest()),
    value,
  });
}

test("a text-only message keeps its text as a plain string", () => {
  const message = create(UserMessageSchema, { text: "hello" });
  assert.deepEqual(toUserMessage(message, NO_BLOBS, T0), {
    role: "user",
    content: "hello",
    timestamp: T0,
  });
});

test("long text sent as a blob is read from the pre-fetched blobs", () => {
  const text = new TextEncoder().encode("a very long prompt");
  const stored = blob(text);
  const message = create(UserMessageSchema, { textBlobId: stored.id });
  assert.equal(toUserMessage(message, toBlobStore([stored]), T0).content, "a very long prompt");
});

test("images: inline bytes, blob references, and a blob that is missing", () => {
  const stored = blob(PNG);
  const message = create(UserMessageSchema, {
    text: "what is this?",
    selectedContext: {
      selectedImages: [
        { dataOrBlobId: { case: "data", value: PNG }, mimeType: "image/png" },
        { dataOrBlobId: { case: "blobId", value: stored.id } },
        { dataOrBlobId: { case: "blobId", value: new Uint8Array(32) } },
      ],
    },
  });
  const result = toUserMessage(message, toBlobStore([stored]), T0);
  assert.ok(Array.isArray(result.content));
  const content = result.content as Exclude<typeof result.content, string>;
  assert.deepEqual(content[0], { type: "text", text: "what is this?" });
  assert.deepEqual(content[1], {
    type: "image",
    data: Buffer.from(PNG).toString("base64"),
    mimeType: "image/png",
  });
  assert.deepEqual(content[2], {
    type: "image",
    data: Buffer.from(PNG).toString("base64"),
    mimeType: "image/png",
  });
  assert.equal(content[3]?.type, "text");
  assert.match((content[3] as { text: string }).text, /not sent/);
});

test("a blob whose id is not the SHA-256 of its bytes is ignored", () => {
  const forged = create(PreFetchedBlobSchema, { id: new Uint8Array(32).fill(7), value: PNG });
  const message = create(UserMessageSchema, { textBlobId: forged.id });
  assert.equal(toUserMessage(message, toBlobStore([forged]), T0).content, "");
});

test("prepended user messages come first, as separate text blocks", () => {
  const message = create(UserMessageSchema, { text: "second" });
  const first = create(UserMessageSchema, { text: "first" });
  assert.deepEqual(toUserMessage(message, NO_BLOBS, T0, [first]).content, [
    { type: "text", text: "first" },
    { type: "text", text: "second" },
  ]);
});

test("image types are recognised by their magic bytes", () => {
  assert.equal(sniffImageType(PNG), "image/png");
  assert.equal(sniffImageType(new Uint8Array([0xff, 0xd8, 0xff, 0xe0])), "image/jpeg");
  assert.equal(sniffImageType(new TextEncoder().encode("GIF89a")), "image/gif");
  assert.equal(sniffImageType(new TextEncoder().encode("RIFF\0\0\0\0WEBP")), "image/webp");
  assert.equal(sniffImageType(new Uint8Array([1, 2, 3])), "application/octet-stream");
});
