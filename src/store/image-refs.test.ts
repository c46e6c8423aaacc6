import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import {
  fromStoredText,
  imageHash,
  MIN_RUN,
  referencedHashes,
  toStoredText,
} from "./image-refs.ts";

const base64Char = fc.constantFrom(
  ..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
);
const piece = fc.oneof(
  fc.string({ unit: "binary", maxLength: 30 }),
  fc.constantFrom("\u0001", "=", "==", "===", '"', "\\", "\ud83d"),
  fc
    .array(base64Char, { minLength: MIN_RUN - 2, maxLength: MIN_RUN + 2 })
    .map((chars) => chars.join("")),
);

test("any text is stored and restored exactly; long base64 runs leave the stored text", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(piece, { maxLength: 8 }), async (pieces) => {
      const text = pieces.join("");
      const stored = toStoredText(text);
      const images = new Map(stored.images);
      const restored = await fromStoredText(stored.text, async (hash) => {
        const data = images.get(hash);
        assert.ok(data !== undefined);
        assert.equal(imageHash(data), hash);
        return data;
      });
      assert.equal(restored, text);
      assert.deepEqual(new Set(referencedHashes(stored.text)), new Set(images.keys()));
      for (const data of images.values()) {
        assert.ok(data.replace(/=+$/, "").length >= MIN_RUN);
        assert.ok(!stored.text.includes(data));
      }
      if (stored.text === text) assert.equal(images.size, 0);
      // A text with a long run has it referenced: none is missed.
      assert.equal(images.size > 0, new RegExp(`[A-Za-z0-9+/]{${MIN_RUN}}`).test(text));
    }),
    { numRuns: 300, seed: 20261130 },
  );
});

test("a run shorter than the threshold stays inline; one at it is referenced with its padding", () => {
  const short = "A".repeat(MIN_RUN - 1);
  assert.equal(toStoredText(`"${short}"`).text, `"${short}"`);
  const long = `${"B".repeat(MIN_RUN)}==`;
  const stored = toStoredText(`{"data":"${long}="}`);
  assert.deepEqual([...stored.images.values()], [long]);
  assert.deepEqual(referencedHashes(stored.text), [imageHash(long)]);
});
