/**
 * The behaviour matrix in README.md is the list of per-provider tests: every cell must name a
 * test that exists, and every per-provider test must have its cell.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

const HERE = import.meta.dirname;

function matrix(): { columns: string[]; rows: Map<string, string[]> } {
  const readme = readFileSync(join(HERE, "README.md"), "utf8");
  const section = readme.split("## Behaviour matrix")[1]?.split("\n## ")[0] ?? "";
  const lines = section.split("\n").filter((line) => line.startsWith("| "));
  const cells = (line: string) =>
    line
      .slice(1, -1)
      .split(" | ")
      .map((cell) => cell.trim());
  const [header, , ...body] = lines;
  assert.ok(header !== undefined, "the matrix has a header");
  const columns = cells(header).slice(1);
  const rows = new Map<string, string[]>();
  for (const line of body) {
    const [name, ...row] = cells(line);
    assert.ok(name !== undefined && row.length === columns.length, `malformed row: ${line}`);
    rows.set(name, row);
  }
  return { columns, rows };
}

function testNames(file: string): string[] {
  const source = readFileSync(join(HERE, file), "utf8");
  return [...source.matchAll(/\btest\("([^"]+)"/g)].map((match) => match[1] as string);
}

test("every matrix cell names an existing test, and every provider test has its cell", () => {
  const { columns, rows } = matrix();
  assert.deepEqual(columns, [
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "openai-compatible",
  ]);
  assert.ok(rows.size >= 20);
  for (const [index, column] of columns.entries()) {
    const file = `llm.${column}.test.ts`;
    const names = testNames(file);
    for (const [name, row] of rows) {
      const cell = row[index] ?? "";
      if (cell.startsWith("n/a: ")) {
        assert.equal(names.includes(name), false, `${file} runs "${name}" but the matrix says n/a`);
        continue;
      }
      assert.equal(cell, `[✓](${file})`, `cell "${name}" × ${column}`);
      assert.ok(names.includes(name), `${file} has no test "${name}"`);
    }
    for (const name of names)
      assert.ok(rows.has(name), `${file} › "${name}" is missing from the matrix`);
  }
});
