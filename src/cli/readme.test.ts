/** The user's guide (README.md) stays true: its examples load, its tables match the code. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { ENV_SHORTCUTS, toConfig } from "../config/index.ts";
import { COMMANDS } from "./run-cli.ts";

const README = readFileSync(path.resolve(import.meta.dirname, "..", "..", "README.md"), "utf8");

test("every YAML example in the README is a valid configuration file", () => {
  const blocks = [...README.matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => match[1] ?? "");
  assert.ok(blocks.length >= 6, `only ${blocks.length} YAML examples found`);
  for (const block of blocks) {
    const config = toConfig(block, {
      location: { path: "/home/me/.config/cursor-byok/config.yaml", namedBy: undefined },
      cwd: "/work",
      env: { CURSOR_BYOK_TOKEN: "a-long-random-token-for-tests-0123456789" },
      platform: "linux",
      homeDir: "/home/me",
    });
    for (const { config: model } of config.models) {
      assert.ok(model.name.length > 0);
    }
  }
});

test("the README's shortcut table lists exactly the shortcut models", () => {
  for (const shortcut of ENV_SHORTCUTS) {
    const row = new RegExp(`^\\| \`${shortcut.variable}\` +\\| (.*?) +\\|$`, "m").exec(README);
    assert.ok(row?.[1] !== undefined, `no row for ${shortcut.variable}`);
    const listed = [...row[1].matchAll(/`([^`]+)`/g)].map((match) => match[1]);
    assert.deepEqual(
      listed,
      shortcut.models.map((model) => model.name),
      shortcut.variable,
    );
  }
});

test("the README's command table lists every command", () => {
  for (const command of COMMANDS) {
    const row = new RegExp(`^\\| [^|]*\`cursor-byok ${command.name}[\` ]`, "m");
    assert.ok(row.test(README), `no row for ${command.name}`);
  }
});
