/**
 * A turn that ended badly (the provider failed it, or the user canceled it) ends the same way for
 * a client that comes back to it late: its RunSSE reconnect after a restart (the server picks the
 * stream up from its saved run request) or a resume request. The turn's record keeps how it
 * ended (loop/turn-record.ts), so the late stream gets the error the turn's own stream got
 * (docs/wire-errors.md), not a normal end that reads as success.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import {
  AgentClientMessageSchema,
  type AgentServerMessage,
  AgentService,
} from "../cursor/gen/agent/v1/agent_stream_pb.js";
import { ConversationActionSchema } from "../cursor/gen/agent/v1/conversation_action_pb.js";
import type { ConversationStateStructure } from "../cursor/gen/agent/v1/conversation_state_pb.js";
import {
  GetBlobResultSchema,
  type KvClientMessage,
  SetBlobResultSchema,
} from "../cursor/gen/agent/v1/kv_pb.js";
import { BidiAppendRequestSchema, BidiService } from "../cursor/gen/aiserver/v1/bidi_pb.js";
import { ErrorDetailsSchema } from "../cursor/gen/aiserver/v1/error_details_pb.js";
import { cloneCheckpoint } from "../testing/index.ts";
import { createGate, type Harness, MODEL, readRunSse, startHarness } from "./test-harness.ts";

/** What the client sees of an error: code, message and the ErrorDetails it renders. */
function shown(error: ConnectError | undefined) {
  if (error === undefined) return undefined;
  const details = error.findDetails(ErrorDetailsSchema)[0];
  return {
    code: error.code,
    message: error.rawMessage,
    details:
      details === undefined
        ? undefined
        : {
            error: details.error,
            title: details.details?.title,
            detail: details.details?.detail,
            isRetryable: details.details?.isRetryable,
          },
  };
}

function isTurnEnded(message: AgentServerMessage): boolean {
  return (
    message.message.case === "interactionUpdate" &&
    message.message.value.message.case === "turnEnded"
  );
}

/** A provider error that is not retried (400): the turn fails at once. */
const REFUSED = {
  type: "status",
  status: 400,
  body: '{"error":{"message":"Invalid request: this model refuses the prompt","type":"invalid_request_error"}}',
} as const;

describe("a late stream of a turn that ended badly, after a restart", () => {
  let harness: Harness;
  afterEach(async () => harness.close());

  test("a failed turn (provider error): the RunSSE reconnect ends with the turn's error", {
    timeout: 60_000,
  }, async () => {
    // Inline checkpoints: the late stream is read raw (readRunSse), by no client that would
    // answer the blob writes of a blob-backed one (e2e/blob-checkpoints.test.ts covers those).
    harness = await startHarness({
      mode: "process",
      server: { runSseContentType: "connect" },
      process: { blobCheckpoints: false },
    });
    harness.provider.reply(REFUSED);
    const client = harness.client();
    const first = client.startTurn({
      conversationId: "late-end-failed",
      text: "Hello",
      modelId: MODEL,
    });
    const result = await first.done;
    assert.equal(result.error?.code, Code.Unavailable, String(result.error));
    assert.ok(shown(result.error)?.details !== undefined);

    await harness.restart(); // SIGKILL
    const late = await readRunSse(harness, first.requestId);
    assert.deepEqual(shown(late.error), shown(result.error));
    assert.deepEqual(late.kinds, ["conversationCheckpointUpdate", "interactionUpdate"]);
  });

  test("a canceled turn: the RunSSE reconnect ends canceled, as the turn's stream did", {
    timeout: 60_000,
  }, async () => {
    // Inline checkpoints: the late stream is read raw (readRunSse), by no client that would
    // answer the blob writes of a blob-backed one (e2e/blob-checkpoints.test.ts covers those).
    harness = await startHarness({
      mode: "process",
      server: { runSseContentType: "connect" },
      process: { blobCheckpoints: false },
    });
    writeFileSync(join(harness.workspace, "notes.txt"), "water the plants\n");
    harness.reply({
      text: "Reading.",
      toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "notes.txt" } }],
    });
    // The client holds the tool's answer; the user cancels meanwhile.
    const gate = createGate();
    const client = harness.client({
      onExec: async () => {
        await gate.promise;
        return undefined;
      },
    });
    try {
      const first = client.startTurn({
        conversationId: "late-end-canceled",
        text: "What do my notes say?",
        modelId: MODEL,
      });
      await first.waitFor((m) => m.message.case === "execServerMessage");
      await first.cancel("stop, I changed my mind");
      await first.waitFor((m) => m.message.case === "interactionUpdate" && isTurnEnded(m));
      gate.open(); // the client finishes its exec (its answer is refused: the turn is over)
      const result = await first.done;
      assert.equal(result.error?.code, Code.Canceled, String(result.error));
      assert.equal(
        (await harness.store.load("late-end-canceled"))?.state.status,
        "canceled",
        "the cancel is committed before the restart",
      );

      await harness.restart(); // SIGKILL
      const late = await readRunSse(harness, first.requestId);
      assert.deepEqual(shown(late.error), shown(result.error));
      assert.deepEqual(late.kinds, ["conversationCheckpointUpdate", "interactionUpdate"]);
    } finally {
      gate.open();
    }
  });
});

/**
 * Reads a RunSSE for `requestId` to its end as the IDE does after a restart: every blob write is
 * stored in `store` and confirmed with a BidiAppend (`set_blob_result{}`), and every blob read
 * answered from it (`get_blob_result`), from seqno 1 (the server takes a picked-up stream's next
 * seqno as it comes).
 */
async function readRunSseAnsweringBlobs(
  harness: Harness,
  requestId: string,
  store: Map<string, Uint8Array>,
): Promise<{ kinds: string[]; messages: AgentServerMessage[]; error: ConnectError | undefined }> {
  const transport = createConnectTransport({ baseUrl: harness.server.url, httpVersion: "1.1" });
  const bidi = createClient(BidiService, transport);
  const kinds: string[] = [];
  const messages: AgentServerMessage[] = [];
  const answers: Promise<unknown>[] = [];
  let seqno = 1;
  try {
    for await (const message of createClient(AgentService, transport).runSSE(
      { requestId },
      { timeoutMs: 20_000 },
    )) {
      kinds.push(message.message.case ?? "");
      messages.push(message);
      const kv = message.message.case === "kvServerMessage" ? message.message.value : undefined;
      if (kv === undefined) continue;
      let result: KvClientMessage["message"];
      if (kv.message.case === "setBlobArgs") {
        const { blobId, blobData } = kv.message.value;
        store.set(Buffer.from(blobId).toString("hex"), blobData);
        result = { case: "setBlobResult", value: create(SetBlobResultSchema) };
      } else if (kv.message.case === "getBlobArgs") {
        const data = store.get(Buffer.from(kv.message.value.blobId).toString("hex"));
        result = {
          case: "getBlobResult",
          value: create(
            GetBlobResultSchema,
            data === undefined ? { error: { message: "blob not found" } } : { blobData: data },
          ),
        };
      } else continue;
      const answer = create(AgentClientMessageSchema, {
        message: { case: "kvClientMessage", value: { id: kv.id, message: result } },
      });
      answers.push(
        bidi.bidiAppend(
          create(BidiAppendRequestSchema, {
            requestId: { requestId },
            appendSeqno: BigInt(seqno++),
            data: Buffer.from(toBinary(AgentClientMessageSchema, answer)).toString("hex"),
          }),
        ),
      );
    }
    await Promise.all(answers);
    return { kinds, messages, error: undefined };
  } catch (error) {
    return { kinds, messages, error: ConnectError.from(error) };
  }
}

describe("a late stream of a failed turn after a restart, blob-backed checkpoints", () => {
  let harness: Harness;
  afterEach(async () => harness.close());

  test("a reader that answers the blob reads and writes gets the checkpoint in one round trip, then the turn's error; the checkpoint clones", {
    timeout: 60_000,
  }, async () => {
    harness = await startHarness({ mode: "process", server: { runSseContentType: "connect" } });
    harness.provider.reply(REFUSED);
    const client = harness.client();
    const first = client.startTurn({
      conversationId: "late-end-failed-blobs",
      text: "Hello",
      modelId: MODEL,
    });
    const result = await first.done;
    assert.equal(result.error?.code, Code.Unavailable, String(result.error));
    const written = client.checkpoint("late-end-failed-blobs")?.turns.at(-1);
    assert.equal(written?.length, 32, "the client holds a checkpoint of the turn, blob form");
    // Its row is written on a later turn of the server's event loop, awaited by nothing the
    // client sees (turn-blob-origins.ts): the kill comes once it is in the store.
    for (let tries = 0; (await harness.store.findTurnBlobsOf(first.requestId)).length === 0; ) {
      assert.ok(tries++ < 500, "the turn blob is recorded");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }

    await harness.restart(); // SIGKILL
    const store = new Map(client.blobs);
    const late = await readRunSseAnsweringBlobs(harness, first.requestId, store);
    assert.deepEqual(shown(late.error), shown(result.error));
    // The turn's first stream saved a request whose checkpoint does not hold the turn: the
    // turn's last checkpoint before the restart is read back from the client (one blob read),
    // and the late checkpoint is that one's turn blob, with nothing written again.
    assert.deepEqual(late.kinds, [
      "kvServerMessage",
      "conversationCheckpointUpdate",
      "interactionUpdate",
    ]);
    const read = late.messages[0]?.message.value;
    assert.ok(read?.$typeName === "agent.v1.KvServerMessage");
    assert.equal(read.message.case, "getBlobArgs");
    const checkpoint = late.messages[1]?.message.value as ConversationStateStructure;
    assert.deepEqual(checkpoint.turns, [written], "the turn's entry is the client's turn blob");
    assert.deepEqual(
      cloneCheckpoint(checkpoint, store).map((turn) => [turn.requestID, turn.userText]),
      [[first.requestId, "Hello"]],
    );
  });
});

describe("a resume request after a turn that failed", () => {
  let harness: Harness;
  afterEach(async () => harness.close());

  test("ends with the turn's error, without a checkpoint", { timeout: 30_000 }, async () => {
    harness = await startHarness({ mode: "in-process" });
    harness.provider.reply(REFUSED);
    const client = harness.client();
    const conversationId = "late-end-resume";
    const first = await client.startTurn({ conversationId, text: "Hello", modelId: MODEL }).done;
    assert.equal(first.error?.code, Code.Unavailable, String(first.error));
    const resumed = await client.startTurn(
      client.runRequest({
        conversationId,
        text: "",
        modelId: MODEL,
        edit: (request) => {
          request.action = create(ConversationActionSchema, {
            action: { case: "resumeAction", value: {} },
          });
        },
      }),
    ).done;
    assert.deepEqual(shown(resumed.error), shown(first.error));
    assert.equal(resumed.view.checkpoints, 0);
    assert.ok(resumed.view.kinds.includes("turnEnded"));
  });
});
