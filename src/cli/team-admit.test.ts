/**
 * The team's admission (team-users.ts `admit`) as the gate keeps it for a running call: its
 * `settle` and `hold` must not keep the call they admitted (its request, the caller's hooks), or
 * every running call of a team server holds its whole request until it ends (issue #19).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { LLMCall } from "../llm/index.ts";
import type { Users } from "../store/users.ts";
import { createTeam } from "./team-users.ts";

setFlagsFromString("--expose-gc");
/** A full collection, from a fresh context where `--expose-gc` took effect. */
const collect = runInNewContext("gc") as () => void;

/** The users a call is admitted by: one owner, no own keys, room in the budget. */
const users = {
  ownerOf: async () => "user-1",
  keysOf: async () => [],
  reserve: async () => ({ type: "ok" }),
  isActive: async () => true,
  hold: async () => {},
  settle: async () => {},
} as unknown as Users;

function call(): LLMCall {
  return {
    callID: "call-1",
    conversationID: "conv-1",
    model: "main",
    request: {
      systemPrompt: "s".repeat(10_000),
      tools: [],
      messages: [{ role: "user", content: "hi", timestamp: 1 }],
    },
  } as LLMCall;
}

test("an admission's settle and hold keep nothing of the call they admitted", async () => {
  const team = createTeam(users, { env: {} });
  for (const replay of [false, true]) {
    let admitted: LLMCall | undefined = call();
    const kept = new WeakRef(admitted);
    const admission = await team.admit({
      call: admitted,
      model: undefined,
      replay,
      reservation: { tokens: 10, cost: 0 },
    });
    admitted = undefined;
    assert.equal(admission.type, "admitted");
    assert.ok(admission.type === "admitted" && admission.settle !== undefined);
    // WeakRef targets live to the end of the job that created or read them.
    await new Promise((resolve) => setImmediate(resolve));
    collect();
    assert.equal(kept.deref(), undefined, `replay ${replay}: the call is let go`);
    await admission.settle?.({ tokens: 1, cost: 0 });
    await admission.hold?.();
  }
});
