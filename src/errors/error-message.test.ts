import assert from "node:assert/strict";
import { test } from "node:test";
import { errorMessage } from "./error-message.ts";

// These texts reach logs and users ("could not start the server: …", "the dashboard could not
// read the store: …", tool errors): they must stay exactly as they are.
test("an error's text is its message alone; any other thrown value is its string form", () => {
  class NamedError extends Error {
    override readonly name = "NamedError";
  }
  const withCode = Object.assign(new Error("connect failed", { cause: { code: "ECONNREFUSED" } }), {
    code: "E_OUTER",
  });
  const cases: [unknown, string][] = [
    [new Error("boom"), "boom"],
    [new TypeError("not a function"), "not a function"],
    [new NamedError("named"), "named"],
    [withCode, "connect failed"],
    [new Error(""), ""],
    ["plain text", "plain text"],
    [42, "42"],
    [null, "null"],
    [undefined, "undefined"],
    [{ message: "not an Error" }, "[object Object]"],
  ];
  for (const [thrown, text] of cases) assert.equal(errorMessage(thrown), text);
});
