/**
 * Pasted images through the real server, for every provider kind's wire format: a real PNG (sent
 * inline) and a real JPEG (sent as a pre-fetched blob, as the IDE does) reach a vision model as
 * that API's image blocks; the next turn's request carries them again with the same bytes (the
 * prefix cache holds); a model without image input gets a short text in their place and the user
 * a one-line notice; an image over the limit fails the turn with a clear error; a large image is
 * stored once by hash however many saved requests carry it.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { readFixture } from "../../llm/testing/fake-provider.ts";
import { makeJpeg, makeLargePng, makePng } from "../../llm/testing/images.ts";
import { readStoredRowsForTesting } from "../../store/create-store.ts";
import { imageHash } from "../../store/image-refs.ts";
import type { AgentRunRequest } from "../cursor/gen/agent/v1/run_request_pb.js";
import { PreFetchedBlobSchema } from "../cursor/gen/agent/v1/run_request_pb.js";
import { SelectedContextSchema } from "../cursor/gen/agent/v1/user_message_pb.js";
import { API_KEY, type Harness, startHarness } from "./test-harness.ts";

const PNG = makePng(4, 3, [200, 30, 90]);
const JPEG = makeJpeg();
const PNG_BASE64 = Buffer.from(PNG).toString("base64");
const JPEG_BASE64 = Buffer.from(JPEG).toString("base64");

type Kind = "openai-chat" | "openai-responses" | "anthropic" | "gemini" | "openai-compatible";

interface KindSpec {
  readonly kind: Kind;
  readonly model: string;
  readonly config: (url: string) => Record<string, unknown>;
  /** The messages of a request body, in order. */
  readonly messages: (body: Record<string, unknown>) => unknown[];
  /** The images of a request body, in order, as the wire format carries them. */
  readonly images: (body: Record<string, unknown>) => { mimeType: string; data: string }[];
}

const VISION = ["text", "image"];

const KINDS: readonly KindSpec[] = [
  {
    kind: "openai-chat",
    model: "gpt",
    config: (url) => ({ name: "gpt", api: "openai-chat", model: "gpt-4.1", baseUrl: `${url}/v1` }),
    messages: (body) => body.messages as unknown[],
    images: (body) => findAll(body, "image_url").map((part) => fromDataUrl(part.url)),
  },
  {
    kind: "openai-responses",
    model: "gpt-5",
    config: (url) => ({
      name: "gpt-5",
      api: "openai-responses",
      model: "gpt-5-mini",
      baseUrl: `${url}/v1`,
    }),
    messages: (body) => body.input as unknown[],
    images: (body) =>
      findBlocks(body, (block) => block.type === "input_image").map((block) =>
        fromDataUrl(block.image_url),
      ),
  },
  {
    kind: "anthropic",
    model: "claude",
    config: (url) => ({
      name: "claude",
      api: "anthropic",
      model: "claude-sonnet-4-5",
      baseUrl: url,
    }),
    messages: (body) => body.messages as unknown[],
    images: (body) =>
      findBlocks(body, (block) => block.type === "image").map((block) => {
        const source = block.source as Record<string, string>;
        assert.equal(source.type, "base64");
        return { mimeType: String(source.media_type), data: String(source.data) };
      }),
  },
  {
    kind: "gemini",
    model: "gemini",
    config: (url) => ({
      name: "gemini",
      api: "gemini",
      model: "gemini-3-flash-preview",
      baseUrl: `${url}/v1beta`,
    }),
    messages: (body) => body.contents as unknown[],
    images: (body) =>
      findAll(body, "inlineData").map((part) => ({
        mimeType: String(part.mimeType),
        data: String(part.data),
      })),
  },
  {
    kind: "openai-compatible",
    model: "qwen-vl",
    config: (url) => ({
      name: "qwen-vl",
      api: "openai-compatible",
      model: "qwen2.5-vl",
      baseUrl: url,
    }),
    messages: (body) => body.messages as unknown[],
    images: (body) => findAll(body, "image_url").map((part) => fromDataUrl(part.url)),
  },
];

/** Every value under `key`, anywhere in the tree. */
function findAll(tree: unknown, key: string): Record<string, unknown>[] {
  return findBlocks(tree, (block) => key in block).map(
    (block) => block[key] as Record<string, unknown>,
  );
}

function findBlocks(
  tree: unknown,
  match: (block: Record<string, unknown>) => boolean,
): Record<string, unknown>[] {
  if (Array.isArray(tree)) return tree.flatMap((item) => findBlocks(item, match));
  if (typeof tree !== "object" || tree === null) return [];
  const record = tree as Record<string, unknown>;
  const own = match(record) ? [record] : [];
  return [...own, ...Object.values(record).flatMap((value) => findBlocks(value, match))];
}

function fromDataUrl(url: unknown): { mimeType: string; data: string } {
  const match = /^data:([^;]+);base64,(.*)$/s.exec(String(url));
  assert.ok(match !== null, `a data URL: ${String(url).slice(0, 40)}`);
  return { mimeType: match[1] as string, data: match[2] as string };
}

/** The request without Anthropic's cache markers, which sit on the last message only. */
function withoutCacheMarkers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutCacheMarkers);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== "cache_control")
      .map(([key, item]) => [key, withoutCacheMarkers(item)]),
  );
}

/** Attaches the PNG inline and the JPEG as a pre-fetched blob (by its SHA-256 id). */
function attachImages(request: AgentRunRequest, images: readonly Uint8Array[] = [PNG, JPEG]) {
  const action = request.action?.action;
  if (action?.case !== "userMessageAction" || action.value.userMessage === undefined) {
    throw new Error("not a user message");
  }
  const message = action.value.userMessage;
  message.selectedContext ??= create(SelectedContextSchema);
  for (const [index, bytes] of images.entries()) {
    if (index % 2 === 0) {
      message.selectedContext.selectedImages.push({
        $typeName: "agent.v1.SelectedImage",
        dataOrBlobId: { case: "data", value: bytes },
        uuid: `img-${index}`,
        path: `/tmp/screenshot-${index}.png`,
        mimeType: "image/png",
      } as never);
    } else {
      const id = new Uint8Array(createHash("sha256").update(bytes).digest());
      request.preFetchedBlobs.push(create(PreFetchedBlobSchema, { id, value: bytes }));
      message.selectedContext.selectedImages.push({
        $typeName: "agent.v1.SelectedImage",
        dataOrBlobId: { case: "blobId", value: id },
        uuid: `img-${index}`,
        path: `/tmp/photo-${index}.jpg`,
        mimeType: "image/jpeg",
      } as never);
    }
  }
}

describe("pasted images end to end", () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({
      models: (url) => [
        ...KINDS.map((spec) => ({ ...spec.config(url), apiKey: API_KEY, input: VISION })),
        {
          name: "text-only",
          api: "openai-compatible",
          model: "small-text-model",
          baseUrl: url,
          apiKey: API_KEY,
          input: ["text"],
        },
      ],
    });
  });
  after(() => harness.close());

  for (const spec of KINDS) {
    test(`${spec.kind}: the images reach the model as image blocks, with the same bytes in the next request`, async () => {
      const conversationId = `0000000${KINDS.indexOf(spec)}-1111-4222-8333-444455556666`;
      const client = harness.client();
      const first = harness.provider.requests.length;
      harness.provider.reply(
        { type: "sse", body: readFixture(spec.kind, "text") },
        { type: "sse", body: readFixture(spec.kind, "text") },
      );
      const one = await client.startTurn({
        conversationId,
        text: "What is in these pictures?",
        modelId: spec.model,
        edit: (request) => attachImages(request),
      }).done;
      assert.equal(one.error, undefined);
      assert.deepEqual(one.view.notices, []);
      const two = await client.startTurn({
        conversationId,
        text: "And the colours?",
        modelId: spec.model,
      }).done;
      assert.equal(two.error, undefined);

      const [a, b] = harness.provider.requests
        .slice(first)
        .map((request) => JSON.parse(request.body) as Record<string, unknown>);
      assert.ok(a !== undefined && b !== undefined);
      assert.deepEqual(spec.images(a), [
        { mimeType: "image/png", data: PNG_BASE64 },
        { mimeType: "image/jpeg", data: JPEG_BASE64 },
      ]);
      assert.deepEqual(spec.images(b), spec.images(a));
      // The first request's messages are the start of the second's, images included.
      const before = withoutCacheMarkers(spec.messages(a)) as unknown[];
      const later = withoutCacheMarkers(spec.messages(b)) as unknown[];
      assert.equal(
        JSON.stringify(later.slice(0, before.length)),
        JSON.stringify(before),
        "request 1's messages are a prefix of request 2's",
      );
    });
  }

  test("an image is stored once (by hash) however many requests carry it, and every saved request reads back as sent", async () => {
    const large = makeLargePng(96 * 1024);
    const largeBase64 = Buffer.from(large).toString("base64");
    for (const spec of KINDS) {
      const conversationId = `5${KINDS.indexOf(spec)}5b5b5b-1111-4222-8333-444455556666`;
      const client = harness.client();
      const first = harness.provider.requests.length;
      harness.provider.reply(
        ...Array.from({ length: 3 }, () => ({
          type: "sse" as const,
          body: readFixture(spec.kind, "text"),
        })),
      );
      for (const [index, text] of ["Look.", "Again?", "Once more."].entries()) {
        const turn = await client.startTurn({
          conversationId,
          text,
          modelId: spec.model,
          edit: index === 0 ? (request) => attachImages(request, [large]) : undefined,
        }).done;
        assert.equal(turn.error, undefined, `${spec.kind} turn ${index}`);
      }
      const sent = harness.provider.requests.slice(first).map((request) => request.body);
      assert.equal(sent.length, 3);
      for (const body of sent) assert.ok(body.includes(largeBase64), `${spec.kind}: image sent`);

      const stored = await readStoredRowsForTesting(harness.store, async (tables) => {
        const calls = await tables.listCallsOf(conversationId);
        return {
          calls: calls.map((call) => call.callID),
          rows: [
            ...(await tables.readMessages(conversationId)).map((row) => row.json),
            ...(await Promise.all(
              calls.map(async (call) => (await tables.readLLMCall(call.callID))?.request ?? ""),
            )),
          ],
          image: await tables.readImage(imageHash(largeBase64)),
        };
      });
      assert.equal(stored.calls.length, 3, spec.kind);
      assert.equal(stored.image, largeBase64, `${spec.kind}: the image is stored under its hash`);
      for (const row of stored.rows) {
        assert.ok(!row.includes(largeBase64.slice(0, 256)), `${spec.kind}: a row holds the image`);
      }
      const restored = await Promise.all(
        stored.calls.map(async (callID) => (await harness.store.getLLMCall(callID))?.request),
      );
      assert.deepEqual(restored, sent, `${spec.kind}: saved requests are the bytes sent`);
    }
  });

  test("a model without image input gets a note in their place; the user a one-line notice", async () => {
    const client = harness.client();
    const first = harness.provider.requests.length;
    harness.provider.reply({ type: "sse", body: readFixture("openai-compatible", "text") });
    const turn = await client.startTurn({
      conversationId: "7a7a7a7a-1111-4222-8333-444455556666",
      text: "What is in these pictures?",
      modelId: "text-only",
      edit: (request) => attachImages(request),
    }).done;
    assert.equal(turn.error, undefined);
    assert.deepEqual(turn.view.notices, [
      "Note: text-only does not accept images, so the 2 attached images were not sent to it.\n\n",
    ]);
    assert.ok(turn.view.text.length > 0, "the model still answered");
    const body = harness.provider.requests[first]?.body ?? "";
    assert.ok(!body.includes(PNG_BASE64) && !body.includes(JPEG_BASE64), "no image bytes sent");
    assert.ok(!body.includes("image_url"));
    assert.match(body, /What is in these pictures\?/);
    assert.match(body, /image omitted/);
  });

  test("an image over the size limit fails the turn with a clear error, and nothing is sent", async () => {
    const client = harness.client();
    const first = harness.provider.requests.length;
    const turn = await client.startTurn({
      conversationId: "7b7b7b7b-1111-4222-8333-444455556666",
      text: "Too big?",
      modelId: "claude",
      edit: (request) => attachImages(request, [makeLargePng(6 * 1024 * 1024)]),
    }).done;
    assert.ok(turn.error !== undefined);
    assert.match(
      turn.error.message,
      /image 1 \(screenshot-0\.png\) is 6\.0 MiB; images can be at most 5\.0 MiB/,
    );
    assert.equal(harness.provider.requests.length, first);
  });
});
