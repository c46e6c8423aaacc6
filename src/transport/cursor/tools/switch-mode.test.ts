import assert from "node:assert/strict";
import { test } from "node:test";
import { AgentMode } from "../gen/agent/v1/common_pb.js";
import { queryReply, resultText, runTool, turnState } from "../testing.ts";

const askState = () => turnState({ mode: "ask", agentMode: AgentMode.ASK });

function completedTool(run: ReturnType<typeof runTool>) {
  const completed = run.messages.find(
    (message) =>
      message.message.case === "interactionUpdate" &&
      message.message.value.message.case === "toolCallCompleted",
  );
  assert.ok(completed?.message.case === "interactionUpdate");
  assert.ok(completed.message.value.message.case === "toolCallCompleted");
  const tool = completed.message.value.message.value.toolCall?.tool;
  assert.ok(tool?.case === "switchModeToolCall");
  return tool.value;
}

test("the request goes to the client with the picker's mode id; approval switches the turn", () => {
  const run = runTool(
    "switch_mode",
    { target_mode: "agent", explanation: "The fix needs an edit." },
    [
      (state) =>
        queryReply(state, {
          case: "switchModeRequestResponse",
          value: { result: { case: "approved", value: {} } },
        }),
    ],
    askState(),
  );
  const query = run.requests[0];
  assert.ok(query?.message.case === "interactionQuery");
  const branch = query.message.value.query;
  assert.ok(branch.case === "switchModeRequestQuery");
  assert.deepEqual(
    [
      branch.value.args?.targetModeId,
      branch.value.args?.explanation,
      branch.value.args?.toolCallId,
    ],
    ["agent", "The fix needs an edit.", "toolu_01"],
  );
  assert.equal(run.state.mode, "agent");
  assert.equal(run.state.agentMode, AgentMode.AGENT);
  assert.equal(run.result.isError, false);
  assert.match(resultText(run.result), /now in agent mode; you may now edit files/);
  const ui = completedTool(run);
  assert.ok(ui.result?.result.case === "success");
  assert.deepEqual(
    [ui.result.result.value.fromModeId, ui.result.result.value.toModeId],
    ["chat", "agent"],
  );
});

test("a declined switch keeps the mode and tells the model why", () => {
  const run = runTool(
    "switch_mode",
    { target_mode: "agent" },
    [
      (state) =>
        queryReply(state, {
          case: "switchModeRequestResponse",
          value: { result: { case: "rejected", value: { reason: "just explain it" } } },
        }),
    ],
    askState(),
  );
  assert.equal(run.state.mode, "ask");
  assert.equal(
    resultText(run.result),
    "The user declined the switch to agent mode: just explain it. Stay in ask mode.",
  );
  assert.equal(completedTool(run).result?.result.case, "rejected");
});

test("asking for the current mode needs no client round trip", () => {
  const run = runTool("switch_mode", { target_mode: "ask" }, [], askState());
  assert.equal(run.requests.length, 0);
  assert.equal(resultText(run.result), "Already in ask mode.");
  assert.equal(run.state.mode, "ask");
});

test("an unknown mode is an argument error; a wrong reply is an error result", () => {
  const bad = runTool("switch_mode", { target_mode: "turbo" }, [], askState());
  assert.equal(bad.result.isError, true);
  assert.match(resultText(bad.result), /target_mode/);
  const wrong = runTool(
    "switch_mode",
    { target_mode: "plan" },
    [
      (state) =>
        queryReply(state, {
          case: "createPlanRequestResponse",
          value: { result: { result: { case: "success", value: {} } } },
        }),
    ],
    askState(),
  );
  assert.equal(wrong.result.isError, true);
  assert.equal(wrong.state.mode, "ask");
});
