import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mock, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { hasFastProperties } from "../../llm/testing/fast-properties.ts";
import { ConversationStepSchema } from "../cursor/gen/agent/v1/conversation_state_pb.js";
import {
  type AgentServerMessage,
  type KvClientMessage,
  toCheckpointMessage,
  toHeartbeatMessage,
  toServerNotice,
} from "../cursor/index.ts";
import { turnState } from "../cursor/testing.ts";
import { toTurnEnded } from "../cursor/turn-end.ts";
import { createRecordingLog } from "../log.ts";
import { createOutboundStream } from "../outbound-stream.ts";
import {
  createCheckpointWriter,
  DEFAULT_BLOB_READ_TIMEOUT_MS,
  DEFAULT_BLOB_WRITE_TIMEOUT_MS,
  SENT_TURN_BLOBS,
} from "./checkpoint-writer.ts";

const TIMEOUT_MS = 1_000;

function setup(blobs = true) {
  const outbound = createOutboundStream<AgentServerMessage>({
    heartbeatMs: 60_000,
    heartbeat: toHeartbeatMessage,
  });
  const { log, lines } = createRecordingLog();
  const writer = createCheckpointWriter({
    outbound,
    blobs,
    timeoutMs: TIMEOUT_MS,
    log,
    describe: () => ({ request: "r1" }),
  });
  const reader = outbound.read();
  const sent: AgentServerMessage[] = [];
  /** What went out since the last call, as short names. */
  const out = (): string[] => {
    const fresh: AgentServerMessage[] = [];
    for (let message = reader.next(); message !== undefined; message = reader.next()) {
      fresh.push(message);
    }
    sent.push(...fresh);
    return fresh.map(name);
  };
  /** The ids of the blob writes sent so far. */
  const writes = () =>
    sent.flatMap((message) =>
      message.message.case === "kvServerMessage" ? [message.message.value.id] : [],
    );
  return { writer, out, writes, lines, sent };
}

function name(message: AgentServerMessage): string {
  const branch = message.message;
  if (branch.case === "kvServerMessage") return "set_blob";
  if (branch.case === "conversationCheckpointUpdate") {
    return branch.value.turns.at(-1)?.length === 32 ? "checkpoint(ids)" : "checkpoint(inline)";
  }
  if (branch.case === "interactionUpdate") return branch.value.message.case ?? "?";
  return branch.case ?? "?";
}

const ok: KvClientMessage["message"] = {
  case: "setBlobResult",
  value: { $typeName: "agent.v1.SetBlobResult" },
};
const refused = (message: string): KvClientMessage["message"] => ({
  case: "setBlobResult",
  value: { $typeName: "agent.v1.SetBlobResult", error: { $typeName: "agent.v1.Error", message } },
});

const step = (text: string) =>
  create(ConversationStepSchema, { message: { case: "assistantMessage", value: { text } } });

test("only checkpoints wait for their blobs; the turn's end waits behind them", () => {
  const { writer, out, writes } = setup();
  const state = turnState({ steps: [step("one")] });
  writer.send([toServerNotice("text"), toCheckpointMessage(state), toServerNotice("more")]);
  // user message, step, turn: written at once; the text after the checkpoint is not held.
  assert.deepEqual(out(), ["textDelta", "set_blob", "set_blob", "set_blob", "textDelta"]);
  let ended = false;
  writer.send([toTurnEnded(state)]);
  writer.whenSent(() => {
    ended = true;
  });
  assert.deepEqual(out(), []);
  assert.equal(ended, false);
  for (const id of writes().slice(0, 2)) writer.result(id, ok);
  assert.deepEqual(out(), [], "not before every blob is confirmed");
  writer.result(writes()[2] ?? 0, ok);
  assert.deepEqual(out(), ["checkpoint(ids)", "turnEnded"]);
  assert.equal(ended, true);
});

test("checkpoints wait in order; the newest confirmed one goes out and drops the older; a blob is written once per stream", () => {
  const { writer, out, writes } = setup();
  const steps = [step("one")];
  writer.send([toCheckpointMessage(turnState({ steps }))]);
  assert.deepEqual(out(), ["set_blob", "set_blob", "set_blob"]);
  writer.send([toCheckpointMessage(turnState({ steps: [...steps, step("two")] }))]);
  // Only the new step and the new turn blob.
  assert.deepEqual(out(), ["set_blob", "set_blob"]);
  // The newer one's blobs confirmed first (the older's turn blob last): the newer one only.
  const [userMessage, step1, turn1, ...newer] = writes();
  for (const id of [userMessage, step1, ...newer]) writer.result(id ?? 0, ok);
  assert.deepEqual(out(), ["checkpoint(ids)"], "the newer one");
  writer.result(turn1 ?? 0, ok);
  assert.deepEqual(out(), [], "the older one was dropped");
  // Confirmed blobs are not written again; the same state needs nothing new.
  writer.send([toCheckpointMessage(turnState({ steps: [...steps, step("two")] }))]);
  assert.deepEqual(out(), ["checkpoint(ids)"]);
  // An unknown or repeated answer changes nothing.
  writer.result(999, ok);
  writer.result(writes()[0] ?? 0, refused("late"));
  writer.send([toCheckpointMessage(turnState({ steps: [...steps, step("two")] }))]);
  assert.deepEqual(out(), ["checkpoint(ids)"]);
});

test("no confirmation within the timeout: this checkpoint and every later one inline, said once", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const { writer, out, writes, lines } = setup();
    const state = turnState({ steps: [step("one")] });
    writer.send([toCheckpointMessage(state), toServerNotice("text"), toTurnEnded(state)]);
    assert.deepEqual(out(), ["set_blob", "set_blob", "set_blob", "textDelta"]);
    writer.result(writes()[0] ?? 0, ok);
    mock.timers.tick(TIMEOUT_MS - 1);
    assert.deepEqual(out(), []);
    mock.timers.tick(1);
    assert.deepEqual(out(), ["checkpoint(inline)", "turnEnded"]);
    writer.send([toCheckpointMessage(turnState({ steps: [step("two")] }))]);
    assert.deepEqual(out(), ["checkpoint(inline)"], "no more blob writes");
    for (const id of writes()) writer.result(id, ok);
    assert.deepEqual(out(), []);
    const warns = lines.filter((line) => line.level === "warn");
    assert.equal(warns.length, 1);
    assert.deepEqual(
      { reason: warns[0]?.fields.reason, unconfirmed: warns[0]?.fields.unconfirmed },
      { reason: "timeout", unconfirmed: 2 },
    );
  } finally {
    mock.timers.reset();
  }
});

test("a refused blob write: the checkpoint goes inline at once, and every later one", () => {
  const { writer, out, writes, lines } = setup();
  writer.send([toCheckpointMessage(turnState({ steps: [step("one")] }))]);
  out();
  writer.result(writes()[1] ?? 0, refused("disk full"));
  assert.deepEqual(out(), ["checkpoint(inline)"]);
  writer.send([toCheckpointMessage(turnState({ steps: [step("two")] }))]);
  assert.deepEqual(out(), ["checkpoint(inline)"]);
  const warns = lines.filter((line) => line.level === "warn");
  assert.deepEqual(
    warns.map((line) => [line.fields.reason, line.fields.detail]),
    [["error", "disk full"]],
  );
});

test("flush: a waiting checkpoint goes out inline now, then what waited behind it", () => {
  const { writer, out } = setup();
  const state = turnState({ steps: [step("one")] });
  writer.send([toCheckpointMessage(state), toTurnEnded(state)]);
  const ends: string[] = [];
  writer.whenSent(() => ends.push("end"));
  out();
  writer.flush();
  assert.deepEqual(out(), ["checkpoint(inline)", "turnEnded"]);
  assert.deepEqual(ends, ["end"]);
});

test("hold: a running turn's waiting checkpoint is dropped, not sent inline", () => {
  const { writer, out } = setup();
  writer.send([toCheckpointMessage(turnState({ steps: [step("one")] }))]);
  assert.deepEqual(out(), ["set_blob", "set_blob", "set_blob"]);
  writer.hold();
  assert.deepEqual(out(), []);
});

test("hold: a turn that is over still gets its checkpoint (inline) and its end", () => {
  const { writer, out } = setup();
  const state = turnState({ steps: [step("one")] });
  writer.send([toCheckpointMessage(state), toTurnEnded(state)]);
  const ends: string[] = [];
  writer.whenSent(() => ends.push("end"));
  out();
  writer.hold();
  assert.deepEqual(out(), ["checkpoint(inline)", "turnEnded"]);
  assert.deepEqual(ends, ["end"]);
});

test("blobs off: every checkpoint inline, no KV traffic", () => {
  const { writer, out } = setup(false);
  const state = turnState({ steps: [step("one")] });
  let ended = false;
  writer.send([toCheckpointMessage(state), toTurnEnded(state)]);
  writer.whenSent(() => {
    ended = true;
  });
  assert.deepEqual(out(), ["checkpoint(inline)", "turnEnded"]);
  assert.equal(ended, true);
});

test("the timeout runs only while someone reads the stream; a new reader gets it whole", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const { writer, out } = setup();
    writer.send([toCheckpointMessage(turnState({ steps: [step("one")] }))]);
    out();
    mock.timers.tick(TIMEOUT_MS - 100);
    writer.pause(); // the RunSSE dropped
    mock.timers.tick(10 * TIMEOUT_MS);
    assert.deepEqual(out(), [], "no fallback while nobody can answer");
    writer.resume(); // reconnected
    mock.timers.tick(TIMEOUT_MS - 1);
    assert.deepEqual(out(), []);
    mock.timers.tick(1);
    assert.deepEqual(out(), ["checkpoint(inline)"]);
  } finally {
    mock.timers.reset();
  }
});

test("steps faster than the acks: the newest confirmed checkpoint goes out on each answer, and answers keep the timeout away", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const { writer, out, writes, lines } = setup();
    const steps = [step("s0")];
    let answered = 0;
    const released: string[][] = [];
    // Each round: a new checkpoint (one new step, so new blobs), then, a quarter of the timeout
    // later, the answers to the writes of the round before: the newest checkpoint never has all
    // its blobs confirmed. 20 rounds are five timeouts.
    for (let round = 0; round < 20; round++) {
      const previous = writes().length;
      steps.push(step(`s${round + 1}`));
      writer.send([toCheckpointMessage(turnState({ steps: [...steps] }))]);
      out();
      mock.timers.tick(TIMEOUT_MS / 4);
      for (const id of writes().slice(answered, previous)) writer.result(id, ok);
      answered = previous;
      released.push(out());
    }
    // From round 1 on, each round's answers confirm the previous round's checkpoint, which goes
    // out in the blob form (the older ones dropped) while this round's still waits.
    assert.deepEqual(released, [[], ...Array.from({ length: 19 }, () => ["checkpoint(ids)"])]);
    assert.deepEqual(
      lines.filter((line) => line.level === "warn"),
      [],
    );
  } finally {
    mock.timers.reset();
  }
});

test("a refused write that no waiting checkpoint requires any more: no fallback; the blob is written again when needed", () => {
  const { writer, out, writes, lines } = setup();
  const steps = [step("one")];
  writer.send([toCheckpointMessage(turnState({ steps }))]);
  writer.send([toCheckpointMessage(turnState({ steps: [...steps, step("two")] }))]);
  out();
  // The older checkpoint's turn blob (the third write) is answered last, with an error, after
  // the newer checkpoint went out: nothing needs it any more.
  const [userMessage, step1, turn1, ...newer] = writes();
  for (const id of [userMessage, step1, ...newer]) writer.result(id ?? 0, ok);
  assert.deepEqual(out(), ["checkpoint(ids)"]);
  writer.result(turn1 ?? 0, refused("late and refused"));
  assert.deepEqual(out(), []);
  // Blob checkpoints go on; the same state as the first one again needs its turn blob anew.
  writer.send([toCheckpointMessage(turnState({ steps }))]);
  assert.deepEqual(out(), ["set_blob"]);
  writer.result(writes().at(-1) ?? 0, ok);
  assert.deepEqual(out(), ["checkpoint(ids)"]);
  assert.deepEqual(
    lines.filter((line) => line.level === "warn"),
    [],
  );
});

test("the end waits for writes no checkpoint needs any more: until answered, or the timeout (no fallback)", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    for (const answer of ["answered", "never"] as const) {
      const { writer, out, writes, lines } = setup();
      const steps = [step("one")];
      const last = turnState({ steps: [...steps, step("two")] });
      writer.send([toCheckpointMessage(turnState({ steps })), toCheckpointMessage(last)]);
      writer.send([toTurnEnded(last)]);
      const ends: string[] = [];
      writer.whenSent(() => ends.push("end"));
      out();
      // The newer checkpoint goes out; the older one's turn blob is still unanswered.
      const [userMessage, step1, turn1, ...newer] = writes();
      for (const id of [userMessage, step1, ...newer]) writer.result(id ?? 0, ok);
      assert.deepEqual(out(), ["checkpoint(ids)", "turnEnded"]);
      assert.deepEqual(ends, [], `${answer}: not while a write is unanswered`);
      if (answer === "answered") {
        writer.result(turn1 ?? 0, ok);
      } else {
        mock.timers.tick(TIMEOUT_MS - 1);
        assert.deepEqual(ends, []);
        mock.timers.tick(1);
      }
      assert.deepEqual(ends, ["end"], answer);
      assert.deepEqual(
        lines.filter((line) => line.level === "warn"),
        [],
      );
    }
  } finally {
    mock.timers.reset();
  }
});

test("writers share their methods, not their state: each stream's waits, answers and timeout are its own", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const a = setup();
    const b = setup();
    // One record per stream with shared methods (issue #19), kept a fast object.
    assert.equal(a.writer.send, b.writer.send);
    assert.equal(hasFastProperties(a.writer), true);
    const state = turnState({ steps: [step("one")] });
    a.writer.send([toCheckpointMessage(state), toTurnEnded(state)]);
    assert.deepEqual(a.out(), ["set_blob", "set_blob", "set_blob"]);
    mock.timers.tick(TIMEOUT_MS / 2);
    b.writer.send([toCheckpointMessage(state), toTurnEnded(state)]);
    assert.deepEqual(b.out(), ["set_blob", "set_blob", "set_blob"]);
    assert.deepEqual(b.writes(), a.writes(), "each numbers its writes from 1");
    // The same ids answered on the other writer release nothing here.
    for (const id of a.writes()) a.writer.result(id, ok);
    assert.deepEqual(a.out(), ["checkpoint(ids)", "turnEnded"]);
    assert.deepEqual(b.out(), []);
    // b's timeout started when its own checkpoint waited: a's answers did not restart it.
    mock.timers.tick(TIMEOUT_MS / 2);
    assert.deepEqual(b.out(), []);
    mock.timers.tick(TIMEOUT_MS / 2);
    assert.deepEqual(b.out(), ["checkpoint(inline)", "turnEnded"]);
    assert.equal(b.lines.filter((line) => line.level === "warn").length, 1);
    assert.equal(a.lines.filter((line) => line.level === "warn").length, 0);
    // a still writes blobs; b is inline from now on.
    const next = turnState({ steps: [step("one"), step("two")] });
    a.writer.send([toCheckpointMessage(next)]);
    b.writer.send([toCheckpointMessage(next)]);
    assert.deepEqual(a.out(), ["set_blob", "set_blob"]);
    assert.deepEqual(b.out(), ["checkpoint(inline)"]);
  } finally {
    mock.timers.reset();
  }
});

test("the turn blob of each blob-form checkpoint released is told to onTurnBlob before it goes out; one replaced while it waited is not", () => {
  const outbound = createOutboundStream<AgentServerMessage>({
    heartbeatMs: 60_000,
    heartbeat: toHeartbeatMessage,
  });
  const told: { key: string; conversationID: string; requestID: string; sent: number }[] = [];
  const reader = outbound.read();
  const sent: AgentServerMessage[] = [];
  const drain = () => {
    for (let message = reader.next(); message !== undefined; message = reader.next()) {
      sent.push(message);
    }
  };
  const writer = createCheckpointWriter({
    outbound,
    blobs: true,
    timeoutMs: TIMEOUT_MS,
    log: createRecordingLog().log,
    describe: () => ({}),
    onTurnBlob: (key, conversationID, requestID) => {
      drain();
      told.push({ key, conversationID, requestID, sent: sent.length });
    },
  });
  const turnWrites = () =>
    sent.flatMap((message) =>
      message.message.case === "kvServerMessage" &&
      message.message.value.message.case === "setBlobArgs"
        ? [
            {
              id: message.message.value.id,
              key: Buffer.from(message.message.value.message.value.blobId).toString("hex"),
            },
          ]
        : [],
    );
  const checkpoints = () =>
    sent.filter((message) => message.message.case === "conversationCheckpointUpdate").length;
  const first = turnState({ requestID: "req-7", steps: [step("one")] });
  const second = turnState({ requestID: "req-7", steps: [step("one"), step("two")] });
  const third = turnState({ requestID: "req-7", steps: [step("one"), step("two"), step("3")] });
  // Three checkpoints while the client has confirmed nothing: the newer replace the older.
  writer.send([toCheckpointMessage(first)]);
  writer.send([toCheckpointMessage(second)]);
  writer.send([toCheckpointMessage(third)]);
  drain();
  assert.equal(told.length, 0, "nothing told while they wait");
  const written = turnWrites();
  // Confirmed newest first: the blobs all three share come last, so all are ready at once.
  for (const { id } of [...written].reverse()) writer.result(id, ok);
  drain();
  assert.equal(checkpoints(), 1, "only the newest went out");
  // Its turn blob is the last write (user message, steps, then the turn blob).
  assert.deepEqual(
    told.map(({ key, conversationID, requestID }) => ({ key, conversationID, requestID })),
    [{ key: written.at(-1)?.key, conversationID: first.conversationID, requestID: "req-7" }],
  );
  assert.equal(told[0]?.sent, written.length, "told before the checkpoint went out");
  // A checkpoint whose blobs are all confirmed goes out at once, told as well.
  writer.send([toCheckpointMessage(third)]);
  drain();
  assert.equal(told.length, 2);
  assert.equal(told[1]?.key, written.at(-1)?.key);
});

test("the step counts of the turn blobs of the blob-form checkpoints that went out are kept, the last SENT_TURN_BLOBS of them", () => {
  const { writer, out, writes } = setup();
  const stateOf = (count: number) =>
    turnState({ steps: Array.from({ length: count }, (_, index) => step(`step ${index}`)) });
  let answered = 0;
  const answer = () => {
    for (const id of writes().slice(answered)) writer.result(id, ok);
    answered = writes().length;
  };
  writer.send([toCheckpointMessage(stateOf(1))]);
  out();
  assert.deepEqual(writer.sentTurnSteps(), [], "not while it waits");
  answer();
  assert.deepEqual(out(), ["checkpoint(ids)"]);
  assert.deepEqual(writer.sentTurnSteps(), [1]);
  // The same again: kept once.
  writer.send([toCheckpointMessage(stateOf(1))]);
  assert.deepEqual(out(), ["checkpoint(ids)"]);
  assert.deepEqual(writer.sentTurnSteps(), [1]);
  // One whose writes are never confirmed goes out inline: its turn blob is not the client's.
  writer.send([toCheckpointMessage(stateOf(2))]);
  out();
  writer.flush();
  assert.deepEqual(out(), ["checkpoint(inline)"]);
  assert.deepEqual(writer.sentTurnSteps(), [1]);

  const { writer: bounded, out: boundedOut, writes: boundedWrites } = setup();
  let confirmed = 0;
  let wentOut = 0;
  for (let count = 1; count <= SENT_TURN_BLOBS + 1; count++) {
    bounded.send([toCheckpointMessage(stateOf(count))]);
    boundedOut();
    for (const id of boundedWrites().slice(confirmed)) bounded.result(id, ok);
    confirmed = boundedWrites().length;
    wentOut += boundedOut().filter((kind) => kind === "checkpoint(ids)").length;
  }
  assert.equal(wentOut, SENT_TURN_BLOBS + 1);
  assert.deepEqual(
    bounded.sentTurnSteps(),
    Array.from({ length: SENT_TURN_BLOBS }, (_, index) => index + 2),
    "the oldest is dropped",
  );
});

/** The asks (`get_blob_args`) in `messages`: kv id and hex blob id. */
function asks(messages: readonly AgentServerMessage[]): { id: number; key: string }[] {
  return messages.flatMap((message) =>
    message.message.case === "kvServerMessage" &&
    message.message.value.message.case === "getBlobArgs"
      ? [
          {
            id: message.message.value.id,
            key: Buffer.from(message.message.value.message.value.blobId).toString("hex"),
          },
        ]
      : [],
  );
}

const given = (data: Uint8Array): KvClientMessage["message"] => ({
  case: "getBlobResult",
  value: { $typeName: "agent.v1.GetBlobResult", blobData: data },
});
const notFound: KvClientMessage["message"] = {
  case: "getBlobResult",
  value: {
    $typeName: "agent.v1.GetBlobResult",
    error: { $typeName: "agent.v1.Error", message: "blob not found" },
  },
};

test("a read of a client blob (get_blob_args): the first of the keys the client has; checkpoints wait for it, and its reader is told to send one anew; turn_ended and the end wait too", async () => {
  const { writer, out, sent } = setup();
  const state = turnState({ steps: [step("one")] });
  const data = Uint8Array.of(1, 2, 3);
  const key = createHash("sha256").update(data).digest("hex");
  const answers: [string | null, boolean][] = [];
  let keys!: (found: readonly string[]) => void;
  writer.read(new Promise((resolve) => (keys = resolve)), (found, checkpointed) => {
    answers.push([found?.key ?? null, checkpointed]);
    // The reader's checkpoint as the turn now is.
    if (checkpointed) writer.send([toCheckpointMessage(state)]);
  });
  let ended = false;
  writer.send([toServerNotice("text"), toCheckpointMessage(state), toTurnEnded(state)]);
  writer.whenSent(() => {
    ended = true;
  });
  assert.deepEqual(out(), ["textDelta"], "only the text goes out while the keys are looked up");
  keys(["00".repeat(32), key]);
  await Promise.resolve();
  assert.deepEqual(out(), ["set_blob"], "the first ask (a kv message)");
  const [first] = asks(sent);
  assert.equal(first?.key, "00".repeat(32));
  writer.result(first?.id ?? 0, notFound);
  assert.deepEqual(out(), ["set_blob"], "then the next key");
  const second = asks(sent).at(-1);
  assert.equal(second?.key, key);
  // Bytes that are not the blob asked for count as not found; here the right ones come.
  writer.result(second?.id ?? 0, given(data));
  assert.deepEqual(answers, [[key, true]]);
  // The reader's checkpoint writes its blobs; turn_ended waits behind it as always.
  assert.deepEqual(out(), ["set_blob", "set_blob", "set_blob"]);
  assert.equal(ended, false);
  for (const message of sent.slice(-3)) {
    if (message.message.case === "kvServerMessage") writer.result(message.message.value.id, ok);
  }
  assert.deepEqual(out(), ["checkpoint(ids)", "turnEnded"]);
  assert.equal(ended, true);
  // A repeated answer changes nothing.
  writer.result(second?.id ?? 0, given(data));
  assert.equal(answers.length, 1);
});

test("a read that finds nothing (wrong bytes, not found, no keys), or is cut by the stream's end now: the reader gets null", () => {
  const { writer, out, sent } = setup();
  const answers: unknown[] = [];
  const state = turnState({ steps: [step("one")] });
  writer.read(["01".repeat(32)], (found) => answers.push(found?.key ?? null));
  out();
  writer.result(asks(sent).at(-1)?.id ?? 0, given(Uint8Array.of(9)));
  writer.read(["02".repeat(32)], (found) => answers.push(found?.key ?? null));
  out();
  writer.result(asks(sent).at(-1)?.id ?? 0, notFound);
  writer.read([], (found) => answers.push(found?.key ?? null));
  assert.deepEqual([...answers], [null, null, null]);
  let checkpointedAtFlush = false;
  writer.read(["04".repeat(32)], (found, checkpointed) => {
    answers.push(found?.key ?? null);
    checkpointedAtFlush = checkpointed;
    if (checkpointed) writer.send([toCheckpointMessage(state)]);
  });
  out();
  writer.send([toCheckpointMessage(state)]);
  assert.deepEqual(out(), []);
  writer.flush();
  assert.deepEqual(answers, [null, null, null, null]);
  assert.equal(checkpointedAtFlush, false, "the reader is not asked for one");
  assert.deepEqual(out(), ["checkpoint(inline)"], "the held checkpoint goes out inline");
});

test("a read not answered in time: null, and the stream's checkpoints stay blob-form (a client may answer writes and not reads); the read's timeout runs only while someone reads the stream", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const { writer, out, lines } = setup();
    const state = turnState({ steps: [step("one")] });
    const answers: unknown[] = [];
    writer.read(["03".repeat(32)], (found, checkpointed) => {
      answers.push(found);
      if (checkpointed) writer.send([toCheckpointMessage(state)]);
    });
    writer.send([toCheckpointMessage(state)]);
    assert.deepEqual(out(), ["set_blob"], "the read only");
    mock.timers.tick(TIMEOUT_MS - 1);
    assert.deepEqual(answers, []);
    mock.timers.tick(1);
    assert.deepEqual(answers, [null]);
    assert.deepEqual(
      out(),
      ["set_blob", "set_blob", "set_blob"],
      "blob writes, no inline checkpoint",
    );
    assert.deepEqual(lines, [], "no fallback");

    // Paused (nobody reads the stream: a stream picked up after a restart before its RunSSE
    // came): the read waits; once a reader is attached, it gets its whole timeout.
    const paused = setup();
    const pausedAnswers: unknown[] = [];
    paused.writer.pause();
    paused.writer.read(["03".repeat(32)], (found) => pausedAnswers.push(found));
    mock.timers.tick(10 * TIMEOUT_MS);
    assert.deepEqual(pausedAnswers, [], "no timeout while nobody can answer");
    paused.writer.resume();
    mock.timers.tick(TIMEOUT_MS - 1);
    assert.deepEqual(pausedAnswers, []);
    mock.timers.tick(1);
    assert.deepEqual(pausedAnswers, [null]);
    paused.writer.send([toCheckpointMessage(state)]);
    assert.deepEqual(paused.out(), ["set_blob", "set_blob", "set_blob", "set_blob"], "blob form");
    assert.equal(paused.lines.length, 0);
  } finally {
    mock.timers.reset();
  }
});

test("the read timeout is short by default (DEFAULT_BLOB_READ_TIMEOUT_MS), and never longer than the write timeout", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const outbound = createOutboundStream<AgentServerMessage>({
      heartbeatMs: 60_000,
      heartbeat: toHeartbeatMessage,
    });
    const writer = createCheckpointWriter({
      outbound,
      blobs: true,
      timeoutMs: DEFAULT_BLOB_WRITE_TIMEOUT_MS,
      log: createRecordingLog().log,
      describe: () => ({}),
    });
    const answers: unknown[] = [];
    writer.read(["03".repeat(32)], (found) => answers.push(found));
    mock.timers.tick(DEFAULT_BLOB_READ_TIMEOUT_MS - 1);
    assert.deepEqual(answers, []);
    mock.timers.tick(1);
    assert.deepEqual(answers, [null]);
    assert.ok(DEFAULT_BLOB_READ_TIMEOUT_MS < DEFAULT_BLOB_WRITE_TIMEOUT_MS);
  } finally {
    mock.timers.reset();
  }
});

test("a read timeout set longer than the write timeout waits only as long as the write timeout", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const outbound = createOutboundStream<AgentServerMessage>({
      heartbeatMs: 60_000,
      heartbeat: toHeartbeatMessage,
    });
    const writer = createCheckpointWriter({
      outbound,
      blobs: true,
      timeoutMs: 1_000,
      readTimeoutMs: 5_000,
      log: createRecordingLog().log,
      describe: () => ({}),
    });
    const answers: unknown[] = [];
    writer.read(["04".repeat(32)], (found) => answers.push(found));
    mock.timers.tick(999);
    assert.deepEqual(answers, []);
    mock.timers.tick(1);
    assert.deepEqual(answers, [null]);
  } finally {
    mock.timers.reset();
  }
});

test("a read on a stream that sends no blob writes: null at once, no kv message", () => {
  const { writer, out } = setup(false);
  const answers: unknown[] = [];
  writer.read(["01".repeat(32)], (found) => answers.push(found));
  assert.deepEqual(answers, [null]);
  assert.deepEqual(out(), []);
});

test("a read whose reader's checkpoint needs no write: it goes out at once, then turn_ended, then the end", () => {
  const { writer, out, sent } = setup();
  const state = turnState({ steps: [step("one")] });
  writer.send([toCheckpointMessage(state)]);
  out();
  for (const message of [...sent]) {
    if (message.message.case === "kvServerMessage") writer.result(message.message.value.id, ok);
  }
  assert.deepEqual(out(), ["checkpoint(ids)"]);
  writer.read(["05".repeat(32)], (_found, checkpointed) => {
    if (checkpointed) writer.send([toCheckpointMessage(state)]);
  });
  /** What had gone out when the end ran (the stream ends its outbound there). */
  let atEnd: string[] | undefined;
  writer.send([toCheckpointMessage(state), toTurnEnded(state)]);
  writer.whenSent(() => {
    atEnd = out();
  });
  assert.deepEqual(out(), ["set_blob"], "the read only");
  writer.result(asks(sent).at(-1)?.id ?? 0, notFound);
  assert.deepEqual(atEnd, ["checkpoint(ids)", "turnEnded"]);
});

test("a hold (a tool step whose result is not saved yet): checkpoints wait, the newest goes out once the last hold is off; turn_ended and the end wait too; a hold not released is off after the timeout", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const { writer, out, sent } = setup();
    const one = turnState({ steps: [step("one")] });
    const two = turnState({ steps: [step("one"), step("two")] });
    writer.holdCheckpoints("op-1");
    writer.holdCheckpoints("op-2");
    let atEnd: string[] | undefined;
    writer.send([toServerNotice("text"), toCheckpointMessage(one), toCheckpointMessage(two)]);
    writer.send([toTurnEnded(two)]);
    writer.whenSent(() => {
      atEnd = out();
    });
    assert.deepEqual(out(), ["textDelta"], "only the text");
    writer.unholdCheckpoints("op-1");
    assert.deepEqual(out(), [], "another hold is on");
    writer.unholdCheckpoints("op-1");
    writer.unholdCheckpoints("op-2");
    // The newest (two steps): user message, two steps, turn.
    assert.deepEqual(out(), ["set_blob", "set_blob", "set_blob", "set_blob"]);
    for (const message of sent.slice(-4)) {
      if (message.message.case === "kvServerMessage") writer.result(message.message.value.id, ok);
    }
    assert.deepEqual(atEnd, ["checkpoint(ids)", "turnEnded"]);

    const { writer: later, out: laterOut } = setup(false);
    later.holdCheckpoints("op-3");
    later.send([toCheckpointMessage(one)]);
    assert.deepEqual(laterOut(), [], "an inline checkpoint waits too");
    mock.timers.tick(TIMEOUT_MS);
    assert.deepEqual(laterOut(), ["checkpoint(inline)"]);
  } finally {
    mock.timers.reset();
  }
});

test("a hold cut by the stream's end now: the checkpoint held goes out before the end", () => {
  const { writer, out } = setup();
  writer.holdCheckpoints("op-1");
  writer.send([toCheckpointMessage(turnState({ steps: [step("one")] }))]);
  writer.flush();
  assert.deepEqual(out(), ["checkpoint(inline)"]);
});
