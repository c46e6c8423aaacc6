import assert from "node:assert/strict";
import { test } from "node:test";
import type { JsonObject } from "../../../llm/types.ts";
import { execOf, execReply, resultText, runTool, WORKSPACE } from "../testing.ts";

type GrepResultInit = Parameters<typeof execReply>[1] & { case: "grepResult" };

function search(args: JsonObject, result: GrepResultInit["value"]["result"]) {
  return runTool("grep", args, [
    (state) => execReply(state, { case: "grepResult", value: { result } }),
  ]);
}

test("model arguments → grep_args (content mode by default)", () => {
  const run = search(
    {
      pattern: "TODO",
      path: "src",
      glob: "*.ts",
      case_insensitive: true,
      context: 2,
      head_limit: 50,
    },
    { case: "success", value: {} },
  );
  const exec = execOf(run.requests[0]);
  assert.ok(exec.case === "grepArgs");
  assert.equal(exec.value.pattern, "TODO");
  assert.equal(exec.value.path, `${WORKSPACE}/src`);
  assert.equal(exec.value.glob, "*.ts");
  assert.equal(exec.value.outputMode, "content");
  assert.equal(exec.value.caseInsensitive, true);
  assert.equal(exec.value.context, 2);
  assert.equal(exec.value.headLimit, 50);
  assert.equal(exec.value.toolCallId, "toolu_01");
  assert.equal(resultText(run.result), "No matches.");
});

test("content results: file, then line:text, context lines with '-'", () => {
  const run = search(
    { pattern: "add" },
    {
      case: "success",
      value: {
        workspaceResults: {
          [WORKSPACE]: {
            result: {
              case: "content",
              value: {
                matches: [
                  {
                    file: "src/math.ts",
                    matches: [
                      { lineNumber: 1, content: "// math", isContextLine: true },
                      { lineNumber: 2, content: "export const add = 1;" },
                    ],
                  },
                ],
              },
            },
          },
        },
      },
    },
  );
  assert.equal(resultText(run.result), "src/math.ts\n1-// math\n2:export const add = 1;");
});

test("files and count modes; truncation by the client is stated", () => {
  const files = search(
    { pattern: "x", output_mode: "files_with_matches" },
    {
      case: "success",
      value: {
        workspaceResults: {
          b: {
            result: {
              case: "files",
              value: { files: ["b.ts"], totalFiles: 5, clientTruncated: true },
            },
          },
          a: { result: { case: "files", value: { files: ["a.ts"], totalFiles: 1 } } },
        },
      },
    },
  );
  assert.equal(resultText(files.result), "a.ts\nb.ts\n[The file list was cut at 1 of 5 files.]");
  const counts = search(
    { pattern: "x", output_mode: "count" },
    {
      case: "success",
      value: {
        workspaceResults: {
          w: { result: { case: "count", value: { counts: [{ file: "a.ts", count: 3 }] } } },
        },
      },
    },
  );
  assert.equal(resultText(counts.result), "a.ts: 3");
});

test("errors and bad arguments are isError results", () => {
  const error = search({ pattern: "(" }, { case: "error", value: { error: "regex parse error" } });
  assert.equal(error.result.isError, true);
  assert.match(resultText(error.result), /Search failed: regex parse error/);
  const bad = runTool("grep", { pattern: "x", output_mode: "lines" }, []);
  assert.match(resultText(bad.result), /"output_mode" must be one of/);
});
