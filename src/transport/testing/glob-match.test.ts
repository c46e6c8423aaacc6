import assert from "node:assert/strict";
import { test } from "node:test";
import { createGlobMatcher } from "./glob-match.ts";

const cases: ReadonlyArray<readonly [string, string, boolean]> = [
  // No slash: the file name, in any directory.
  ["*.ts", "a.ts", true],
  ["*.ts", "src/deep/a.ts", true],
  ["*.ts", "a.tsx", false],
  ["*.{ts,tsx}", "src/a.tsx", true],
  ["a?.md", "docs/ab.md", true],
  ["a?.md", "docs/abc.md", false],
  ["[ab].txt", "b.txt", true],
  ["[!ab].txt", "b.txt", false],
  ["[!ab].txt", "c.txt", true],
  // With a slash: the path from the search root.
  ["src/*.ts", "src/a.ts", true],
  ["src/*.ts", "src/x/a.ts", false],
  ["src/*.ts", "lib/src/a.ts", false],
  ["src/**/config.*", "src/config.json", true],
  ["src/**/config.*", "src/a/b/config.yaml", true],
  ["**/*.test.ts", "a.test.ts", true],
  ["**/*.test.ts", "x/y/a.test.ts", true],
  ["**/*.test.ts", "x/y/a.ts", false],
  ["./src/*.ts", "src/a.ts", true],
  ["a.b", "axb", false],
  // Negation.
  ["!*.md", "a.md", false],
  ["!*.md", "a.ts", true],
];

test("glob patterns match as ripgrep's --glob does", () => {
  for (const [pattern, path, expected] of cases) {
    assert.equal(createGlobMatcher(pattern).matches(path), expected, `${pattern} vs ${path}`);
  }
});
