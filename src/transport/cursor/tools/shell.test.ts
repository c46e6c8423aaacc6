import assert from "node:assert/strict";
import { test } from "node:test";
import { TimeoutBehavior } from "../gen/agent/v1/exec_shell_pb.js";
import {
  execOf,
  execReply,
  type Reply,
  resultText,
  runTool,
  turnState,
  WORKSPACE,
} from "../testing.ts";
import { MAX_STREAM_CHARS } from "./shell.ts";

type StreamEvent = (Parameters<typeof execReply>[1] & { case: "shellStream" })["value"]["event"];

const stream =
  (event: StreamEvent): Reply =>
  (state) =>
    execReply(state, { case: "shellStream", value: { event } });

test("model arguments → shell_stream_args with parsing, timeout and the call id", () => {
  const run = runTool(
    "shell",
    { command: "npm test", timeout_ms: 5000, description: "run tests" },
    [stream({ case: "exit", value: { code: 0, cwd: WORKSPACE } })],
  );
  const exec = execOf(run.requests[0]);
  assert.ok(exec.case === "shellStreamArgs");
  assert.equal(exec.value.command, "npm test");
  assert.equal(exec.value.workingDirectory, WORKSPACE);
  assert.equal(exec.value.timeout, 5000);
  // A command that outlives its time-out is moved to the background, never killed for it.
  assert.equal(exec.value.timeoutBehavior, TimeoutBehavior.BACKGROUND);
  assert.equal(exec.value.isBackground, false);
  assert.deepEqual(exec.value.simpleCommands, ["npm"]);
  assert.equal(exec.value.parsingResult?.parsingFailed, false);
  assert.equal(exec.value.toolCallId, "toolu_01");
  assert.equal(exec.value.closeStdin, true);
});

test("stdout and stderr stream live as shell_output_delta and land in the result", () => {
  const run = runTool("shell", { command: "make" }, [
    stream({ case: "start", value: {} }),
    stream({ case: "stdout", value: { data: "building\n" } }),
    stream({ case: "stderr", value: { data: "warning: x\n" } }),
    stream({ case: "stdout", value: { data: "done\n" } }),
    stream({ case: "exit", value: { code: 2, cwd: WORKSPACE } }),
  ]);
  const deltas = run.messages.flatMap((message) =>
    message.message.case === "interactionUpdate" &&
    message.message.value.message.case === "shellOutputDelta"
      ? [message.message.value.message.value.event.case]
      : [],
  );
  assert.deepEqual(deltas, ["start", "stdout", "stderr", "stdout", "exit"]);
  assert.equal(
    resultText(run.result),
    "Exit code: 2\nstdout:\nbuilding\ndone\nstderr:\nwarning: x",
  );
  assert.equal(run.result.isError, false, "a non-zero exit is a result, not a tool failure");
  const ui = run.state.steps.at(-1)?.message;
  assert.ok(ui?.case === "toolCall" && ui.value.tool.case === "shellToolCall");
  assert.equal(ui.value.tool.value.result?.result.case, "failure");
});

test("a successful command with no output says so", () => {
  const run = runTool("shell", { command: "true" }, [stream({ case: "exit", value: { code: 0 } })]);
  assert.equal(resultText(run.result), "Exit code: 0\nstdout: (empty)\nstderr: (empty)");
});

test("huge output is cut in the middle for the model, and the cut is stated", () => {
  const chunk = `${"z".repeat(9_999)}\n`;
  const replies: Reply[] = Array.from({ length: 20 }, () =>
    stream({ case: "stdout", value: { data: chunk } }),
  );
  replies.push(stream({ case: "exit", value: { code: 0 } }));
  const text = resultText(runTool("shell", { command: "cat big" }, replies).result);
  assert.ok(text.length < MAX_STREAM_CHARS + 500);
  assert.match(text, /characters omitted/);
});

test("aborted, rejected, denied, backgrounded and unsupported runs", () => {
  const timeout = runTool("shell", { command: "sleep 99" }, [
    stream({ case: "exit", value: { code: 143, aborted: true, abortReason: 2 } }),
  ]);
  assert.match(resultText(timeout.result), /stopped \(timeout\) with exit code 143/);
  const rejected = runTool("shell", { command: "rm -rf /" }, [
    stream({ case: "rejected", value: { reason: "not allowed" } }),
  ]);
  assert.equal(rejected.result.isError, true);
  assert.match(resultText(rejected.result), /declined to run the command: not allowed/);
  const denied = runTool("shell", { command: "x" }, [
    stream({ case: "permissionDenied", value: { error: "sandbox" } }),
  ]);
  assert.match(resultText(denied.result), /Permission denied running the command: sandbox/);
  const background = runTool("shell", { command: "server" }, [
    stream({ case: "stdout", value: { data: "listening\n" } }),
    stream({ case: "backgrounded", value: { shellId: 3, pid: 4242 } }),
  ]);
  assert.match(
    resultText(background.result),
    /still running, now in the background as shell 3 \(pid 4242\)\. Its output is in the user's terminal[\s\S]*kill 4242[\s\S]*listening/,
  );
  assert.equal(background.result.isError, false);
  const unsupported = runTool("shell", { command: "x" }, [
    stream({ case: "sandboxUnsupported", value: { reason: "no sandbox on this OS" } }),
  ]);
  assert.equal(unsupported.result.isError, true);
});

test("a one-shot shell_result reply is rendered too", () => {
  const run = runTool("shell", { command: "echo hi" }, [
    (state) =>
      execReply(state, {
        case: "shellResult",
        value: { result: { case: "success", value: { exitCode: 0, stdout: "hi\n", stderr: "" } } },
      }),
  ]);
  assert.equal(resultText(run.result), "Exit code: 0\nstdout:\nhi\nstderr: (empty)");
  const spawn = runTool("shell", { command: "nope" }, [
    (state) =>
      execReply(state, {
        case: "shellResult",
        value: { result: { case: "spawnError", value: { error: "ENOENT" } } },
      }),
  ]);
  assert.equal(spawn.result.isError, true);
});

test("timeout_ms out of range is an argument error", () => {
  const run = runTool("shell", { command: "x", timeout_ms: 10 }, []);
  assert.match(resultText(run.result), /"timeout_ms" must be between 1000 and 600000/);
});

test("run_in_background spawns a background shell and says where its output goes", () => {
  const state = turnState({ terminalsFolder: "/home/dev/.cursor/terminals/" });
  const run = runTool(
    "shell",
    { command: "npm run dev", run_in_background: true, description: "dev server" },
    [
      (current) =>
        execReply(current, {
          case: "backgroundShellSpawnResult",
          value: {
            result: {
              case: "success",
              value: { shellId: 7, pid: 5150, command: "npm run dev", workingDirectory: WORKSPACE },
            },
          },
        }),
    ],
    state,
  );
  const exec = execOf(run.requests[0]);
  assert.ok(exec.case === "backgroundShellSpawnArgs");
  assert.equal(exec.value.command, "npm run dev");
  assert.equal(exec.value.toolCallId, "toolu_01");
  assert.equal(exec.value.enableWriteShellStdinTool, true);
  assert.deepEqual(
    exec.value.parsingResult?.executableCommands.map((c) => c.name),
    ["npm"],
  );
  assert.equal(
    resultText(run.result),
    "Started in the background as shell 7 (pid 5150); it keeps running after this call. " +
      "Its output is written to /home/dev/.cursor/terminals/7.txt: read it with read_file to check on it. " +
      "Type into it with write_shell_stdin (shell_id 7). Stop it with `kill 5150` when it is no longer needed.",
  );
  assert.equal(run.result.isError, false);
});

test("a background spawn the client refuses or cannot start is an error result", () => {
  const spawn = (result: Parameters<typeof execReply>[1]) =>
    runTool("shell", { command: "serve", run_in_background: true }, [
      (current) => execReply(current, result),
    ]);
  const failed = spawn({
    case: "backgroundShellSpawnResult",
    value: { result: { case: "error", value: { error: "no shell" } } },
  });
  assert.equal(failed.result.isError, true);
  assert.match(resultText(failed.result), /could not be started: no shell/);
  const rejected = spawn({
    case: "backgroundShellSpawnResult",
    value: { result: { case: "rejected", value: { reason: "no servers" } } },
  });
  assert.match(resultText(rejected.result), /declined to run the command: no servers/);
});
