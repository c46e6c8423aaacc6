import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { inspect } from "node:util";
import { createSecret, redactSecret } from "./secret.ts";

describe("secret", () => {
  test("only reveal() shows the value", () => {
    const secret = createSecret("sk-abc-123456");
    assert.equal(secret.reveal(), "sk-abc-123456");
    for (const shown of [
      JSON.stringify({ secret }),
      String(secret),
      `${secret}`,
      inspect({ secret }),
    ]) {
      assert.equal(shown.includes("sk-abc"), false, shown);
      assert.ok(shown.includes("[redacted]"), shown);
    }
  });

  test("redactSecret scrubs every occurrence, and leaves very short values alone", () => {
    assert.equal(
      redactSecret("bad key sk-1234, sk-1234!", "sk-1234"),
      "bad key [redacted], [redacted]!",
    );
    assert.equal(redactSecret("abc", "ab"), "abc");
    assert.equal(redactSecret("abc", undefined), "abc");
  });
});
