import assert from "node:assert/strict";
import { test } from "node:test";
import {
  appendCapped,
  CAPPED_HEAD,
  CAPPED_TAIL,
  EMPTY_CAPPED_TEXT,
  omittedOf,
  renderCapped,
} from "./capped-text.ts";

test("short output is kept whole", () => {
  const text = ["a", "b", "c"].reduce(appendCapped, EMPTY_CAPPED_TEXT);
  assert.equal(renderCapped(text), "abc");
  assert.equal(omittedOf(text), 0);
});

test("long output keeps its head and tail, states the cut, and stays bounded", () => {
  let text = EMPTY_CAPPED_TEXT;
  for (let i = 0; i < 1000; i += 1)
    text = appendCapped(text, `${String(i).padStart(4, "0")}${"x".repeat(196)}`);
  assert.equal(text.total, 200_000);
  assert.equal(text.head.length, CAPPED_HEAD);
  assert.equal(text.tail.length, CAPPED_TAIL);
  assert.ok(text.head.startsWith("0000"));
  assert.ok(text.tail.includes("0999"));
  assert.match(renderCapped(text), /\[… 140000 characters omitted …\]/);
});

test("head and tail are contiguous until something is dropped", () => {
  const chunk = "y".repeat(CAPPED_HEAD + 10);
  const text = appendCapped(EMPTY_CAPPED_TEXT, chunk);
  assert.equal(renderCapped(text), chunk);
});
