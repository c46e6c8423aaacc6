import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { MODES } from "./mode.ts";
import { toSystemPrompt } from "./prompt.ts";
import { toToolDefinitions } from "./tools/catalogue.ts";

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
    assert.ok(prompt.length < 6000, `${mode} prompt is compact`);
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
  agent: "998ff4ad480e43c4",
  ask: "8a1b05e60e51509a",
  plan: "10f9ee837f149bf8",
  debug: "17c3164a6cfe3a36",
};

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
