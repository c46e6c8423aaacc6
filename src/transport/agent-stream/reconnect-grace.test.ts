/**
 * The wait for a dropped RunSSE (reconnect-grace.ts), on its own, with mock timers: the turn is
 * canceled only when the grace period passes with nobody reading.
 */
import assert from "node:assert/strict";
import { mock, test } from "node:test";
import { Code, type ConnectError } from "@connectrpc/connect";
import { createLLM } from "../../llm/index.ts";
import { createRunner } from "../../runner/runner.ts";
import { createMemoryStore } from "../../store/index.ts";
import { type AgentServerMessage, toHeartbeatMessage } from "../cursor/index.ts";
import { silentLog } from "../log.ts";
import { createOutboundStream } from "../outbound-stream.ts";
import { DEFAULT_SERVER_OPTIONS } from "../server.ts";
import { createCheckpointWriter } from "./checkpoint-writer.ts";
import { createReconnectGrace } from "./reconnect-grace.ts";
import type { StreamState } from "./stream-state.ts";

const GRACE_MS = 1_000;

function setUp(conversationID: string | null) {
  const llm = createLLM({ models: [] });
  const ends: (ConnectError | undefined)[] = [];
  const canceled: string[] = [];
  const outbound = createOutboundStream<AgentServerMessage>({
    heartbeatMs: 60_000,
    heartbeat: toHeartbeatMessage,
  });
  const state: StreamState = {
    requestID: "request-1",
    deps: {
      runner: createRunner({ store: createMemoryStore(), llm }),
      models: llm,
      now: () => 0,
      log: silentLog,
      options: { ...DEFAULT_SERVER_OPTIONS.stream, reconnectGraceMs: GRACE_MS },
    },
    outbound,
    checkpoints: createCheckpointWriter({
      outbound,
      blobs: false,
      timeoutMs: 1_000,
      log: silentLog,
      describe: () => ({}),
    }),
    turn: null,
    conversationID,
    startedAt: null,
    end: (error) => {
      ends.push(error);
      outbound.end(error);
    },
  };
  const grace = createReconnectGrace(state, async (reason) => {
    canceled.push(reason);
  });
  return { grace, ends, canceled, outbound };
}

test("nobody reads for the whole grace period: the turn is canceled, then the stream ends", async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const { grace, ends, canceled } = setUp("conversation-1");
    grace.start();
    grace.start(); // waiting already: one wait, one cancel
    mock.timers.tick(GRACE_MS - 1);
    assert.deepEqual(canceled, []);
    mock.timers.tick(1);
    assert.deepEqual(canceled, ["the client went away"]);
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.equal(ends.length, 1);
    assert.equal(ends[0]?.code, Code.Canceled);
  } finally {
    mock.timers.reset();
  }
});

test("a subscriber that comes back in time stops the wait: nothing is canceled", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const { grace, ends, canceled } = setUp("conversation-1");
    grace.start();
    mock.timers.tick(GRACE_MS / 2);
    grace.clear();
    mock.timers.tick(GRACE_MS * 2);
    assert.deepEqual(canceled, []);
    assert.deepEqual(ends, []);
  } finally {
    mock.timers.reset();
  }
});

test("a stream without a conversation just ends; an ended stream does not wait", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const first = setUp(null);
    first.grace.start();
    mock.timers.tick(GRACE_MS);
    assert.deepEqual(first.canceled, []);
    assert.equal(first.ends.length, 1);

    const second = setUp("conversation-1");
    second.outbound.end();
    second.grace.start();
    mock.timers.tick(GRACE_MS * 2);
    assert.deepEqual(second.canceled, []);
    assert.deepEqual(second.ends, []);
  } finally {
    mock.timers.reset();
  }
});

test("a stream held by a shutdown keeps its turn: a grace that runs out cancels and ends nothing", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const { grace, ends, canceled, outbound } = setUp("conversation-1");
    grace.start();
    mock.timers.tick(GRACE_MS / 2);
    outbound.hold();
    mock.timers.tick(GRACE_MS * 2);
    assert.deepEqual(canceled, []);
    assert.deepEqual(ends, []);
  } finally {
    mock.timers.reset();
  }
});
