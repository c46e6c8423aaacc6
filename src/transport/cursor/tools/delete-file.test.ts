import assert from "node:assert/strict";
import { test } from "node:test";
import { execOf, execReply, resultText, runTool, WORKSPACE } from "../testing.ts";

type DeleteResultInit = Parameters<typeof execReply>[1] & { case: "deleteResult" };

function remove(result: DeleteResultInit["value"]["result"]) {
  return runTool("delete_file", { path: "old.ts" }, [
    (state) => execReply(state, { case: "deleteResult", value: { result } }),
  ]);
}

test("model arguments → delete_args; success text", () => {
  const run = remove({ case: "success", value: { path: `${WORKSPACE}/old.ts`, fileSize: 12n } });
  const exec = execOf(run.requests[0]);
  assert.ok(exec.case === "deleteArgs");
  assert.equal(exec.value.path, `${WORKSPACE}/old.ts`);
  assert.equal(exec.value.toolCallId, "toolu_01");
  assert.equal(resultText(run.result), `Deleted ${WORKSPACE}/old.ts (12 bytes).`);
});

test("each failure branch is an isError result", () => {
  const cases: [DeleteResultInit["value"]["result"], RegExp][] = [
    [{ case: "fileNotFound", value: {} }, /^File not found/],
    [
      { case: "notFile", value: { actualType: "directory" } },
      /is not a file \(it is a directory\)/,
    ],
    [
      { case: "permissionDenied", value: { clientVisibleError: "read-only" } },
      /Permission denied deleting .*read-only/,
    ],
    [{ case: "fileBusy", value: {} }, /is in use/],
    [{ case: "rejected", value: { reason: "no" } }, /was rejected: no/],
    [{ case: "error", value: { error: "EIO" } }, /Could not delete .*EIO/],
    [{ case: undefined }, /empty delete result/],
  ];
  for (const [result, pattern] of cases) {
    const run = remove(result);
    assert.equal(run.result.isError, true);
    assert.match(resultText(run.result), pattern);
  }
});
