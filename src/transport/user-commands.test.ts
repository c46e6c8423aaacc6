import assert from "node:assert/strict";
import { test } from "node:test";
import { createUserCommands } from "./user-commands.ts";

test("recorded commands are handed to the conversation's next turn once, in order", () => {
  const commands = createUserCommands();
  commands.record("c1", { command: "npm test", execID: "e1" });
  commands.record("c2", { command: "ls", execID: "e2" });
  commands.record("c1", { command: "git status", execID: "e3" });
  const taken = commands.take("c1");
  assert.deepEqual(
    taken.map((item) => item.key),
    ["user-command:e1", "user-command:e3"],
  );
  assert.match(taken[0]?.text ?? "", /ran this command in their terminal[\s\S]*\nnpm test\n/);
  assert.deepEqual(commands.take("c1"), []);
  assert.equal(commands.take("c2").length, 1);
});

test("memory is bounded: per conversation and in conversations", () => {
  const commands = createUserCommands();
  for (let i = 0; i < 30; i += 1) commands.record("c", { command: `echo ${i}`, execID: `e${i}` });
  const kept = commands.take("c");
  assert.equal(kept.length, 20);
  assert.equal(kept[0]?.key, "user-command:e10");
  for (let i = 0; i < 1_001; i += 1) commands.record(`c${i}`, { command: "x", execID: "e" });
  assert.deepEqual(commands.take("c0"), []);
  assert.equal(commands.take("c1000").length, 1);
});
