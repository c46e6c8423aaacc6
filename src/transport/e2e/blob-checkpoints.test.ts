/**
 * Blob-backed checkpoints end to end (docs/protocol.md §2.9, §2.10, §3 step 6), over RunSSE +
 * BidiAppend and over the HTTP/2 `Run`: every checkpoint the client receives can be cloned as the
 * IDE clones a chat (fork, "duplicate chat": every turn, user message and step id found in its
 * store, testing/blob-clone.ts) at the moment it arrives; the next turn sends those ids back with
 * `pre_fetched_blobs` and goes on; a rewind is still told from them; a client that never confirms
 * a blob write, or refuses one, gets inline checkpoints and its turn completes.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fromBinary } from "@bufbuild/protobuf";
import {
  type ConversationStateStructure,
  ConversationTurnStructureSchema,
} from "../cursor/gen/agent/v1/conversation_state_pb.js";
import type { AgentServerMessage } from "../cursor/index.ts";
import { DEFAULT_SERVER_OPTIONS } from "../server.ts";
import {
  type BlobWriteAnswerer,
  type ClonedTurn,
  type CursorClient,
  cloneCheckpoint,
  toBlobKey,
} from "../testing/index.ts";
import { type Harness, MODEL, startHarness } from "./test-harness.ts";

const TRANSPORTS = ["1.1", "2"] as const;
/** The ack timeout of the fallback tests: short, the turn must still complete. */
const SHORT_TIMEOUT_MS = 300;

/** A client that clones every checkpoint the moment it arrives, as the IDE may at any time. */
function cloningClient(
  harness: Harness,
  httpVersion: "1.1" | "2",
  answerBlobWrite?: BlobWriteAnswerer,
): {
  readonly client: CursorClient;
  readonly clones: (ClonedTurn[] | Error)[];
  readonly messages: AgentServerMessage[];
} {
  const clones: (ClonedTurn[] | Error)[] = [];
  const messages: AgentServerMessage[] = [];
  let store: ReadonlyMap<string, Uint8Array> = new Map();
  const client = harness.client({
    httpVersion,
    ...(answerBlobWrite === undefined ? {} : { answerBlobWrite }),
    onMessage(message) {
      messages.push(message);
      if (message.message.case !== "conversationCheckpointUpdate") return;
      try {
        clones.push(cloneCheckpoint(message.message.value, store));
      } catch (error) {
        clones.push(error as Error);
      }
    },
  });
  store = client.blobs;
  return { client, clones, messages };
}

function checkpointsOf(messages: readonly AgentServerMessage[]): ConversationStateStructure[] {
  return messages.flatMap((message) =>
    message.message.case === "conversationCheckpointUpdate" ? [message.message.value] : [],
  );
}

function setBlobsOf(messages: readonly AgentServerMessage[]) {
  return messages.flatMap((message) =>
    message.message.case === "kvServerMessage" &&
    message.message.value.message.case === "setBlobArgs"
      ? [message.message.value.message.value]
      : [],
  );
}

function kindsOf(messages: readonly AgentServerMessage[]): string[] {
  return messages.map((message) => {
    const branch = message.message;
    if (branch.case === "interactionUpdate") return branch.value.message.case ?? "?";
    return branch.case ?? "?";
  });
}

/** The request id of an inline turn (the fallback form). */
function inlineRequestID(turn: Uint8Array): string | undefined {
  const decoded = fromBinary(ConversationTurnStructureSchema, turn).turn;
  assert.equal(decoded.case, "agentConversationTurn");
  return decoded.value.requestId;
}

const TOOL_TURN = [
  {
    text: "Reading a.",
    toolCalls: [{ id: "call_a", name: "read_file", arguments: { path: "a.txt" } }],
  },
  {
    text: "Reading b.",
    toolCalls: [{ id: "call_b", name: "read_file", arguments: { path: "b.txt" } }],
  },
  { text: "a says alpha, b says beta." },
];

for (const httpVersion of TRANSPORTS) {
  describe(`blob-backed checkpoints over HTTP/${httpVersion}`, () => {
    let harness: Harness;
    before(async () => {
      harness = await startHarness({
        server: {
          stream: { ...DEFAULT_SERVER_OPTIONS.stream, blobWriteTimeoutMs: SHORT_TIMEOUT_MS },
        },
      });
      writeFileSync(join(harness.workspace, "a.txt"), "alpha\n");
      writeFileSync(join(harness.workspace, "b.txt"), "beta\n");
    });
    after(() => harness.close());

    test("every checkpoint of a turn with tool calls resolves in the client's store when it arrives; the next turn sends the ids back", async () => {
      const id = `blobs-${httpVersion}-1`;
      const { client, clones, messages } = cloningClient(harness, httpVersion);
      harness.reply(...TOOL_TURN);
      const first = client.startTurn({ conversationId: id, text: "read both", modelId: MODEL });
      const result = await first.done;
      assert.equal(result.error, undefined);
      assert.equal(result.view.text, "Reading a.Reading b.a says alpha, b says beta.");

      const checkpoints = checkpointsOf(result.messages);
      assert.ok(checkpoints.length >= 3, `checkpoints: ${checkpoints.length}`);
      for (const checkpoint of checkpoints) {
        assert.ok(
          checkpoint.turns.every((turn) => turn.length === 32),
          "turns are blob ids",
        );
      }
      // Each clone at the moment its checkpoint arrived: nothing missing, nothing refused.
      for (const clone of clones) assert.ok(!(clone instanceof Error), String(clone));
      const last = clones.at(-1) as ClonedTurn[];
      // The request id the server gave the turn (HTTP/2's Run has none of the client's).
      const requestOf = (text: string) => {
        const started = harness.logs.filter(
          (line) => line.message === "turn started" && line.fields.conversation === id,
        );
        return started[text === "read both" ? 0 : 1]?.fields.request;
      };
      assert.equal(typeof requestOf("read both"), "string");
      assert.deepEqual(last, [
        { requestID: requestOf("read both"), userText: "read both", steps: last[0]?.steps ?? -1 },
      ]);
      assert.ok((last[0]?.steps ?? 0) >= 4, "both tool calls and the texts are steps");
      // Mid-turn checkpoints are blob-backed too: the one while a tool call runs has fewer steps.
      assert.ok(
        clones.some(
          (clone) => !(clone instanceof Error) && (clone[0]?.steps ?? 0) < (last[0]?.steps ?? 0),
        ),
      );
      // Each blob written once on the stream, under the SHA-256 of its bytes.
      const writes = setBlobsOf(result.messages);
      const keys = writes.map((write) => Buffer.from(write.blobId).toString("hex"));
      assert.equal(new Set(keys).size, keys.length, "no blob written twice");
      for (const write of writes) {
        assert.equal(toBlobKey(write.blobData), Buffer.from(write.blobId).toString("hex"));
      }
      // The turn's end comes after its last checkpoint.
      const kinds = kindsOf(result.messages);
      assert.equal(
        kinds.lastIndexOf("conversationCheckpointUpdate") < kinds.indexOf("turnEnded"),
        true,
      );
      assert.equal(kinds.at(-1), "turnEnded");
      assert.equal(
        harness.logs.filter((line) => line.level === "warn" && /blob/.test(line.message)).length,
        0,
      );

      // The next turn: the checkpoint with ids and the blobs it references.
      harness.reply({ text: "Still alpha and beta." });
      const writesBefore = messages.length;
      const second = client.startTurn({ conversationId: id, text: "again?", modelId: MODEL });
      assert.ok((second.runRequest.conversationState?.turns.length ?? 0) === 1);
      assert.ok(second.runRequest.preFetchedBlobs.length >= 6, "the turn, its user message, steps");
      const next = await second.done;
      assert.equal(next.error, undefined);
      assert.equal(next.view.text, "Still alpha and beta.");
      const cloned = cloneCheckpoint(
        next.messages
          .flatMap((m) =>
            m.message.case === "conversationCheckpointUpdate" ? [m.message.value] : [],
          )
          .at(-1) as ConversationStateStructure,
        client.blobs,
      );
      assert.deepEqual(
        cloned.map((turn) => [turn.requestID, turn.userText]),
        [
          [requestOf("read both"), "read both"],
          [requestOf("again?"), "again?"],
        ],
      );
      // The earlier turn's blobs are the client's already: not written again.
      const earlier = new Set(keys);
      for (const write of setBlobsOf(messages.slice(writesBefore))) {
        assert.ok(
          !earlier.has(Buffer.from(write.blobId).toString("hex")),
          "an earlier blob re-sent",
        );
      }
      // The model saw the first turn: its history went on.
      const body = harness.provider.requests.at(-1)?.body ?? "";
      assert.match(body, /read both/);
      assert.match(body, /alpha/);
    });

    test("a duplicated chat: the IDE's clone finds every blob, and the copy's first request goes on from the source", async () => {
      const id = `blobs-${httpVersion}-source`;
      const { client } = cloningClient(harness, httpVersion);
      harness.reply(...TOOL_TURN);
      await client.startTurn({ conversationId: id, text: "read both", modelId: MODEL }).done;
      const checkpoint = client.checkpoint(id);
      assert.ok(checkpoint !== undefined);
      // deepCloneComposer on the client: throws on any missing blob.
      assert.equal(cloneCheckpoint(checkpoint, client.blobs).length, 1);
      const copy = `blobs-${httpVersion}-copy`;
      harness.reply({ text: "copied" });
      const first = await client.startTurn({
        conversationId: copy,
        text: "and in the copy?",
        modelId: MODEL,
        checkpoint,
      }).done;
      assert.equal(first.error, undefined);
      assert.ok(
        harness.logs.some(
          (line) => line.message === "fork applied" && line.fields.conversation === copy,
        ),
        "the copy starts from the source's history",
      );
      assert.match(harness.provider.requests.at(-1)?.body ?? "", /a says alpha, b says beta/);
    });

    test("an edited earlier message is still a rewind when the checkpoint holds blob ids", async () => {
      const id = `blobs-${httpVersion}-rewind`;
      const { client } = cloningClient(harness, httpVersion);
      harness.reply(...TOOL_TURN);
      await client.startTurn({ conversationId: id, text: "A", messageId: "mA", modelId: MODEL })
        .done;
      const beforeB = client.checkpoint(id);
      assert.ok(beforeB?.turns.every((turn) => turn.length === 32));
      harness.reply({ text: "answer B" }, { text: "answer C" }, { text: "answer B2" });
      await client.startTurn({ conversationId: id, text: "B", messageId: "mB", modelId: MODEL })
        .done;
      await client.startTurn({ conversationId: id, text: "C", messageId: "mC", modelId: MODEL })
        .done;
      const edited = await client.startTurn({
        conversationId: id,
        text: "B2",
        messageId: "mB",
        modelId: MODEL,
        checkpoint: beforeB ?? null,
      }).done;
      assert.equal(edited.error, undefined);
      const applied = harness.logs.find(
        (line) => line.message === "rewind applied" && line.fields.from === id,
      );
      assert.deepEqual(
        { fromTurn: applied?.fields.fromTurn, toTurn: applied?.fields.toTurn },
        { fromTurn: 3, toTurn: 1 },
      );
      const body = harness.provider.requests.at(-1)?.body ?? "";
      assert.doesNotMatch(body, /answer C/);
      assert.match(body, /B2/);
    });

    test("a client that never confirms a blob write gets inline checkpoints within the timeout", async () => {
      const id = `blobs-${httpVersion}-silent`;
      const { client, messages } = cloningClient(harness, httpVersion, () => "ignore");
      harness.reply(...TOOL_TURN);
      const warnsBefore = harness.logs.filter((line) => line.level === "warn").length;
      const turn = client.startTurn({ conversationId: id, text: "read both", modelId: MODEL });
      const result = await turn.done;
      assert.equal(result.error, undefined);
      assert.equal(result.view.text, "Reading a.Reading b.a says alpha, b says beta.");
      const checkpoints = checkpointsOf(messages);
      assert.ok(checkpoints.length >= 1);
      const ids = new Set<string | undefined>();
      for (const checkpoint of checkpoints) {
        ids.add(inlineRequestID(checkpoint.turns.at(-1) ?? new Uint8Array()));
      }
      assert.equal(ids.size, 1, "every checkpoint holds the turn inline");
      assert.ok(([...ids][0] ?? "").length > 0);
      // Only the first checkpoint's blobs were offered: later ones went inline at once.
      const firstCheckpoint = kindsOf(messages).indexOf("conversationCheckpointUpdate");
      assert.equal(setBlobsOf(messages.slice(firstCheckpoint)).length, 0);
      const warns = harness.logs
        .filter((line) => line.level === "warn")
        .slice(warnsBefore)
        .filter((line) => line.fields.conversation === id);
      assert.equal(warns.length, 1, JSON.stringify(warns));
      assert.equal(warns[0]?.fields.reason, "timeout");
      // The inline checkpoint works for the next turn.
      harness.reply({ text: "next" });
      const next = await client.startTurn({ conversationId: id, text: "more", modelId: MODEL })
        .done;
      assert.equal(next.view.text, "next");
    });

    test("a client that refuses a blob write gets inline checkpoints, said once", async () => {
      const id = `blobs-${httpVersion}-refused`;
      const { client, messages } = cloningClient(harness, httpVersion, () => ({
        error: "store full",
      }));
      harness.reply(...TOOL_TURN);
      const turn = client.startTurn({ conversationId: id, text: "read both", modelId: MODEL });
      const result = await turn.done;
      assert.equal(result.error, undefined);
      const ids = new Set<string | undefined>();
      for (const checkpoint of checkpointsOf(messages)) {
        ids.add(inlineRequestID(checkpoint.turns.at(-1) ?? new Uint8Array()));
      }
      assert.equal(ids.size, 1, "every checkpoint holds the turn inline");
      assert.ok(([...ids][0] ?? "").length > 0);
      const warns = harness.logs.filter(
        (line) => line.level === "warn" && line.fields.conversation === id,
      );
      assert.equal(warns.length, 1);
      assert.equal(warns[0]?.fields.reason, "error");
      assert.equal(warns[0]?.fields.detail, "store full");
    });
  });
}
