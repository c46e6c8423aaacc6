/**
 * Long-running commands through the real server and the test client's real child processes: a
 * command started in the background keeps running after its call (and its turn), takes input,
 * writes to its terminal file and is stopped by the model later; a command that outlives its
 * time-out is moved to the background instead of being killed; the user's "move to background"
 * (background_shell action) ends the call with the command still running.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, watch } from "node:fs";
import { dirname } from "node:path";
import { afterEach, describe, test } from "node:test";
import { type Harness, MODEL, startHarness } from "./test-harness.ts";

const CONVERSATION = "1f2e3d4c-9999-4a5b-8c6d-7e8f9a0b1c2d";

/** Resolves with the file's text once it matches `pattern` (watching its folder, no polling). */
function waitForText(file: string, pattern: RegExp, limitMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const watcher = watch(dirname(file), () => check());
    const timer = setTimeout(() => {
      watcher.close();
      reject(new Error(`${file} never matched ${pattern}: ${read()}`));
    }, limitMs);
    const read = () => (existsSync(file) ? readFileSync(file, "utf8") : "");
    const check = () => {
      const text = read();
      if (!pattern.test(text)) return;
      clearTimeout(timer);
      watcher.close();
      resolve(text);
    };
    check();
  });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function toolResults(harness: Harness, request: number): string {
  const body = harness.provider.requests[request]?.body ?? "{}";
  return (JSON.parse(body).messages as { role: string; content: unknown }[])
    .filter((message) => message.role === "tool")
    .map((message) => JSON.stringify(message.content))
    .join("\n");
}

describe("long-running commands end to end", () => {
  let harness: Harness;
  afterEach(async () => {
    await harness.close();
  });

  test("run_in_background: the command outlives its turn, takes input, and the model stops it", async () => {
    harness = await startHarness();
    const client = harness.client();
    harness.reply(
      {
        toolCalls: [
          {
            id: "call_spawn",
            name: "shell",
            arguments: {
              command: 'echo ready; while read line; do echo "got $line"; done',
              run_in_background: true,
            },
          },
        ],
      },
      {
        toolCalls: [
          {
            id: "call_stdin",
            name: "write_shell_stdin",
            arguments: { shell_id: 1, chars: "hello\n" },
          },
        ],
      },
      { text: "The reader is running." },
    );
    const first = await client.startTurn({
      conversationId: CONVERSATION,
      text: "Start the line reader",
      modelId: MODEL,
    }).done;
    assert.equal(first.error, undefined);
    const shell = client.backgroundShells.find(1);
    assert.ok(shell?.pid !== undefined, "shell 1 runs in the background");
    assert.ok(isAlive(shell.pid), "it outlives the turn");
    const file = `${client.backgroundShells.folder}/1.txt`;
    assert.match(
      toolResults(harness, 1),
      new RegExp(
        `background as shell 1 \\(pid ${shell.pid}\\)[^"]*${file.replaceAll("/", "\\/").replaceAll(".", "\\.")}`,
      ),
    );
    assert.match(await waitForText(file, /got hello/), /ready\n[\s\S]*got hello/);

    harness.reply(
      {
        toolCalls: [
          { id: "call_kill", name: "shell", arguments: { command: `kill ${shell.pid}` } },
        ],
      },
      { text: "Stopped." },
    );
    const second = await client.startTurn({
      conversationId: CONVERSATION,
      text: "Stop it",
      modelId: MODEL,
    }).done;
    assert.equal(second.error, undefined);
    const outcome = await shell.process.exited;
    assert.equal(outcome.type, "exited");
    assert.equal(client.backgroundShells.find(1), undefined);
  });

  test("a command that outlives its time-out keeps running in the background", async () => {
    harness = await startHarness();
    const client = harness.client();
    harness.reply(
      {
        toolCalls: [
          {
            id: "call_watch",
            name: "shell",
            arguments: {
              command: "echo watching; while true; do sleep 0.2; done",
              timeout_ms: 1000,
            },
          },
        ],
      },
      { text: "The watcher runs." },
    );
    const result = await client.startTurn({
      conversationId: CONVERSATION,
      text: "Start the watcher",
      modelId: MODEL,
    }).done;
    assert.equal(result.error, undefined);
    const shell = client.backgroundShells.find(1);
    assert.ok(shell?.pid !== undefined && isAlive(shell.pid), "not killed at the time-out");
    assert.match(toolResults(harness, 1), /still running, now in the background as shell 1/);
    assert.match(toolResults(harness, 1), /watching/);
  });

  test("the user's move to background ends the call while the command goes on", async () => {
    harness = await startHarness();
    const client = harness.client();
    harness.reply(
      {
        toolCalls: [
          {
            id: "call_long",
            name: "shell",
            arguments: {
              command: "echo serving; while true; do sleep 0.2; done",
              timeout_ms: 600_000,
            },
          },
        ],
      },
      { text: "Serving in the background." },
    );
    const turn = client.startTurn({ conversationId: CONVERSATION, text: "Serve", modelId: MODEL });
    await turn.waitFor(
      (message) =>
        message.message.case === "interactionUpdate" &&
        message.message.value.message.case === "shellOutputDelta" &&
        message.message.value.message.value.event.case === "stdout",
    );
    await turn.send({
      message: {
        case: "conversationAction",
        value: { action: { case: "backgroundShellAction", value: { toolCallId: "call_long" } } },
      },
    });
    const result = await turn.done;
    assert.equal(result.error, undefined);
    const shell = client.backgroundShells.find(1);
    assert.ok(shell?.pid !== undefined && isAlive(shell.pid));
    assert.match(toolResults(harness, 1), /now in the background as shell 1[\s\S]*serving/);
  });
});
