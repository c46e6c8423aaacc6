/**
 * The agent stream without a server: appends before a run request, append order and repeats,
 * and the end of the stream. Turns themselves are exercised end to end (e2e/).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { createLLM } from "../llm/index.ts";
import { hasFastProperties } from "../llm/testing/fast-properties.ts";
import { createRunner } from "../runner/runner.ts";
import { createMemoryStore } from "../store/index.ts";
import { type AgentStream, createAgentStream } from "./agent-stream.ts";
import { AgentClientMessageSchema } from "./cursor/gen/agent/v1/agent_stream_pb.js";
import { silentLog } from "./log.ts";
import { DEFAULT_SERVER_OPTIONS } from "./server.ts";

function openStream(): AgentStream {
  const store = createMemoryStore();
  const llm = createLLM({ models: [] });
  return createAgentStream("request-1", {
    runner: createRunner({ store, llm }),
    models: llm,
    now: () => 0,
    log: silentLog,
    options: { ...DEFAULT_SERVER_OPTIONS.stream, maxAppendsAhead: 4 },
  });
}

const cancel = create(AgentClientMessageSchema, {
  message: {
    case: "conversationAction",
    value: { action: { case: "cancelAction", value: { reason: "stop" } } },
  },
});

function codeOf(error: unknown): Code | undefined {
  return error instanceof ConnectError ? error.code : undefined;
}

test("a cancel before any run request is refused (not_found), and its repeat gets the same answer", async () => {
  const stream = openStream();
  const first = stream.append(0, cancel);
  assert.equal(stream.append(0, cancel), first);
  await assert.rejects(first, (error) => codeOf(error) === Code.NotFound);
  stream.close("done");
});

test("an append too far ahead of the next seqno is refused (failed_precondition)", async () => {
  const stream = openStream();
  await assert.rejects(
    stream.append(10, cancel),
    (error) => codeOf(error) === Code.FailedPrecondition,
  );
  stream.close("done");
});

test("close ends the stream with canceled; a waiting early append is refused", async () => {
  const stream = openStream();
  const early = stream.append(2, cancel);
  stream.close("server shutting down");
  await assert.rejects(early, (error) => codeOf(error) === Code.FailedPrecondition);
  assert.equal(stream.outbound.ended, true);
  // A subscriber gets the end: the stream was canceled.
  await assert.rejects(
    async () => {
      for await (const _message of stream.subscribe(new AbortController().signal)) {
        // nothing was sent
      }
    },
    (error) => codeOf(error) === Code.Canceled,
  );
});

test("streams share their members, not their state: closing one leaves the other open (issue #19)", async () => {
  const one = openStream();
  const other = openStream();
  // One record per stream, its members on a shared prototype (no closures per stream).
  assert.equal(one.append, other.append);
  assert.equal(hasFastProperties(one), true);
  assert.deepEqual([one.conversationID, other.conversationID], [null, null]);
  one.close("done");
  assert.deepEqual([one.outbound.ended, other.outbound.ended], [true, false]);
  // The other's sequencer still applies appends: a cancel without a turn is refused as such.
  await assert.rejects(other.append(0, cancel), (error) => codeOf(error) === Code.NotFound);
  other.close("done");
  assert.equal(other.outbound.ended, true);
});
