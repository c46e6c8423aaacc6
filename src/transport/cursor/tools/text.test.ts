import assert from "node:assert/strict";
import { test } from "node:test";
import { plural, toLines, truncateEnd, truncateMiddle } from "./text.ts";

test("toLines: a final newline does not start another line; CRLF splits too", () => {
  assert.deepEqual(toLines(""), []);
  assert.deepEqual(toLines("a\nb\n"), ["a", "b"]);
  assert.deepEqual(toLines("a\r\nb"), ["a", "b"]);
  assert.deepEqual(toLines("\n"), [""]);
});

test("truncateMiddle keeps head and tail and states the cut", () => {
  assert.equal(truncateMiddle("short", 10), "short");
  const cut = truncateMiddle("a".repeat(50) + "b".repeat(50), 20);
  assert.ok(cut.startsWith("a".repeat(8)));
  assert.ok(cut.endsWith("b".repeat(12)));
  assert.match(cut, /\[… 80 characters omitted …\]/);
});

test("truncateEnd reports how much it cut", () => {
  assert.deepEqual(truncateEnd("abcdef", 4), { text: "abcd", cut: 2 });
  assert.deepEqual(truncateEnd("ab", 4), { text: "ab", cut: 0 });
});

test("plural", () => {
  assert.equal(plural(1, "file"), "1 file");
  assert.equal(plural(2, "file"), "2 files");
  assert.equal(plural(0, "match", "matches"), "0 matches");
});
