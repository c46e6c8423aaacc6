import assert from "node:assert/strict";
import { test } from "node:test";
import type { JsonObject } from "../../../llm/types.ts";
import { execOf, execReply, resultText, runTool, WORKSPACE } from "../testing.ts";

type GrepResultInit = Parameters<typeof execReply>[1] & { case: "grepResult" };

function find(result: GrepResultInit["value"]["result"], path?: string) {
  const args: JsonObject =
    path === undefined ? { pattern: "**/*.test.ts" } : { pattern: "**/*.test.ts", path };
  return runTool("glob", args, [
    (state) => execReply(state, { case: "grepResult", value: { result } }),
  ]);
}

test("glob runs as a grep exec: empty pattern, glob filter, files_with_matches", () => {
  const run = find({ case: "success", value: {} }, "src");
  const exec = execOf(run.requests[0]);
  assert.ok(exec.case === "grepArgs");
  assert.equal(exec.value.pattern, "");
  assert.equal(exec.value.glob, "**/*.test.ts");
  assert.equal(exec.value.outputMode, "files_with_matches");
  assert.equal(exec.value.path, `${WORKSPACE}/src`);
  assert.equal(resultText(run.result), "No files match **/*.test.ts.");
});

test("files are listed sorted and de-duplicated; client truncation is stated", () => {
  const run = find({
    case: "success",
    value: {
      workspaceResults: {
        w: {
          result: {
            case: "files",
            value: {
              files: ["b.test.ts", "a.test.ts", "b.test.ts"],
              totalFiles: 9,
              clientTruncated: true,
            },
          },
        },
      },
    },
  });
  assert.equal(
    resultText(run.result),
    "a.test.ts\nb.test.ts\n[The client cut the search at 2 of 9 files.]",
  );
});

test("the UI shows a glob tool call with the file list", () => {
  const run = find({
    case: "success",
    value: {
      workspaceResults: {
        w: { result: { case: "files", value: { files: ["a.ts"], totalFiles: 1 } } },
      },
    },
  });
  const step = run.state.steps.at(-1)?.message;
  assert.ok(step?.case === "toolCall");
  const tool = step.value.tool;
  assert.ok(tool.case === "globToolCall");
  assert.deepEqual(
    tool.value.result?.result.case === "success" ? tool.value.result.result.value.files : [],
    ["a.ts"],
  );
});

test("a search error is an isError result", () => {
  const run = find({ case: "error", value: { error: "bad glob" } });
  assert.equal(run.result.isError, true);
  assert.match(resultText(run.result), /File search failed: bad glob/);
});
