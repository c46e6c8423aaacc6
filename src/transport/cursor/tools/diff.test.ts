import assert from "node:assert/strict";
import { test } from "node:test";
import { diffLines } from "./diff.ts";

test("a one-line change is one hunk with context", () => {
  const before = "a\nb\nc\nd\ne\nf\ng\n";
  const after = "a\nb\nc\nD\ne\nf\ng\n";
  assert.deepEqual(diffLines("x.ts", before, after), {
    diff: "--- x.ts\n+++ x.ts\n@@ -1,7 +1,7 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n",
    added: 1,
    removed: 1,
  });
});

test("insertions and deletions count lines", () => {
  assert.equal(diffLines("x", "a\nc\n", "a\nb\nc\n").added, 1);
  assert.equal(diffLines("x", "a\nb\nc\n", "a\nc\n").removed, 1);
  assert.equal(diffLines("x", "", "new\nfile\n").added, 2);
});

test("identical texts have no diff", () => {
  assert.deepEqual(diffLines("x", "same\n", "same\n"), { diff: "", added: 0, removed: 0 });
});
