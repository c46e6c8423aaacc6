import assert from "node:assert/strict";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type TestContext, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { ShellAbortReason, ShellArgsSchema } from "../cursor/gen/agent/v1/exec_shell_pb.js";
import { startShell, toShellResult } from "./exec-shell.ts";

async function workspaceFor(t: TestContext): Promise<string> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), "exec-shell-")));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test("a one-shot command: success with both streams; failure with the exit code", async (t) => {
  const ws = await workspaceFor(t);
  const args = create(ShellArgsSchema, { command: "pwd; echo oops >&2" });
  const shell = startShell(args, ws);
  const result = toShellResult(args, shell.cwd, await shell.exited);
  assert.equal(result.result.case, "success");
  assert.equal(result.result.value?.stdout, `${ws}\n`);
  assert.equal(result.result.value?.stderr, "oops\n");
  assert.equal(result.result.value?.exitCode, 0);

  const failing = create(ShellArgsSchema, { command: "exit 4" });
  const second = startShell(failing, ws);
  const failed = toShellResult(failing, second.cwd, await second.exited);
  assert.equal(failed.result.case, "failure");
  assert.equal(failed.result.value?.exitCode, 4);
  assert.equal(failed.result.value?.aborted, false);
});

test("abort kills the whole process group", async (t) => {
  const ws = await workspaceFor(t);
  const args = create(ShellArgsSchema, { command: "sleep 30 & sleep 30; wait" });
  const chunks: string[] = [];
  const shell = startShell(args, ws, { stdout: (data) => chunks.push(data) });
  assert.equal(shell.started, true);
  shell.abort();
  const outcome = await shell.exited;
  assert.equal(outcome.type, "exited");
  assert.equal(outcome.type === "exited" && outcome.aborted, true);
  const result = toShellResult(args, shell.cwd, outcome);
  assert.equal(result.result.case, "failure");
  assert.equal(result.result.value?.abortReason, ShellAbortReason.USER_ABORT);
});

test("the timeout stops a command; a missing working directory is a spawn error", async (t) => {
  const ws = await workspaceFor(t);
  const args = create(ShellArgsSchema, { command: "sleep 30", timeout: 50 });
  const shell = startShell(args, ws);
  const result = toShellResult(args, shell.cwd, await shell.exited);
  assert.equal(result.result.case, "timeout");
  assert.equal(result.result.value?.timeoutMs, 50);

  const nowhere = create(ShellArgsSchema, { command: "true", workingDirectory: "missing" });
  const failed = startShell(nowhere, ws);
  const outcome = await failed.exited;
  assert.equal(outcome.type, "spawn_error");
  assert.equal(toShellResult(nowhere, failed.cwd, outcome).result.case, "spawnError");
});
