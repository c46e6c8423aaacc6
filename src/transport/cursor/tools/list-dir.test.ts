import assert from "node:assert/strict";
import { test } from "node:test";
import type { JsonObject } from "../../../llm/types.ts";
import { execOf, execReply, resultText, runTool, WORKSPACE } from "../testing.ts";

type LsResultInit = Parameters<typeof execReply>[1] & { case: "lsResult" };

function list(args: JsonObject, result: LsResultInit["value"]["result"]) {
  return runTool("list_dir", args, [
    (state) => execReply(state, { case: "lsResult", value: { result } }),
  ]);
}

const tree = {
  absPath: WORKSPACE,
  childrenWereProcessed: true,
  childrenDirs: [
    { absPath: `${WORKSPACE}/src`, childrenWereProcessed: true, childrenFiles: [{ name: "a.ts" }] },
  ],
  childrenFiles: [{ name: "README.md" }],
};

test("no path lists the workspace root; ignore globs are passed on", () => {
  const run = list(
    { ignore: ["node_modules"] },
    { case: "success", value: { directoryTreeRoot: tree } },
  );
  const exec = execOf(run.requests[0]);
  assert.ok(exec.case === "lsArgs");
  assert.equal(exec.value.path, WORKSPACE);
  assert.deepEqual(exec.value.ignore, ["node_modules"]);
  assert.equal(resultText(run.result), `${WORKSPACE}/\n  src/\n    a.ts\n  README.md`);
});

test("a timeout shows the partial tree and says it is partial", () => {
  const run = list({ path: "." }, { case: "timeout", value: { directoryTreeRoot: tree } });
  assert.match(resultText(run.result), /timed out; the tree above is partial/);
  assert.equal(run.result.isError, false);
});

test("errors and rejections are isError results", () => {
  const error = list({ path: "x" }, { case: "error", value: { error: "ENOENT" } });
  assert.equal(error.result.isError, true);
  assert.match(resultText(error.result), /Could not list .*: ENOENT/);
  const rejected = list({ path: "x" }, { case: "rejected", value: { reason: "outside" } });
  assert.match(resultText(rejected.result), /rejected: outside/);
});
