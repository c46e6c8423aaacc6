import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { makeJpeg, makeLargePng, makePng } from "../../llm/testing/images.ts";
import type { BlobStore } from "./blobs.ts";
import { toBlobStore } from "./blobs.ts";
import { PreFetchedBlobSchema } from "./gen/agent/v1/run_request_pb.js";
import type { UserMessage as CursorUserMessage } from "./gen/agent/v1/user_message_pb.js";
import { UserMessageSchema } from "./gen/agent/v1/user_message_pb.js";
import { T0 } from "./testing.ts";
import { toUserMessage as decode, IMAGE_LIMITS, sniffImageType } from "./user-message.ts";

/** The converted message; fails the test when the message is refused. */
function toUserMessage(
  message: CursorUserMessage,
  blobs: BlobStore,
  at: number,
  prepend: readonly CursorUserMessage[] = [],
) {
  const result = decode(message, blobs, at, prepend);
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
}

function refusal(message: CursorUserMessage): string {
  const result = decode(message, NO_BLOBS, T0);
  assert.equal(result.ok, false);
  return result.ok ? "" : result.error.message;
}

const PNG = makePng(2, 2, [0, 128, 255]);
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

test("an image's type comes from its bytes when they show one, else from the client", () => {
  const jpeg = makeJpeg();
  const message = create(UserMessageSchema, {
    text: "two",
    selectedContext: {
      selectedImages: [
        // A client that labels a JPEG screenshot as PNG: the bytes win.
        { dataOrBlobId: { case: "data", value: jpeg }, mimeType: "image/png" },
        { dataOrBlobId: { case: "data", value: PNG }, mimeType: "" },
      ],
    },
  });
  const content = toUserMessage(message, NO_BLOBS, T0).content;
  assert.ok(Array.isArray(content));
  assert.deepEqual(
    content.map((block) => (block.type === "image" ? block.mimeType : "text")),
    ["text", "image/jpeg", "image/png"],
  );
});

test("an image over the size limit is refused with its name and the limit", () => {
  const big = makeLargePng(IMAGE_LIMITS.maxBytes * 1.2);
  const message = create(UserMessageSchema, {
    text: "look",
    selectedContext: {
      selectedImages: [
        { dataOrBlobId: { case: "data", value: PNG } },
        { dataOrBlobId: { case: "data", value: big }, path: "/home/me/secret-project/shot.png" },
      ],
    },
  });
  const problem = refusal(message);
  assert.match(problem, /^image 2 \(shot\.png\) is 6\.0 MiB; images can be at most 5\.0 MiB$/);
  assert.doesNotMatch(problem, /secret-project/);
});

test("too many images, or a file that is not an image, is refused", () => {
  const many = create(UserMessageSchema, {
    text: "all of them",
    selectedContext: {
      selectedImages: Array.from({ length: IMAGE_LIMITS.maxImages + 1 }, () => ({
        dataOrBlobId: { case: "data" as const, value: PNG },
      })),
    },
  });
  assert.match(refusal(many), /21 images; at most 20/);
  const pdf = create(UserMessageSchema, {
    text: "a pdf",
    selectedContext: {
      selectedImages: [
        {
          dataOrBlobId: { case: "data", value: new TextEncoder().encode("%PDF-1.7") },
          mimeType: "application/pdf",
        },
      ],
    },
  });
  assert.match(refusal(pdf), /^image 1 is not a PNG, JPEG, GIF or WebP image/);
});
