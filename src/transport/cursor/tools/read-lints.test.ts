import assert from "node:assert/strict";
import { test } from "node:test";
import { DiagnosticSeverity } from "../gen/agent/v1/exec_files_pb.js";
import { execOf, execReply, resultText, runTool, WORKSPACE } from "../testing.ts";

type DiagnosticsInit = (Parameters<typeof execReply>[1] & {
  case: "diagnosticsResult";
})["value"]["result"];

function lint(result: DiagnosticsInit) {
  return runTool("read_lints", { path: "src/a.ts" }, [
    (state) => execReply(state, { case: "diagnosticsResult", value: { result } }),
  ]);
}

test("model arguments → diagnostics_args; diagnostics rendered one per line", () => {
  const run = lint({
    case: "success",
    value: {
      diagnostics: [
        {
          severity: DiagnosticSeverity.ERROR,
          range: { start: { line: 3, column: 7 }, end: { line: 3, column: 9 } },
          message: "Cannot find name 'x'.",
          source: "ts",
          code: "2304",
        },
        { severity: DiagnosticSeverity.WARNING, message: "unused", isStale: true },
      ],
      totalDiagnostics: 2,
    },
  });
  const exec = execOf(run.requests[0]);
  assert.ok(exec.case === "diagnosticsArgs");
  assert.equal(exec.value.path, `${WORKSPACE}/src/a.ts`);
  assert.equal(
    resultText(run.result),
    [
      "2 diagnostics:",
      `${WORKSPACE}/src/a.ts:3:7: error: Cannot find name 'x'. [ts 2304]`,
      `${WORKSPACE}/src/a.ts: warning: unused (may be stale)`,
    ].join("\n"),
  );
});

test("no diagnostics, and each failure branch", () => {
  assert.match(resultText(lint({ case: "success", value: {} }).result), /^No diagnostics for /);
  const cases: [DiagnosticsInit, RegExp][] = [
    [{ case: "error", value: { error: "no language server" } }, /no language server/],
    [{ case: "rejected", value: { reason: "r" } }, /rejected: r/],
    [{ case: "fileNotFound", value: {} }, /File not found/],
    [{ case: "permissionDenied", value: {} }, /Permission denied/],
  ];
  for (const [result, pattern] of cases) {
    const run = lint(result);
    assert.equal(run.result.isError, true);
    assert.match(resultText(run.result), pattern);
  }
});
