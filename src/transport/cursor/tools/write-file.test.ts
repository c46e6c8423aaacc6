import assert from "node:assert/strict";
import { test } from "node:test";
import { execOf, execReply, resultText, runTool, WORKSPACE } from "../testing.ts";

type WriteResultInit = Parameters<typeof execReply>[1] & { case: "writeResult" };

function write(result: WriteResultInit["value"]["result"], content = "a\nb\n") {
  return runTool("write_file", { path: "out/new.ts", content }, [
    (state) => execReply(state, { case: "writeResult", value: { result } }),
  ]);
}

test("model arguments → write_args with the whole content", () => {
  const run = write({ case: "success", value: { linesCreated: 2, fileSize: 4 } });
  const exec = execOf(run.requests[0]);
  assert.equal(exec.case, "writeArgs");
  if (exec.case === "writeArgs") {
    assert.equal(exec.value.path, `${WORKSPACE}/out/new.ts`);
    assert.equal(exec.value.fileText, "a\nb\n");
    assert.equal(exec.value.toolCallId, "toolu_01");
  }
  assert.equal(resultText(run.result), `Wrote 2 lines (4 bytes) to ${WORKSPACE}/out/new.ts.`);
  assert.equal(run.result.isError, false);
});

test("an empty file may be written", () => {
  const run = write({ case: "success", value: {} }, "");
  assert.equal(resultText(run.result), `Wrote 0 lines (0 bytes) to ${WORKSPACE}/out/new.ts.`);
});

test("each failure branch is an isError result", () => {
  const cases: [WriteResultInit["value"]["result"], RegExp][] = [
    [
      { case: "permissionDenied", value: { error: "EACCES" } },
      /Permission denied writing .*: EACCES/,
    ],
    [{ case: "noSpace", value: {} }, /No space left/],
    [{ case: "rejected", value: { reason: "user said no" } }, /was rejected: user said no/],
    [{ case: "error", value: { error: "EIO" } }, /Could not write .*: EIO/],
    [{ case: undefined }, /empty write result/],
  ];
  for (const [result, pattern] of cases) {
    const run = write(result);
    assert.equal(run.result.isError, true);
    assert.match(resultText(run.result), pattern);
  }
});

test("the UI shows a write as an edit of the file", () => {
  const run = write({ case: "success", value: {} });
  const completed = run.messages.find(
    (message) =>
      message.message.case === "interactionUpdate" &&
      message.message.value.message.case === "toolCallCompleted",
  );
  assert.ok(completed?.message.case === "interactionUpdate");
  const update = completed.message.value.message;
  assert.ok(update.case === "toolCallCompleted");
  assert.equal(update.value.toolCall?.tool.case, "editToolCall");
});
