import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { TITLE_LENGTH } from "./dashboard-types.ts";
import { toTitle } from "./summaries.ts";

/** What a title was before it was made from the start of the text only. */
const wholeTitle = (text: string) => text.replace(/\s+/g, " ").trim().slice(0, TITLE_LENGTH);

test("a title is the whitespace-collapsed start of the user's text, whatever its length", () => {
  // Whitespace of every kind, in runs long and short, around the lengths the title is cut from.
  const piece = fc.oneof(
    fc.constantFrom(" ", "\n", "\t", "\u00a0", "\u2028", "\ufeff", "x", "é", "😀"),
    fc.string({ minLength: 1, maxLength: 8 }),
    fc.integer({ min: 1, max: 2000 }).map((n) => " ".repeat(n)),
    fc.integer({ min: 1, max: 2000 }).map((n) => "w".repeat(n)),
  );
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 60 }), (pieces) => {
      const text = pieces.join("");
      assert.equal(toTitle(text), wholeTitle(text));
      assert.equal(
        toTitle([
          { type: "text", text: "context" },
          { type: "text", text },
        ]),
        wholeTitle(text),
      );
    }),
    { numRuns: 1000 },
  );
  for (const text of [
    `${" ".repeat(5000)}go`,
    `${"a ".repeat(100_000)}`,
    `${"ab\n\n".repeat(TITLE_LENGTH)}end`,
    "x".repeat(TITLE_LENGTH * 4 + 1),
    `${"x".repeat(TITLE_LENGTH * 4 - 1)} ${"y".repeat(10)}`,
    // The first TITLE_LENGTH * 4 characters collapse to just under, or exactly, TITLE_LENGTH.
    `${"x".repeat(TITLE_LENGTH - 2)}${" ".repeat(TITLE_LENGTH * 3 + 2)}yyyy`,
    `${"x".repeat(TITLE_LENGTH - 1)}${" ".repeat(TITLE_LENGTH * 3 + 5)}`,
  ]) {
    assert.equal(toTitle(text), wholeTitle(text));
  }
});
