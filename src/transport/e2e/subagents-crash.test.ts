/**
 * A subagent survives a crash like any turn (README "Subagents", "Crashes and tool calls"): the
 * real server in its own process is SIGKILLed while the client holds the subagent's read, then
 * restarted on the same database, and the client reconnects the parent's stream. The parent's
 * task call is asked again and finds the same child conversation (its id comes from the call),
 * which continues where it was: the read is asked again (reads may repeat), the write after it
 * runs exactly once, and the parent ends with the child's answer as its tool result. The same
 * holds for two children running at once: both are asked again (a resume asks for the whole
 * batch of task calls the loop planned, src/loop/request.ts). A second
 * test kills the server right after each store write of such a turn (every commit point of the
 * parent and the child): the write never runs twice and every turn completes.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import type { RecordedRequest } from "../../llm/testing/fake-provider.ts";
import { toSubagentConversationID } from "../../loop/index.ts";
import { UNKNOWN_OUTCOME } from "../cursor/index.ts";
import { createGate, MODEL, startHarness } from "./test-harness.ts";

const CONVERSATION = "subagent-crash";

/** The model's next step from the request alone, so a call repeated after a restart fits. */
function answer(request: RecordedRequest) {
  const body = JSON.parse(request.body) as { messages: { role: string; content?: unknown }[] };
  const results = body.messages.filter((message) => message.role === "tool").length;
  const isChild = String(body.messages[0]?.content ?? "").includes("# You are a subagent");
  const reply = isChild
    ? results === 0
      ? { toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "a.ts" } }] }
      : results === 1
        ? {
            toolCalls: [
              {
                id: "call_write",
                name: "write_file",
                arguments: { path: "out.txt", content: "copied\n" },
              },
            ],
          }
        : { text: "Copied a.ts into out.txt." }
    : results === 0
      ? {
          toolCalls: [
            {
              id: "call_task",
              name: "task",
              arguments: { description: "Copy", prompt: "Copy a.ts", subagent_type: "general" },
            },
          ],
        }
      : { text: "The subagent copied it." };
  return { type: "sse", body: toChatCompletionSse(reply) } as const;
}

test("killed while a subagent's read is held: the child continues, its write runs once", {
  timeout: 120_000,
}, async () => {
  const harness = await startHarness({ mode: "process", process: { lateResultGraceMs: 15_000 } });
  try {
    writeFileSync(join(harness.workspace, "a.ts"), "export const a = 1;\n");
    harness.provider.answer(answer);
    const runs = { readArgs: 0, writeArgs: 0 };
    const held = createGate();
    const release = createGate();
    const client = harness.client({
      timeoutMs: 60_000,
      onExec: async (exec) => {
        const kind = exec.message.case;
        if (kind !== "readArgs" && kind !== "writeArgs") return undefined;
        runs[kind] += 1;
        if (kind === "readArgs" && runs.readArgs === 1) {
          held.open();
          await release.promise;
        }
        return undefined; // run it for real
      },
    });
    const turn = client.startTurn({ conversationId: CONVERSATION, text: "go", modelId: MODEL });
    const lost = turn.runSseLost();
    await held.promise;
    await harness.restart();
    await lost;
    release.open();
    turn.reconnectRunSse();
    const result = await turn.done;

    assert.equal(result.error, undefined, result.error?.message);
    assert.equal(runs.writeArgs, 1, "the subagent's write ran exactly once");
    assert.ok(runs.readArgs >= 2, "the read was asked again after the restart");
    assert.equal(readFileSync(join(harness.workspace, "out.txt"), "utf8"), "copied\n");
    const parent = await harness.store.load(CONVERSATION);
    const taskResult = parent?.state.messages.find((message) => message.role === "toolResult");
    assert.ok(taskResult?.role === "toolResult");
    assert.equal(taskResult.isError, false);
    const childID = toSubagentConversationID(CONVERSATION, `${CONVERSATION}:t1:c0:call_task`);
    assert.deepEqual(taskResult.content, [
      { type: "text", text: `Copied a.ts into out.txt.\n\nagent_id: ${childID}` },
    ]);
    const child = await harness.store.load(
      toSubagentConversationID(CONVERSATION, `${CONVERSATION}:t1:c0:call_task`),
    );
    assert.equal(child?.state.status, "final");
    // One turn: the restart continued it, it did not start the child again.
    assert.equal(child?.state.turnCount, 1);
    const childResults = (child?.state.messages ?? []).flatMap((message) =>
      message.role === "toolResult" ? [[message.toolCallId, message.isError] as const] : [],
    );
    assert.deepEqual(childResults, [
      ["call_read", false],
      ["call_write", false],
    ]);
  } finally {
    await harness.close();
  }
});

test("a graceful shutdown while a subagent's read is held: the child is left as it is and continues", {
  timeout: 120_000,
}, async () => {
  const harness = await startHarness({ mode: "process", process: { lateResultGraceMs: 15_000 } });
  try {
    writeFileSync(join(harness.workspace, "a.ts"), "export const a = 1;\n");
    harness.provider.answer(answer);
    const runs = { readArgs: 0, writeArgs: 0 };
    const held = createGate();
    const release = createGate();
    const client = harness.client({
      timeoutMs: 60_000,
      onExec: async (exec) => {
        const kind = exec.message.case;
        if (kind !== "readArgs" && kind !== "writeArgs") return undefined;
        runs[kind] += 1;
        if (kind === "readArgs" && runs.readArgs === 1) {
          held.open();
          await release.promise;
        }
        return undefined;
      },
    });
    const conversationId = `${CONVERSATION}-graceful`;
    const turn = client.startTurn({ conversationId, text: "go", modelId: MODEL });
    await held.promise;
    // SIGTERM: the server shuts down cleanly (streams closed, nothing canceled), then a new one.
    await harness.server.close();
    await harness.restart();
    release.open();
    turn.reconnectRunSse();
    const result = await turn.done;
    assert.equal(result.error, undefined, result.error?.message);
    assert.equal(runs.writeArgs, 1);
    const child = await harness.store.load(
      toSubagentConversationID(conversationId, `${conversationId}:t1:c0:call_task`),
    );
    assert.equal(child?.state.status, "final");
    assert.equal(child?.state.turnCount, 1);
    const parent = await harness.store.load(conversationId);
    const last = parent?.state.messages.at(-1);
    assert.ok(last?.role === "assistant");
    assert.deepEqual(last.content, [{ type: "text", text: "The subagent copied it." }]);
  } finally {
    await harness.close();
  }
});

/** Two children at once: each copies its own file; the parent asks for both in one step. */
function answerTwo(request: RecordedRequest) {
  const body = JSON.parse(request.body) as { messages: { role: string; content?: unknown }[] };
  const results = body.messages.filter((message) => message.role === "tool").length;
  const text = JSON.stringify(body.messages);
  const isChild = String(body.messages[0]?.content ?? "").includes("# You are a subagent");
  const file = text.includes("Copy b.ts") ? "b" : "a";
  const task = (name: string) => ({
    id: `call_task_${name}`,
    name: "task",
    arguments: { description: `Copy ${name}`, prompt: `Copy ${name}.ts`, subagent_type: "general" },
  });
  const reply = isChild
    ? results === 0
      ? { toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: `${file}.ts` } }] }
      : results === 1
        ? {
            toolCalls: [
              {
                id: "call_write",
                name: "write_file",
                arguments: { path: `${file}.out`, content: `copied ${file}\n` },
              },
            ],
          }
        : { text: `Copied ${file}.ts.` }
    : results === 0
      ? { toolCalls: [task("a"), task("b")] }
      : { text: "Both copied." };
  return { type: "sse", body: toChatCompletionSse(reply) } as const;
}

test("killed while two concurrent subagents each hold a read: both continue, each write runs once", {
  timeout: 120_000,
}, async () => {
  const harness = await startHarness({ mode: "process", process: { lateResultGraceMs: 15_000 } });
  try {
    writeFileSync(join(harness.workspace, "a.ts"), "export const a = 1;\n");
    writeFileSync(join(harness.workspace, "b.ts"), "export const b = 2;\n");
    harness.provider.answer(answerTwo);
    const reads = new Map<string, number>();
    const writes = new Map<string, number>();
    const bothHeld = createGate();
    const release = createGate();
    const client = harness.client({
      timeoutMs: 60_000,
      onExec: async (exec) => {
        const message = exec.message;
        if (message.case === "writeArgs") {
          writes.set(message.value.path, (writes.get(message.value.path) ?? 0) + 1);
        }
        if (message.case !== "readArgs") return undefined;
        const path = message.value.path;
        reads.set(path, (reads.get(path) ?? 0) + 1);
        if (reads.get(path) === 1) {
          if (reads.size === 2) bothHeld.open();
          await release.promise; // both first reads stay open until the kill
        }
        return undefined;
      },
    });
    const conversationId = `${CONVERSATION}-two`;
    const turn = client.startTurn({ conversationId, text: "go", modelId: MODEL });
    const lost = turn.runSseLost();
    await bothHeld.promise;
    await harness.restart();
    await lost;
    release.open();
    turn.reconnectRunSse();
    const result = await turn.done;

    assert.equal(result.error, undefined, result.error?.message);
    for (const name of ["a", "b"]) {
      const written = [...writes].filter(([path]) => path.endsWith(`${name}.out`));
      assert.deepEqual(
        written.map(([, count]) => count),
        [1],
        `${name}: the write ran once`,
      );
      assert.equal(
        readFileSync(join(harness.workspace, `${name}.out`), "utf8"),
        `copied ${name}\n`,
      );
      const child = await harness.store.load(
        toSubagentConversationID(conversationId, `${conversationId}:t1:c0:call_task_${name}`),
      );
      assert.equal(child?.state.status, "final", name);
      assert.equal(child?.state.turnCount, 1, `${name}: the child was not started again`);
    }
    for (const [path, count] of reads) assert.ok(count >= 2, `${path}: read asked again`);
    const parent = await harness.store.load(conversationId);
    const last = parent?.state.messages.at(-1);
    assert.ok(last?.role === "assistant");
    assert.deepEqual(last.content, [{ type: "text", text: "Both copied." }]);
  } finally {
    await harness.close();
  }
});

const MAX_WRITES = 60;

describe("crash matrix: SIGKILL after every store write of a turn with a subagent", () => {
  test("the subagent's write never runs twice, every turn completes", {
    timeout: 600_000,
  }, async (t) => {
    const seen: string[] = [];
    let write = 1;
    for (; write <= MAX_WRITES; write += 1) {
      const harness = await startHarness({
        mode: "process",
        process: { lateResultGraceMs: 1_500, killAfterWrite: write },
      });
      try {
        writeFileSync(join(harness.workspace, "a.ts"), "export const a = 1;\n");
        harness.provider.answer(answer);
        let writes = 0;
        const client = harness.client({
          timeoutMs: 30_000,
          onExec: (exec) => {
            if (exec.message.case === "writeArgs") writes += 1;
            return undefined;
          },
        });
        const turn = client.startTurn({ conversationId: CONVERSATION, text: "go", modelId: MODEL });
        const lost = turn.runSseLost();
        const first = await Promise.race([
          turn.done.then(() => "done" as const),
          harness.exited().then(() => "killed" as const),
        ]);
        if (first === "killed") {
          await lost;
          await harness.restart();
          turn.reconnectRunSse();
        }
        const result = await turn.done;
        const label = `kill after write ${write}`;
        assert.ok(writes <= 1, `${label}: the subagent's write ran ${writes} times`);
        const parent = await harness.store.load(CONVERSATION);
        const child = await harness.store.load(
          toSubagentConversationID(CONVERSATION, `${CONVERSATION}:t1:c0:call_task`),
        );
        // Every kill point ends with the turn completed: a crash is never a reason for the parent
        // or the child to fail (the child resumes like any turn, its task call is asked again).
        assert.equal(result.error, undefined, `${label}: ${result.error?.message}`);
        const last = parent?.state.messages.at(-1);
        assert.ok(last?.role === "assistant", label);
        assert.deepEqual(last.content, [{ type: "text", text: "The subagent copied it." }], label);
        assert.equal(parent?.state.status, "final", label);
        assert.equal(child?.state.status, "final", label);
        const taskResult = parent?.state.messages.find((message) => message.role === "toolResult");
        assert.ok(taskResult?.role === "toolResult" && !taskResult.isError, label);
        // A child tool result is either the tool's own or says its outcome is unknown.
        const childResults = (child?.state.messages ?? []).flatMap((message) =>
          message.role === "toolResult" ? [message] : [],
        );
        for (const message of childResults) {
          if (!message.isError) continue;
          assert.deepEqual(message.content, [{ type: "text", text: UNKNOWN_OUTCOME }], label);
        }
        assert.ok((child?.state.turnCount ?? 0) <= 1, `${label}: the child was started twice`);
        seen.push(
          `${write}:${first}:${childResults.map((m) => (m.isError ? "unknown" : "ok")).join("/")}`,
        );
        if (first === "done") break;
      } finally {
        await harness.close();
      }
    }
    t.diagnostic(`kill point:outcome:child tool results — ${seen.join(", ")}`);
    assert.ok(write > 15 && write <= MAX_WRITES, `commit points covered: ${seen.join(", ")}`);
  });
});
