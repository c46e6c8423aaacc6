/**
 * Read-only tool calls of one response run on the client at once (src/loop/tool-batch.ts), end to
 * end through the real server: the test client holds every read until all of them have arrived
 * (so a server that sent them one at a time would never finish), then answers them in an order
 * unlike the model's. The call with effects after them goes out only once they are answered; the
 * next request carries the results in the model's order, byte for byte the same as a run where
 * the client answers in the model's order.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Code } from "@connectrpc/connect";
import type { ExecServerMessage } from "../cursor/gen/agent/v1/exec_pb.js";
import type { TurnResult } from "../testing/index.ts";
import { createGate, type Harness, MODEL, startHarness } from "./test-harness.ts";

const READS = ["a.ts", "b.ts", "c.ts", "d.ts"];

/** The model: four reads and a grep (read-only), then a write (effects); then a final answer. */
function script(harness: Harness): void {
  harness.reply(
    {
      text: "Reading.",
      toolCalls: [
        ...READS.map((path, i) => ({ id: `call_r${i}`, name: "read_file", arguments: { path } })),
        { id: "call_grep", name: "grep", arguments: { pattern: "export" } },
        { id: "call_write", name: "write_file", arguments: { path: "out.txt", content: "ok\n" } },
      ],
    },
    { text: "Done." },
  );
}

interface Arrival {
  readonly kind: string;
  /** How many read-only execs had been answered when this exec arrived. */
  readonly answeredBefore: number;
}

/**
 * A client that gates the five read-only execs until all five arrived, then releases them in
 * `order` (indices into arrival order); other execs run at once.
 */
async function runTurn(
  harness: Harness,
  conversationId: string,
  order: readonly number[],
): Promise<{ result: TurnResult; arrivals: Arrival[] }> {
  const arrivals: Arrival[] = [];
  const held: { exec: ExecServerMessage; release: () => void }[] = [];
  let answered = 0;
  const client = harness.client({
    onExec: async (exec) => {
      const kind = exec.message.case ?? "";
      arrivals.push({ kind, answeredBefore: answered });
      if (kind !== "readArgs" && kind !== "grepArgs") return undefined;
      await new Promise<void>((release) => {
        held.push({ exec, release });
        if (held.length === READS.length + 1) {
          for (const index of order) {
            answered += 1;
            held[index]?.release();
          }
        }
      });
      return undefined; // run it for real
    },
  });
  const result = await client.startTurn({ conversationId, text: "Read them.", modelId: MODEL })
    .done;
  return { result, arrivals };
}

describe("parallel read-only tool calls end to end", () => {
  let harness: Harness;
  let shuffled: { result: TurnResult; arrivals: Arrival[] };
  let inOrder: { result: TurnResult; arrivals: Arrival[] };

  before(async () => {
    harness = await startHarness();
    for (const path of READS)
      writeFileSync(join(harness.workspace, path), `export const ${path[0]} = 1;\n`);
    script(harness);
    shuffled = await runTurn(harness, "c0a1b2c3-0000-4000-8000-000000000001", [4, 2, 0, 3, 1]);
    script(harness);
    inOrder = await runTurn(harness, "c0a1b2c3-0000-4000-8000-000000000002", [0, 1, 2, 3, 4]);
  });
  after(() => harness.close());

  test("the turns end normally", () => {
    for (const run of [shuffled, inOrder]) {
      assert.equal(run.result.error, undefined);
      assert.equal(run.result.view.text, "Reading.Done.");
    }
  });

  test("all read-only execs were in flight at once; the write came after their answers", () => {
    const kinds = shuffled.arrivals.map((arrival) => arrival.kind);
    assert.deepEqual(kinds, [
      "readArgs",
      "readArgs",
      "readArgs",
      "readArgs",
      "grepArgs",
      "writeArgs",
    ]);
    assert.ok(shuffled.arrivals.slice(0, 5).every((arrival) => arrival.answeredBefore === 0));
    assert.equal(shuffled.arrivals[5]?.answeredBefore, 5);
  });

  test("each call has its own start and completion; completions follow the client's order", () => {
    const started = shuffled.result.view.toolCallsStarted.map((call) => call.callId);
    assert.deepEqual(started, [
      "call_r0",
      "call_r1",
      "call_r2",
      "call_r3",
      "call_grep",
      "call_write",
    ]);
    const completed = shuffled.result.view.toolCallsCompleted.map((call) => call.callId);
    assert.deepEqual(new Set(completed.slice(0, 5)), new Set(started.slice(0, 5)));
    assert.equal(completed[5], "call_write");
    // Every read-only call started before any of them completed.
    const sequence = shuffled.result.view.kinds.filter((kind) =>
      ["toolCallStarted", "toolCallCompleted"].includes(kind),
    );
    assert.deepEqual(sequence.slice(0, 5), Array(5).fill("toolCallStarted"));
  });

  test("the next request has the results in the model's order, whatever order they came in", () => {
    const requests = harness.provider.requests;
    assert.equal(requests.length, 4);
    const toolIDs = (body: string) =>
      (JSON.parse(body).messages as { role: string; tool_call_id?: string }[])
        .filter((message) => message.role === "tool")
        .map((message) => message.tool_call_id);
    const expected = ["call_r0", "call_r1", "call_r2", "call_r3", "call_grep", "call_write"];
    assert.deepEqual(toolIDs(requests[1]?.body ?? ""), expected);
    assert.deepEqual(toolIDs(requests[3]?.body ?? ""), expected);
    // Byte for byte the same messages as the run answered in order (the conversations differ
    // only in id, which is not in the body).
    const messages = (body: string) => JSON.stringify(JSON.parse(body).messages);
    assert.equal(messages(requests[1]?.body ?? ""), messages(requests[3]?.body ?? ""));
  });
});

describe("cancel while a batch of reads runs", () => {
  test("every exec is aborted, every call closed, and each gets its not-run result in order", async () => {
    const harness = await startHarness();
    try {
      script(harness);
      const held: ExecServerMessage[] = [];
      const allHeld = createGate();
      const never = createGate();
      const client = harness.client({
        onExec: async (exec) => {
          if (exec.message.case !== "readArgs" && exec.message.case !== "grepArgs")
            return undefined;
          held.push(exec);
          if (held.length === READS.length + 1) allHeld.open();
          await never.promise; // the client does not answer before the user cancels
          return undefined;
        },
      });
      const turn = client.startTurn({
        conversationId: "c0a1b2c3-0000-4000-8000-000000000003",
        text: "Read them.",
        modelId: MODEL,
      });
      await allHeld.promise;
      await turn.cancel("stop");
      // The client's held execs may finish now (the turn waits for its execs to settle); their
      // late results are for calls the cancel already closed.
      never.open();
      const result = await turn.done;
      assert.equal(result.error?.code, Code.Canceled);
      // One abort per exec in flight, and every started call completed (as failed) in the UI.
      const aborted = result.messages.flatMap((message) =>
        message.message.case === "execServerControlMessage" &&
        message.message.value.message.case === "abort"
          ? [message.message.value.message.value.id]
          : [],
      );
      assert.deepEqual(aborted.sort(), held.map((exec) => exec.id).sort());
      assert.equal(result.view.toolCallsCompleted.length, READS.length + 1);
      const loaded = await harness.store.load("c0a1b2c3-0000-4000-8000-000000000003");
      const results = (loaded?.state.messages ?? []).flatMap((message) =>
        message.role === "toolResult" ? [[message.toolCallId, message.isError] as const] : [],
      );
      assert.deepEqual(results, [
        ["call_r0", true],
        ["call_r1", true],
        ["call_r2", true],
        ["call_r3", true],
        ["call_grep", true],
        ["call_write", true],
      ]);
    } finally {
      await harness.close();
    }
  });
});
