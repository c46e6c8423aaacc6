/**
 * The behaviour matrix in README.md is the list of per-provider tests (testing/behaviours.ts,
 * `BEHAVIOURS`): rows are exactly the behaviours, columns exactly the providers, and every cell
 * either names the provider's test file or says why the behaviour does not apply.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { BEHAVIOURS, toNotApplicable } from "./testing/behaviours.ts";
import { PROVIDERS } from "./testing/provider-specs.ts";

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

test("every matrix cell names an existing test, and every provider test has its cell", () => {
  const { columns, rows } = matrix();
  assert.deepEqual(
    columns,
    PROVIDERS.map((spec) => spec.id),
  );
  assert.deepEqual(
    [...rows.keys()],
    BEHAVIOURS.map((behaviour) => behaviour.name),
  );
  for (const [index, spec] of PROVIDERS.entries()) {
    const file = `llm.${spec.id}.test.ts`;
    assert.ok(existsSync(join(HERE, file)), `${file} exists`);
    for (const behaviour of BEHAVIOURS) {
      const cell = rows.get(behaviour.name)?.[index] ?? "";
      const notApplicable = toNotApplicable(spec, behaviour);
      if (notApplicable !== null) {
        assert.equal(cell, `n/a: ${notApplicable}`, `cell "${behaviour.name}" × ${spec.id}`);
      } else {
        assert.equal(cell, `[✓](${file})`, `cell "${behaviour.name}" × ${spec.id}`);
      }
    }
  }
});
