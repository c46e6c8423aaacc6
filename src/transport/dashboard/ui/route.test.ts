import assert from "node:assert/strict";
import { test } from "node:test";
import { parseRoute } from "./route.js";

test("every address parses; a malformed conversation id is the invalid page, not an exception", () => {
  assert.deepEqual(parseRoute("#/c/%E0"), { page: "invalid" });
  assert.deepEqual(parseRoute("#/c/a%2Fb%20c"), { page: "conversation", id: "a/b c" });
  assert.deepEqual(parseRoute("#/usage"), { page: "usage" });
  assert.deepEqual(parseRoute("#/setup"), { page: "setup" });
  const list = parseRoute("#/conversations?search=%E0&cursor=1.YQ");
  assert.equal(list.page, "conversations");
  assert.equal(list.page === "conversations" && list.params.get("cursor"), "1.YQ");
  assert.equal(parseRoute("").page, "conversations");
});
