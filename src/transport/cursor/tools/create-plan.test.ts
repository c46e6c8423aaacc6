import assert from "node:assert/strict";
import { test } from "node:test";
import { queryReply, resultText, runTool, turnState } from "../testing.ts";

type PlanResult = Parameters<typeof queryReply>[1] & { case: "createPlanRequestResponse" };

const ARGS = {
  name: "Fix add",
  overview: "Make add() add.",
  plan: "1. Edit src/math.ts",
  todos: ["Edit", "Test"],
};

function plan(result: PlanResult["value"]["result"]) {
  return runTool(
    "create_plan",
    ARGS,
    [(state) => queryReply(state, { case: "createPlanRequestResponse", value: { result } })],
    turnState({ mode: "plan" }),
  );
}

test("create_plan is offered in plan mode only and goes out as an interaction query", () => {
  const run = plan({
    planUri: "file:///w/.cursor/plans/fix-add.md",
    result: { case: "success", value: {} },
  });
  const query = run.requests[0];
  assert.ok(query?.message.case === "interactionQuery");
  const branch = query.message.value.query;
  assert.ok(branch.case === "createPlanRequestQuery");
  assert.equal(branch.value.args?.name, "Fix add");
  assert.deepEqual(
    branch.value.args?.todos.map((todo) => todo.content),
    ["Edit", "Test"],
  );
  assert.match(
    resultText(run.result),
    /shown to the user \(file:\/\/\/w\/.cursor\/plans\/fix-add.md\)/,
  );
  const agentMode = runTool("create_plan", ARGS, []);
  assert.match(resultText(agentMode.result), /no tool named "create_plan" in this mode/);
});

test("a failed plan is an isError result", () => {
  const run = plan({ result: { case: "error", value: { error: "no workspace" } } });
  assert.equal(run.result.isError, true);
  assert.match(resultText(run.result), /no workspace/);
});
