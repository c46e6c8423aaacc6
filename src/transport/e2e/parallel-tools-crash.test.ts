/**
 * A batch of read-only tool calls survives a crash (README "Crashes and tool calls", per call):
 * the real server in its own process is killed while the client holds three parallel reads, then
 * restarted on the same database and the client reconnects. Each read is asked again on its own
 * (reads may repeat), the write after them runs exactly once, and the turn completes with every
 * result in the model's order.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import type { RecordedRequest } from "../../llm/testing/fake-provider.ts";
import type { ExecServerMessage } from "../cursor/gen/agent/v1/exec_pb.js";
import { createGate, MODEL, startHarness } from "./test-harness.ts";

const CONVERSATION = "parallel-crash";
const READS = ["a.ts", "b.ts", "c.ts"];

/** The model's next step from the request alone, so a call repeated after a restart fits. */
function answer(request: RecordedRequest) {
  const body = JSON.parse(request.body) as { messages: { role: string }[] };
  const results = body.messages.filter((message) => message.role === "tool").length;
  const reply =
    results === 0
      ? {
          toolCalls: [
            ...READS.map((path, i) => ({
              id: `call_r${i}`,
              name: "read_file",
              arguments: { path },
            })),
            { id: "call_w", name: "write_file", arguments: { path: "out.txt", content: "ok\n" } },
          ],
        }
      : { text: "All done." };
  return { type: "sse", body: toChatCompletionSse(reply) } as const;
}

test("killed while the client holds a batch of reads: each is asked again, the write runs once", {
  timeout: 120_000,
}, async () => {
  const harness = await startHarness({ mode: "process", process: { lateResultGraceMs: 15_000 } });
  try {
    for (const path of READS) writeFileSync(join(harness.workspace, path), `// ${path}\n`);
    harness.provider.answer(answer);
    const runs = { readArgs: 0, writeArgs: 0 };
    const allHeld = createGate();
    const release = createGate();
    const client = harness.client({
      timeoutMs: 60_000,
      onExec: async (exec: ExecServerMessage) => {
        const kind = exec.message.case;
        if (kind !== "readArgs" && kind !== "writeArgs") return undefined;
        runs[kind] += 1;
        if (kind === "readArgs" && runs.readArgs <= READS.length) {
          // The first three reads are all in flight at once; hold them across the crash.
          if (runs.readArgs === READS.length) allHeld.open();
          await release.promise;
        }
        return undefined; // run it for real
      },
    });
    const turn = client.startTurn({ conversationId: CONVERSATION, text: "go", modelId: MODEL });
    const lost = turn.runSseLost();
    await allHeld.promise;
    await harness.restart();
    await lost;
    release.open();
    turn.reconnectRunSse();
    const result = await turn.done;

    assert.equal(result.error, undefined, result.error?.message);
    assert.equal(runs.writeArgs, 1, "the write ran exactly once");
    assert.ok(runs.readArgs >= READS.length, "every read ran");
    const loaded = await harness.store.load(CONVERSATION);
    const results = (loaded?.state.messages ?? []).flatMap((message) =>
      message.role === "toolResult" ? [[message.toolCallId, message.isError] as const] : [],
    );
    assert.deepEqual(results, [
      ["call_r0", false],
      ["call_r1", false],
      ["call_r2", false],
      ["call_w", false],
    ]);
    const last = loaded?.state.messages.at(-1);
    assert.ok(last?.role === "assistant");
  } finally {
    await harness.close();
  }
});
