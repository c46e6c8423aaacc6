/**
 * `/summarize` from another stream while a batch of read-only calls is half answered, through the
 * real server: the summarize ends at once with a clear error, and the running turn stays on its
 * own stream — its remaining result is applied, the next model call streams to it and the turn
 * ends normally (runner.ts: a refused input leaves the turn with the output it had).
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { ConversationActionSchema } from "../cursor/gen/agent/v1/conversation_action_pb.js";
import type { TurnResult } from "../testing/index.ts";
import { type Harness, MODEL, startHarness } from "./test-harness.ts";

const CONVERSATION = "5d4c3b2a-7777-4a5b-8c6d-7e8f9a0b1c2d";

let harness: Harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness.close());

test("a summarize refused during a batch leaves the batch's turn running on its stream", async () => {
  for (const path of ["a.ts", "b.ts"]) writeFileSync(join(harness.workspace, path), "x\n");
  harness.reply(
    {
      text: "Reading.",
      toolCalls: ["a.ts", "b.ts"].map((path, i) => ({
        id: `call_${i}`,
        name: "read_file",
        arguments: { path },
      })),
    },
    { text: "Both read." },
  );
  let summarize: TurnResult | null = null;
  const held: (() => void)[] = [];
  const client = harness.client({
    onExec: async (exec) => {
      if (exec.message.case !== "readArgs") return undefined;
      await new Promise<void>((release) => {
        held.push(release);
        if (held.length < 2) return;
        // Both reads are out: answer one, summarize from another stream, then answer the other.
        held[0]?.();
        const other = harness.client();
        const request = other.runRequest({
          conversationId: CONVERSATION,
          text: "",
          modelId: MODEL,
        });
        request.action = create(ConversationActionSchema, {
          action: { case: "summarizeAction", value: {} },
        });
        void other.startTurn(request).done.then((result) => {
          summarize = result;
          held[1]?.();
        });
      });
      return undefined; // run it for real
    },
  });
  const turn = await client.startTurn({
    conversationId: CONVERSATION,
    text: "Read a and b.",
    modelId: MODEL,
  }).done;
  const refused = summarize as TurnResult | null;
  assert.equal(refused?.error?.code, Code.InvalidArgument);
  assert.match(refused?.error?.message ?? "", /a turn is running/);
  assert.equal(turn.error, undefined, turn.error?.message);
  assert.match(turn.view.text, /Both read\./);
});
