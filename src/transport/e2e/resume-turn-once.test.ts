/**
 * A turn carried on by a resume stream (a resume request after a restart; a resume that takes the
 * turn over from a stream nobody reads) is listed once in the client's checkpoint, with its user
 * message and all its steps in order: the ones the client's checkpoint held when it resumed (the
 * resume request's `conversation_state`), then the resume stream's (docs/protocol.md "Resuming a
 * turn"). Every checkpoint the client receives clones as the IDE clones a chat
 * (testing/blob-clone.ts), and the blobs the client already had are not written again.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, test } from "node:test";
import { create, fromBinary } from "@bufbuild/protobuf";
import { ConversationActionSchema } from "../cursor/gen/agent/v1/conversation_action_pb.js";
import {
  type ConversationStateStructure,
  ConversationStepSchema,
  ConversationTurnStructureSchema,
} from "../cursor/gen/agent/v1/conversation_state_pb.js";
import { UserMessageSchema } from "../cursor/gen/agent/v1/user_message_pb.js";
import type { AgentServerMessage } from "../cursor/index.ts";
import { DEFAULT_SERVER_OPTIONS } from "../server.ts";
import { type CursorClient, cloneCheckpoint, type Turn } from "../testing/index.ts";
import { runTurn, turn } from "./provider-turns.ts";
import { createGate, type Harness, readRunSse, startHarness } from "./test-harness.ts";

const GRACE_MS = 300;

/** What the client's store says a blob-form turn holds: request id, user text, steps. */
interface ReadTurn {
  readonly requestID: string;
  readonly userText: string;
  readonly steps: readonly string[];
}

function readTurns(
  checkpoint: ConversationStateStructure | undefined,
  store: ReadonlyMap<string, Uint8Array>,
): ReadTurn[] {
  assert.ok(checkpoint !== undefined, "the client has a checkpoint");
  // The IDE's clone first: it throws on a turn or user message blob the store does not have.
  cloneCheckpoint(checkpoint, store);
  const get = (id: Uint8Array): Uint8Array => {
    const bytes = store.get(Buffer.from(id).toString("hex"));
    assert.ok(bytes !== undefined);
    return bytes;
  };
  return checkpoint.turns.map((entry) => {
    const decoded = fromBinary(ConversationTurnStructureSchema, get(entry)).turn;
    assert.equal(decoded.case, "agentConversationTurn");
    const { requestId, userMessage, steps } = decoded.value;
    return {
      requestID: requestId ?? "",
      userText: fromBinary(UserMessageSchema, get(userMessage)).text,
      steps: steps.map((id) => {
        const step = fromBinary(ConversationStepSchema, get(id)).message;
        if (step.case === "assistantMessage") return `text:${step.value.text}`;
        if (step.case === "toolCall") return `tool:${step.value.tool.case ?? "?"}`;
        return step.case ?? "?";
      }),
    };
  });
}

const B_STEPS = ["text:Reading.", "tool:readToolCall", "text:Your notes: water the plants."];

/** A client whose every checkpoint is cloned against its store when it arrives. */
function cloningClient(
  harness: Harness,
  options: Partial<Parameters<Harness["client"]>[0]>,
): { client: CursorClient; clones: Error[]; messages: AgentServerMessage[] } {
  const clones: Error[] = [];
  const messages: AgentServerMessage[] = [];
  let store: ReadonlyMap<string, Uint8Array> = new Map();
  const client = harness.client({
    ...options,
    onMessage(message) {
      messages.push(message);
      if (message.message.case !== "conversationCheckpointUpdate") return;
      try {
        cloneCheckpoint(message.message.value, store);
      } catch (error) {
        clones.push(error as Error);
      }
    },
  });
  store = client.blobs;
  return { client, clones, messages };
}

/** A cloning client whose first exec waits for `gate`: the turn's first tool call stays running. */
function gatedClient(
  harness: Harness,
  options: Partial<Parameters<Harness["client"]>[0]> = {},
): ReturnType<typeof cloningClient> & { gate: ReturnType<typeof createGate> } {
  const gate = createGate();
  let asked = 0;
  const cloning = cloningClient(harness, {
    ...options,
    onExec: async () => {
      asked += 1;
      if (asked === 1) await gate.promise;
      return undefined;
    },
  });
  return { ...cloning, gate };
}

/** `withBlobs: false`: the checkpoint's blobs are not sent back (`pre_fetched_blobs` empty). */
const resumeRequest = (client: CursorClient, conversationId: string, withBlobs = true) =>
  client.runRequest({
    conversationId,
    text: "",
    modelId: "scripted",
    edit: (request) => {
      request.action = create(ConversationActionSchema, {
        action: { case: "resumeAction", value: {} },
      });
      if (!withBlobs) request.preFetchedBlobs = [];
    },
  });

/** Blob writes of `messages` (their hex ids). */
function writtenKeys(messages: readonly AgentServerMessage[]): string[] {
  return messages.flatMap((message) =>
    message.message.case === "kvServerMessage" &&
    message.message.value.message.case === "setBlobArgs"
      ? [Buffer.from(message.message.value.message.value.blobId).toString("hex")]
      : [],
  );
}

/** The kv ids of the blob writes `turn` got so far. */
function writtenIDs(turn: Turn): number[] {
  return turn.messages.flatMap((message) =>
    message.message.case === "kvServerMessage" &&
    message.message.value.message.case === "setBlobArgs"
      ? [message.message.value.id]
      : [],
  );
}

/** Blob reads (`get_blob_args`) of `messages` (their hex ids). */
function asksOf(messages: readonly AgentServerMessage[]): string[] {
  return messages.flatMap((message) =>
    message.message.case === "kvServerMessage" &&
    message.message.value.message.case === "getBlobArgs"
      ? [Buffer.from(message.message.value.message.value.blobId).toString("hex")]
      : [],
  );
}

/** Turn A, then turn B whose read is held (`gate`) on the stream that started it. */
async function startB(
  harness: Harness,
  client: CursorClient,
  id: string,
  withBlobs = true,
): Promise<{ original: Turn; a: string; b: string }> {
  await runTurn(harness, client, turn(id, "A", "mA"), "answer A");
  const a = readTurns(client.checkpoint(id), client.blobs)[0]?.requestID ?? "";
  harness.reply(
    {
      text: "Reading.",
      toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "notes.txt" } }],
    },
    { text: "Your notes: water the plants." },
  );
  const request = client.runRequest(turn(id, "B", "mB"));
  // `withBlobs: false`: B's run request does not send A's turn blob back (pre_fetched_blobs).
  if (!withBlobs) request.preFetchedBlobs = [];
  const original = client.startTurn(request);
  await original.waitFor((m) => m.message.case === "conversationCheckpointUpdate");
  await original.waitFor((m) => m.message.case === "execServerMessage");
  // B's id as the client knows it (a Run's request id is the server's: x-request-id is RunSSE's).
  const [, b] = readTurns(client.checkpoint(id), client.blobs);
  assert.equal(b?.userText, "B");
  return { original, a, b: b?.requestID ?? "" };
}

/**
 * After B finished on `resumed`: the client's checkpoint holds A and B once each, B with its
 * user message and all its steps in order; every checkpoint cloned when it arrived; the resume
 * stream wrote none of the blobs the client already had for B.
 */
function assertTurnOnce(
  client: CursorClient,
  id: string,
  expected: { a: string; b: string },
  seen: { clones: Error[]; resumeMessages: readonly AgentServerMessage[]; before: Set<string> },
): void {
  assert.deepEqual(seen.clones, [], "every checkpoint clones when it arrives");
  assert.deepEqual(readTurns(client.checkpoint(id), client.blobs), [
    { requestID: expected.a, userText: "A", steps: ["text:answer A"] },
    { requestID: expected.b, userText: "B", steps: B_STEPS },
  ]);
  const again = writtenKeys(seen.resumeMessages).filter((key) => seen.before.has(key));
  assert.deepEqual(again, [], "no blob the client had is written again");
  // Each of the resume stream's checkpoints lists B once.
  for (const message of seen.resumeMessages) {
    if (message.message.case !== "conversationCheckpointUpdate") continue;
    const turns = readTurns(message.message.value, client.blobs);
    assert.deepEqual(
      turns.map((t) => t.requestID),
      [expected.a, expected.b],
    );
    assert.equal(turns[1]?.userText, "B");
    assert.deepEqual(turns[1]?.steps, B_STEPS.slice(0, turns[1]?.steps.length));
  }
}

describe("a turn carried on by a resume stream is listed once in the client's checkpoint", () => {
  let harness: Harness;
  afterEach(async () => harness.close());

  for (const way of [
    { name: "RunSSE + BidiAppend (HTTP/1.1)", client: { httpVersion: "1.1" as const } },
    {
      name: "RunSSE + BidiAppend over HTTP/2",
      client: { httpVersion: "2" as const, runSseOverHttp2: true },
    },
  ]) {
    test(`takeover after a reconnect, ${way.name}: B once, with all its steps in order`, {
      timeout: 60_000,
    }, async () => {
      harness = await startHarness({
        server: {
          runSseContentType: "connect",
          stream: { ...DEFAULT_SERVER_OPTIONS.stream, reconnectGraceMs: GRACE_MS },
        },
      });
      writeFileSync(join(harness.workspace, "notes.txt"), "water the plants\n");
      const id = `turn-once-takeover-${way.client.httpVersion}`;
      const { gate, client, clones, messages } = gatedClient(harness, way.client);
      try {
        const { original, a, b } = await startB(harness, client, id);
        await original.dropRunSse();
        await harness.untilLog("nobody reads the stream; waiting for a reconnect");
        const before = new Set(client.blobs.keys());
        const from = messages.length;
        const resumed = client.startTurn(resumeRequest(client, id), { timeoutMs: 30_000 });
        await resumed.waitFor((m) => m.message.case === "execServerMessage");
        gate.open();
        await original.close("the client moved to a resume stream").catch(() => {});
        const result = await resumed.done;
        assert.equal(result.error, undefined);
        assert.match(result.view.text, /Your notes: water the plants\.$/);
        assertTurnOnce(
          client,
          id,
          { a, b },
          { clones, resumeMessages: messages.slice(from), before },
        );
      } finally {
        gate.open();
      }
    });
  }

  test("takeover after steps the client never read (its RunSSE dropped mid-turn): the stream taken over hands its steps on; B once, whole, in order", {
    timeout: 60_000,
  }, async () => {
    harness = await startHarness({
      server: {
        runSseContentType: "connect",
        stream: { ...DEFAULT_SERVER_OPTIONS.stream, reconnectGraceMs: GRACE_MS },
      },
    });
    writeFileSync(join(harness.workspace, "a.txt"), "alpha\n");
    writeFileSync(join(harness.workspace, "notes.txt"), "water the plants\n");
    const id = "turn-once-handed";
    // The client stops reading the first stream right after the first read completed (the
    // window reloads): the completion's checkpoint and all after it never reach it.
    const { client: reading, clones } = cloningClient(harness, {});
    const isCompleted = (m: AgentServerMessage) =>
      m.message.case === "interactionUpdate" &&
      m.message.value.message.case === "toolCallCompleted";
    await runTurn(harness, reading, turn(id, "A", "mA"), "answer A");
    const [first] = readTurns(reading.checkpoint(id), reading.blobs);
    harness.reply(
      {
        text: "Reading a.",
        toolCalls: [{ id: "call_a", name: "read_file", arguments: { path: "a.txt" } }],
      },
      {
        text: "Reading notes.",
        toolCalls: [{ id: "call_n", name: "read_file", arguments: { path: "notes.txt" } }],
      },
      { text: "Your notes: water the plants." },
    );
    const original = reading.startTurn(turn(id, "B", "mB"));
    await original.dropRunSse(isCompleted);
    await harness.untilLog("nobody reads the stream; waiting for a reconnect");
    const [, b] = readTurns(reading.checkpoint(id), reading.blobs);
    assert.deepEqual(b?.steps, ["text:Reading a."], "the client has the first checkpoint only");
    // The same IDE resumes: its store and its last checkpoint.
    const resumed = reading.startTurn(resumeRequest(reading, id), { timeoutMs: 30_000 });
    const result = await resumed.done;
    await original.close("the client moved to a resume stream").catch(() => {});
    assert.equal(result.error, undefined);
    assert.match(result.view.text, /Your notes: water the plants\.$/);
    assert.deepEqual(clones, []);
    assert.deepEqual(readTurns(reading.checkpoint(id), reading.blobs), [
      { requestID: first?.requestID, userText: "A", steps: ["text:answer A"] },
      {
        requestID: b?.requestID,
        userText: "B",
        steps: [
          "text:Reading a.",
          "tool:readToolCall",
          "text:Reading notes.",
          "tool:readToolCall",
          "text:Your notes: water the plants.",
        ],
      },
    ]);
  });

  test("takeover, the resume request without the checkpoint's blobs: the turn blob is read from the checkpoints the stream taken over sent; B once", {
    timeout: 60_000,
  }, async () => {
    harness = await startHarness({
      server: {
        runSseContentType: "connect",
        stream: { ...DEFAULT_SERVER_OPTIONS.stream, reconnectGraceMs: GRACE_MS },
      },
    });
    writeFileSync(join(harness.workspace, "notes.txt"), "water the plants\n");
    const id = "turn-once-unsent";
    const { gate, client, clones, messages } = gatedClient(harness);
    try {
      const { original, a, b } = await startB(harness, client, id);
      await original.dropRunSse();
      await harness.untilLog("nobody reads the stream; waiting for a reconnect");
      const before = new Set(client.blobs.keys());
      const from = messages.length;
      const resumed = client.startTurn(resumeRequest(client, id, false), { timeoutMs: 30_000 });
      await resumed.waitFor((m) => m.message.case === "execServerMessage");
      gate.open();
      await original.close("the client moved to a resume stream").catch(() => {});
      assert.equal((await resumed.done).error, undefined);
      assertTurnOnce(
        client,
        id,
        { a, b },
        { clones, resumeMessages: messages.slice(from), before },
      );
      assert.ok(
        !harness.logs.some((line) => line.message.startsWith("the client's checkpoint ends with")),
      );
    } finally {
      gate.open();
    }
  });

  for (const withBlobs of [true, false]) {
    test(`the turn's own stream picked up after a restart (SIGKILL; its RunSSE reconnects)${withBlobs ? "" : ", its run request without A's turn blob"}: the turn's last checkpoint before the restart is read back from the client's store; B once, whole, in order`, {
      timeout: 90_000,
    }, async () => {
      harness = await startHarness({ mode: "process", server: { runSseContentType: "connect" } });
      writeFileSync(join(harness.workspace, "notes.txt"), "water the plants\n");
      const id = `turn-once-own-stream-${withBlobs}`;
      const { gate, client, clones, messages } = gatedClient(harness);
      try {
        // Without A's blob, the saved run request's last turn (A) is one the restarted process
        // cannot name: B's own turn blobs are still the ones read back.
        const { original, a, b } = await startB(harness, client, id, withBlobs);
        // The row of B's turn blob is written on a later turn of the server's event loop, awaited
        // by nothing the client sees (turn-blob-origins.ts: a crash in that moment loses it, which
        // is not what this test is about): the kill comes once it is in the store.
        for (let tries = 0; (await harness.store.findTurnBlobsOf(b)).length === 0; tries++) {
          assert.ok(tries < 500, "B's turn blob is recorded");
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        const lost = original.runSseLost();
        await harness.restart(); // SIGKILL
        await lost;
        const before = new Set(client.blobs.keys());
        const from = messages.length;
        // The answer to the dead server's exec reaches the new one late; the tool is asked again.
        gate.open();
        original.reconnectRunSse();
        const result = await original.done;
        assert.equal(result.error, undefined);
        assert.match(result.view.text, /Your notes: water the plants\.$/);
        const after = messages.slice(from);
        assertTurnOnce(client, id, { a, b }, { clones, resumeMessages: after, before });
        assert.deepEqual(
          asksOf(after).map((key) => before.has(key)),
          [true],
          "one read, of a turn blob the client has",
        );
      } finally {
        gate.open();
      }
    });
  }

  test("the turn's own stream picked up after a restart by the client's late exec answer (BidiAppend), its RunSSE reconnecting only after the read timeout: the read waits for a reader; B once, whole, in order", {
    timeout: 90_000,
  }, async () => {
    const readTimeoutMs = 200;
    harness = await startHarness({
      mode: "process",
      server: { runSseContentType: "connect" },
      process: { blobReadTimeoutMs: readTimeoutMs },
    });
    writeFileSync(join(harness.workspace, "notes.txt"), "water the plants\n");
    const id = "turn-once-own-stream-late-runsse";
    const { gate, client, clones, messages } = gatedClient(harness);
    try {
      const { original, a, b } = await startB(harness, client, id);
      for (let tries = 0; (await harness.store.findTurnBlobsOf(b)).length === 0; tries++) {
        assert.ok(tries < 500, "B's turn blob is recorded");
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const lost = original.runSseLost();
      await harness.restart(); // SIGKILL
      await lost;
      const before = new Set(client.blobs.keys());
      const from = messages.length;
      // The exec answer's BidiAppend picks the stream up (restore: the read is asked) while no
      // RunSSE is attached; accepted, the stream is restored.
      const answered = original.waitForSent((sent) => sent.kind.startsWith("exec:"), {
        from: original.sent.length,
      });
      gate.open();
      await answered;
      // Not synchronisation: time passes, several read timeouts, with nobody reading the stream.
      // A read timer running meanwhile would find nothing, and B would list only the steps made
      // since the restart.
      await new Promise((resolve) => setTimeout(resolve, 5 * readTimeoutMs));
      original.reconnectRunSse();
      const result = await original.done;
      assert.equal(result.error, undefined);
      const after = messages.slice(from);
      assertTurnOnce(client, id, { a, b }, { clones, resumeMessages: after, before });
      assert.deepEqual(
        asksOf(after).map((key) => before.has(key)),
        [true],
        "one read, of a turn blob the client has",
      );
    } finally {
      gate.open();
    }
  });

  for (const way of ["a resume request", "the turn's own stream reconnecting"] as const) {
    test(`a crash after a tool's step reached the client but before its result was saved, then ${way}: the step is listed once`, {
      timeout: 90_000,
    }, async () => {
      harness = await startHarness({
        mode: "process",
        server: { runSseContentType: "connect" },
        process: { stallToolResultSave: true, heartbeatMs: 100 },
      });
      writeFileSync(join(harness.workspace, "notes.txt"), "water the plants\n");
      const id = `turn-once-unsaved-${way === "a resume request" ? "resume" : "own"}`;
      const { client, clones, messages } = cloningClient(harness, {});
      await runTurn(harness, client, turn(id, "A", "mA"), "answer A");
      const a = readTurns(client.checkpoint(id), client.blobs)[0]?.requestID ?? "";
      harness.reply(
        {
          text: "Reading.",
          toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "notes.txt" } }],
        },
        { text: "Your notes: water the plants." },
      );
      const original = client.startTurn(turn(id, "B", "mB"));
      // The read completes on the client; the server's save of its result stalls (it begins as
      // the step is made). Then whatever the server sends with the step (a checkpoint listing it,
      // its blob writes) and after the client's answers to them has reached the client: each
      // time, a heartbeat (sent only after what was pushed before it) comes after it.
      const isHeartbeat = (m: AgentServerMessage) =>
        m.message.case === "interactionUpdate" && m.message.value.message.case === "heartbeat";
      await original.waitFor(
        (m) =>
          m.message.case === "interactionUpdate" &&
          m.message.value.message.case === "toolCallCompleted",
      );
      await original.waitFor(isHeartbeat, { from: original.messages.length });
      for (const key of writtenIDs(original)) {
        await original.waitForSent(
          (sent) =>
            sent.message.message.case === "kvClientMessage" &&
            sent.message.message.value.id === key,
        );
      }
      await original.waitFor(isHeartbeat, { from: original.messages.length });
      // What the client holds at the kill, checked after the restart's outcome (below), so that
      // the outcome is what a regression fails on first.
      const [, held] = readTurns(client.checkpoint(id), client.blobs);
      const b = held?.requestID ?? "";
      const lost = original.runSseLost();
      await harness.restart(); // SIGKILL
      await lost;
      const before = new Set(client.blobs.keys());
      const from = messages.length;
      let resumed = original;
      if (way === "a resume request") {
        await original.close("the client moved to a resume stream").catch(() => {});
        resumed = client.startTurn(resumeRequest(client, id), { timeoutMs: 30_000 });
      } else {
        original.reconnectRunSse();
      }
      const result = await resumed.done;
      assert.equal(result.error, undefined);
      assert.match(result.view.text, /Your notes: water the plants\.$/);
      assertTurnOnce(
        client,
        id,
        { a, b },
        { clones, resumeMessages: messages.slice(from), before },
      );
      // No checkpoint listed the step while its result was not saved (before the fix: both
      // steps, and the step twice after the restart).
      assert.deepEqual(held?.steps, B_STEPS.slice(0, 1));
    });
  }

  for (const way of [
    { name: "RunSSE + BidiAppend (HTTP/1.1)", client: { httpVersion: "1.1" as const } },
    { name: "HTTP/2 Run", client: { httpVersion: "2" as const } },
  ]) {
    test(`a resume request after a restart (SIGKILL) without the checkpoint's blobs, ${way.name}: the turn blob is read back from the client's store (get_blob_args); B once`, {
      timeout: 90_000,
    }, async () => {
      harness = await startHarness({ mode: "process", server: { runSseContentType: "connect" } });
      writeFileSync(join(harness.workspace, "notes.txt"), "water the plants\n");
      const id = `turn-once-unread-${way.client.httpVersion}`;
      const { gate, client, clones, messages } = gatedClient(harness, way.client);
      try {
        const { original, a, b } = await startB(harness, client, id);
        const lost = way.client.httpVersion === "1.1" ? original.runSseLost() : undefined;
        original.done.catch(() => {});
        await harness.restart(); // SIGKILL
        await lost;
        const closing = original.close("the client moved to a resume stream").catch(() => {});
        gate.open();
        await closing;
        const before = new Set(client.blobs.keys());
        const from = messages.length;
        const resumed = client.startTurn(resumeRequest(client, id, false), { timeoutMs: 30_000 });
        assert.equal((await resumed.done).error, undefined);
        const reads = messages
          .slice(from)
          .filter(
            (m) =>
              m.message.case === "kvServerMessage" &&
              m.message.value.message.case === "getBlobArgs",
          );
        assert.equal(reads.length, 1, "one read of the client's turn blob");
        assertTurnOnce(
          client,
          id,
          { a, b },
          { clones, resumeMessages: messages.slice(from), before },
        );
      } finally {
        gate.open();
      }
    });
  }

  for (const way of [
    { name: "RunSSE + BidiAppend (HTTP/1.1)", client: { httpVersion: "1.1" as const } },
    { name: "HTTP/2 Run", client: { httpVersion: "2" as const } },
  ]) {
    test(`resume request after a restart (SIGKILL), ${way.name}: B once, with all its steps in order`, {
      timeout: 90_000,
    }, async () => {
      harness = await startHarness({ mode: "process", server: { runSseContentType: "connect" } });
      writeFileSync(join(harness.workspace, "notes.txt"), "water the plants\n");
      const id = `turn-once-restart-${way.client.httpVersion}`;
      const { gate, client, clones, messages } = gatedClient(harness, way.client);
      try {
        const { original, a, b } = await startB(harness, client, id);
        // Over HTTP/2 the client gives its Run up without waiting to notice the dead server.
        const lost = way.client.httpVersion === "1.1" ? original.runSseLost() : undefined;
        original.done.catch(() => {});

        await harness.restart(); // SIGKILL
        await lost;

        const closing = original.close("the client moved to a resume stream").catch(() => {});
        gate.open();
        await closing;

        const before = new Set(client.blobs.keys());
        const from = messages.length;
        const resumed = client.startTurn(resumeRequest(client, id), { timeoutMs: 30_000 });
        const result = await resumed.done;
        assert.equal(result.error, undefined);
        assert.match(result.view.text, /Your notes: water the plants\.$/);
        assertTurnOnce(
          client,
          id,
          { a, b },
          { clones, resumeMessages: messages.slice(from), before },
        );

        if (way.client.httpVersion === "1.1") {
          // Another restart: the resume stream's late reconnect (restored, its turn over) sends
          // B once, as its saved request's checkpoint held it (up to the resume), and writes
          // nothing: the client has every blob of it (no wait for answers a raw reader never
          // gives).
          await harness.restart();
          const late = await readRunSse(harness, resumed.requestId);
          assert.equal(late.error, undefined);
          // No blob write: a write would come first, unanswered, and after its timeout the
          // checkpoint would come inline.
          assert.deepEqual(late.kinds, ["conversationCheckpointUpdate", "interactionUpdate"]);
          const checkpoint = late.messages[0]?.message.value as ConversationStateStructure;
          // B's entry is the client's own turn blob (the one its last checkpoint ended with).
          const entry = checkpoint.turns.at(-1);
          assert.equal(entry?.length, 32, "B's entry is a turn blob id");
          assert.ok(
            client.blobs.has(Buffer.from(entry ?? []).toString("hex")),
            "one the client has",
          );
          const turns = readTurns(checkpoint, client.blobs);
          assert.deepEqual(
            turns.map((t) => [t.requestID, t.userText]),
            [
              [a, "A"],
              [b, "B"],
            ],
          );
          assert.deepEqual(turns[1]?.steps, ["text:Reading."]);
        }
      } finally {
        gate.open();
      }
    });
  }
});
