/**
 * The system prompt and the tool schemas of each mode: byte-stable (the same bytes on every call
 * and every turn), pinned by digest and by golden files a reviewer can read
 * (`fixtures/prompt/<mode>.txt`, `fixtures/prompt/tools-<mode>.json`). Regenerate the golden files
 * deliberately with `UPDATE_GOLDEN=1 node --test src/transport/cursor/prompt.test.ts`.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { test } from "node:test";
import { MODES } from "./mode.ts";
import { PROMPT_SECTIONS, toSystemPrompt } from "./prompt/index.ts";
import { toToolDefinitions } from "./tools/catalogue.ts";
import { NO_WEB } from "./tools/server-work.ts";

const GOLDEN = new URL("./fixtures/prompt/", import.meta.url);
const UPDATE = process.env.UPDATE_GOLDEN === "1";

/** Compares `actual` with the golden file `name`, or writes it when regenerating. */
function assertGolden(name: string, actual: string): void {
  const url = new URL(name, GOLDEN);
  if (UPDATE) writeFileSync(url, actual);
  assert.equal(actual, readFileSync(url, "utf8"), `${name} differs from its golden file`);
}

test("the prompt of a mode is byte-identical on every call", () => {
  for (const mode of MODES) assert.equal(toSystemPrompt(mode), toSystemPrompt(mode));
});

test("each mode has its own prompt", () => {
  const prompts = new Set(MODES.map(toSystemPrompt));
  assert.equal(prompts.size, MODES.length);
});

test("prompts carry no per-turn data and stay compact", () => {
  for (const mode of MODES) {
    const prompt = toSystemPrompt(mode);
    assert.doesNotMatch(prompt, /\d{4}-\d{2}-\d{2}/);
    // About 1,500 tokens: thorough, and small next to any context window.
    assert.ok(prompt.length < 8000, `${mode} prompt is compact`);
  }
});

test("the prompt text is pinned (a change must be deliberate: it resets every provider cache)", () => {
  const digests = Object.fromEntries(
    MODES.map((mode) => [
      mode,
      createHash("sha256").update(toSystemPrompt(mode)).digest("hex").slice(0, 16),
    ]),
  );
  assert.deepEqual(digests, PINNED);
});

/** First 16 hex digits of each prompt's SHA-256; update together with a deliberate prompt change. */
const PINNED: Record<string, string> = {
  agent: "676a326a9b4bfc33",
  ask: "46c06a6ba4e82ee0",
  plan: "c02d0f1c4f23675e",
  debug: "f31a0c3757ac86f2",
};

test("golden: each mode's prompt and tool schemas, as sent", () => {
  for (const mode of MODES) {
    assertGolden(`${mode}.txt`, `${toSystemPrompt(mode)}\n`);
    assertGolden(
      `tools-${mode}.json`,
      `${JSON.stringify(toToolDefinitions(mode, [], NO_WEB), null, 2)}\n`,
    );
  }
});

test("the tool schemas of a mode are byte-identical on every call", () => {
  for (const mode of MODES) {
    assert.equal(
      JSON.stringify(toToolDefinitions(mode, [])),
      JSON.stringify(toToolDefinitions(mode, [])),
    );
  }
});

test("every section says why it is there, and every section file is used", () => {
  const used = new Set(
    Object.values(PROMPT_SECTIONS).flatMap((sections) => sections.map((s) => s.id)),
  );
  for (const sections of Object.values(PROMPT_SECTIONS)) {
    for (const section of sections) {
      assert.ok(section.why.length > 20, `${section.id} explains why it is there`);
      assert.ok(section.text.trim() === section.text && section.text.length > 0, section.id);
    }
  }
  const files = readdirSync(new URL("./prompt/", import.meta.url))
    .filter((file) => file.endsWith(".ts") && !["index.ts", "types.ts"].includes(file))
    .map((file) => file.replace(/\.ts$/, ""));
  assert.deepEqual([...used].sort(), files.sort());
});

test("modes that cannot change the workspace get no sections on changing it", () => {
  for (const mode of ["ask", "plan"] as const) {
    const ids = PROMPT_SECTIONS[mode].map((section) => section.id);
    for (const id of ["changing-code", "git", "long-running"]) assert.ok(!ids.includes(id), mode);
  }
});

test("each prompt names only tools its mode offers", () => {
  const all = [
    "read_file",
    "edit_file",
    "write_file",
    "delete_file",
    "list_dir",
    "grep",
    "glob",
    "shell",
    "write_shell_stdin",
    "read_lints",
    "todo_write",
    "ask_question",
    "create_plan",
    "switch_mode",
  ];
  for (const mode of MODES) {
    const offered = new Set(toToolDefinitions(mode, []).map((tool) => tool.name));
    const section = toSystemPrompt(mode).split("# Mode:")[1] ?? "";
    for (const name of all) {
      if (section.includes(name))
        assert.ok(offered.has(name), `${mode} mode mentions ${name} but does not offer it`);
    }
  }
});
