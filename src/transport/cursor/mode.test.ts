import assert from "node:assert/strict";
import { test } from "node:test";
import { AgentMode } from "./gen/agent/v1/common_pb.js";
import { fromAgentMode, MODES, toAgentMode } from "./mode.ts";

test("each mode round-trips through the wire enum", () => {
  for (const mode of MODES) assert.equal(fromAgentMode(toAgentMode(mode)), mode);
});

test("wire enum values are Cursor's numbers", () => {
  assert.deepEqual(MODES.map(toAgentMode), [1, 2, 3, 4]);
});

test("modes the server does not distinguish run as agent", () => {
  for (const mode of [
    AgentMode.UNSPECIFIED,
    AgentMode.TRIAGE,
    AgentMode.PROJECT,
    AgentMode.MULTITASK,
    AgentMode.CUSTOM,
    99 as AgentMode,
    undefined,
  ]) {
    assert.equal(fromAgentMode(mode), "agent");
  }
});
