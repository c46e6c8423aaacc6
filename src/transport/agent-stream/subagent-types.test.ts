/**
 * Which definition a `task` call's `subagent_type` names (subagents.ts `findDefinition`, README
 * "Subagents"): loose spellings of the built-ins, and a custom subagent named like a built-in.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { EXPLORE, GENERAL } from "../../loop/index.ts";
import type { CustomSubagentDefinition } from "../cursor/index.ts";
import { findDefinition } from "./subagents.ts";

const custom = (name: string, readOnly = false): CustomSubagentDefinition => ({
  name,
  description: name,
  prompt: `${name} instructions`,
  tools: [],
  model: "",
  readOnly,
});

test("the built-ins under the spellings models use", () => {
  for (const name of ["general", "generalPurpose", "general-purpose", "General_Purpose", ""]) {
    assert.equal(findDefinition(name, []), GENERAL, name);
  }
  for (const name of ["explore", "Explore", " EXPLORE "]) {
    assert.equal(findDefinition(name, []), EXPLORE, name);
  }
  assert.equal(findDefinition("nobody", []), null);
});

test("custom subagents: exact name, then a loose match; one named like a built-in wins", () => {
  assert.equal(findDefinition("code-reviewer", [custom("code-reviewer")])?.name, "code-reviewer");
  assert.equal(findDefinition("Code_Reviewer", [custom("code-reviewer")])?.name, "code-reviewer");
  const own = findDefinition("explore", [custom("explore")]);
  assert.equal(own?.instructions, "explore instructions");
  assert.equal(own?.readOnly, false);
  // Only the exact name overrides a built-in; a loose spelling still means the built-in.
  assert.equal(findDefinition("Explore", [custom("explore")]), EXPLORE);
});
