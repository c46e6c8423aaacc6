import assert from "node:assert/strict";
import { test } from "node:test";
import { execOf, execReply, resultText, runTool, turnState } from "../testing.ts";

test("the characters go to the background shell; the model learns where the reaction is", () => {
  const run = runTool(
    "write_shell_stdin",
    { shell_id: 7, chars: "y\n" },
    [
      (state) =>
        execReply(state, {
          case: "writeShellStdinResult",
          value: {
            result: {
              case: "success",
              value: { shellId: 7, terminalFileLengthBeforeInputWritten: 120 },
            },
          },
        }),
    ],
    turnState({ terminalsFolder: "/t" }),
  );
  const exec = execOf(run.requests[0]);
  assert.ok(exec.case === "writeShellStdinArgs");
  assert.deepEqual([exec.value.shellId, exec.value.chars], [7, "y\n"]);
  assert.equal(
    resultText(run.result),
    "Wrote 2 characters to shell 7. Its reaction is in /t/7.txt from offset 120.",
  );
});

test("a shell that is gone is an error result; a bad shell id an argument error", () => {
  const gone = runTool("write_shell_stdin", { shell_id: 9, chars: "q" }, [
    (state) =>
      execReply(state, {
        case: "writeShellStdinResult",
        value: { result: { case: "error", value: { error: "no such shell" } } },
      }),
  ]);
  assert.equal(gone.result.isError, true);
  assert.equal(resultText(gone.result), "Could not write to shell 9: no such shell");
  const bad = runTool("write_shell_stdin", { shell_id: -1, chars: "q" }, []);
  assert.equal(bad.result.isError, true);
  assert.match(resultText(bad.result), /shell_id/);
});
