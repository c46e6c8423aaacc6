import assert from "node:assert/strict";
import { test } from "node:test";
import type { JsonObject } from "../../../llm/types.ts";
import { queryReply, resultText, runTool } from "../testing.ts";

type AskResult = Parameters<typeof queryReply>[1] & { case: "askQuestionInteractionResponse" };

const ARGS: JsonObject = {
  title: "Setup",
  questions: [
    { prompt: "Which package manager?", options: [{ label: "npm" }, { label: "pnpm" }] },
    { id: "name", prompt: "Project name?" },
  ],
};

function ask(result: AskResult["value"]["result"]) {
  return runTool("ask_question", ARGS, [
    (state) => queryReply(state, { case: "askQuestionInteractionResponse", value: { result } }),
  ]);
}

test("the question goes out as an interaction query with ids filled in", () => {
  const run = ask({ result: { case: "success", value: { answers: [] } } });
  const query = run.requests[0];
  assert.ok(query?.message.case === "interactionQuery");
  const branch = query.message.value.query;
  assert.ok(branch.case === "askQuestionInteractionQuery");
  assert.equal(branch.value.toolCallId, "toolu_01");
  assert.deepEqual(
    branch.value.args?.questions.map((question) => [
      question.id,
      question.options.map((option) => option.id),
    ]),
    [
      ["q1", ["o1", "o2"]],
      ["name", []],
    ],
  );
  assert.equal(branch.value.args?.runAsync, false);
});

test("answers are rendered with option labels and free text", () => {
  const run = ask({
    result: {
      case: "success",
      value: {
        answers: [
          { questionId: "q1", selectedOptionIds: ["o2"] },
          { questionId: "name", freeformText: "calc" },
        ],
      },
    },
  });
  assert.equal(resultText(run.result), "Which package manager?\n→ pnpm\n\nProject name?\n→ calc");
  assert.equal(run.result.isError, false);
});

test("dismissed and failed questions are isError results", () => {
  const rejected = ask({ result: { case: "rejected", value: { reason: "later" } } });
  assert.equal(rejected.result.isError, true);
  assert.match(resultText(rejected.result), /dismissed the question: later/);
  const error = ask({ result: { case: "error", value: { errorMessage: "UI closed" } } });
  assert.match(resultText(error.result), /UI closed/);
});
