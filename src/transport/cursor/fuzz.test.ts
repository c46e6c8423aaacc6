/**
 * Bad input never crashes the dialect and never changes state: random bytes, truncated and
 * mutated messages, wrong wire types, bad hex, oversized and gzip-bomb bodies all become typed
 * decode errors; whatever does decode is classified and applied without throwing, and events
 * that do not apply leave the turn state as it was. Bounded runs with fixed seeds.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import {
  DEFAULT_DECODE_LIMITS,
  fromAgentClientMessageBytes,
  fromBidiAppendBody,
  toBidiAppendBody,
} from "./bidi-append.ts";
import { fromClientMessage } from "./client-message.ts";
import { AgentClientMessageSchema } from "./gen/agent/v1/agent_stream_pb.js";
import { BidiAppendRequestSchema } from "./gen/aiserver/v1/bidi_pb.js";
import { fromRunRequest } from "./run-request.ts";
import { callClient, execReply, ideRunRequest, REQUEST_ID, T0, turnState } from "./testing.ts";
import { continueToolCall, startToolCall } from "./tool-session.ts";

const RUNS = { numRuns: 300, seed: 20_261_130 };
const REASONS = new Set([
  "empty",
  "too_large",
  "bad_encoding",
  "bad_gzip",
  "bad_hex",
  "bad_protobuf",
  "bad_json",
  "bad_field",
]);

const VALID = toBidiAppendBody(
  {
    requestID: REQUEST_ID,
    appendSeqno: 3,
    message: create(AgentClientMessageSchema, {
      message: { case: "runRequest", value: ideRunRequest() },
    }),
  },
  { form: "binary" },
);

/** Decodes; asserts a typed error when it fails; returns the decoded message otherwise. */
function decodeOrTypedError(
  body: Uint8Array,
  contentEncoding?: string,
  format?: "binary" | "json",
) {
  const decoded = fromBidiAppendBody({
    body,
    ...(contentEncoding === undefined ? {} : { contentEncoding }),
    ...(format === undefined ? {} : { format }),
  });
  if (!decoded.ok) {
    assert.equal(decoded.error.type, "decode_error");
    assert.ok(REASONS.has(decoded.error.reason), decoded.error.reason);
    assert.equal(typeof decoded.error.message, "string");
    return null;
  }
  return decoded.value;
}

/** Whatever decodes is classified and applied; nothing throws; ignored events change nothing. */
function applyAll(body: Uint8Array): void {
  const append = decodeOrTypedError(body);
  if (append === null) return;
  const event = fromClientMessage(append.message);
  if (event.type === "run") {
    const turn = fromRunRequest(event.request, event.action, {
      at: T0,
      inputID: "i",
      requestID: "r",
      contextWindow: 1000,
    });
    if (!turn.ok) assert.equal(turn.error.type, "decode_error");
  }
  const idle = turnState();
  const step = continueToolCall(idle, event, { at: T0, inputID: "i" });
  assert.equal(step.state, idle, "no tool call runs, so nothing applies");
  const running = startToolCall(idle, callClient("read_file", { path: "a.ts" }), {
    at: T0,
    inputID: "i",
  }).state;
  const applied = continueToolCall(running, event, { at: T0, inputID: "i" });
  if (applied.ignored !== null) assert.equal(applied.state, running);
}

test("random bytes: a typed error or a message, never a throw", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 512 }),
      fc.constantFrom(undefined, "gzip", "identity", "br"),
      (bytes, encoding) => {
        decodeOrTypedError(bytes, encoding);
        decodeOrTypedError(bytes, undefined, "json");
        const message = fromAgentClientMessageBytes(bytes);
        if (message.ok) fromClientMessage(message.value);
      },
    ),
    RUNS,
  );
});

test("truncated valid bodies never throw", () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: VALID.length - 1 }), (length) => {
      applyAll(VALID.subarray(0, length));
    }),
    RUNS,
  );
});

test("mutated valid bodies (flipped bytes, wrong wire types) never throw", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.record({ at: fc.nat(VALID.length - 1), value: fc.integer({ min: 0, max: 255 }) }),
        { minLength: 1, maxLength: 8 },
      ),
      (edits) => {
        const body = new Uint8Array(VALID);
        for (const edit of edits) body[edit.at] = edit.value;
        applyAll(body);
      },
    ),
    RUNS,
  );
});

test("bad hex in data is a bad_hex error (or decodes when it happens to be valid)", () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 64 }), (data) => {
      const body = toBinary(
        BidiAppendRequestSchema,
        create(BidiAppendRequestSchema, { requestId: { requestId: "r" }, data }),
      );
      const decoded = fromBidiAppendBody({ body });
      const isHex = /^(?:[0-9a-fA-F]{2})*$/.test(data);
      if (!decoded.ok && data !== "") {
        assert.equal(decoded.error.reason, isHex ? "bad_protobuf" : "bad_hex");
      }
      if (!isHex) assert.equal(decoded.ok, false);
    }),
    RUNS,
  );
});

test("random well-formed client messages are applied to a running tool without throwing", () => {
  const running = startToolCall(turnState(), callClient("shell", { command: "ls" }), {
    at: T0,
    inputID: "i",
  }).state;
  const exec = running.open.at(-1)?.awaiting;
  assert.ok(exec?.type === "exec");
  const arbitraryReply = fc.oneof(
    fc.record({ data: fc.string() }).map(({ data }) =>
      execReply(running, {
        case: "shellStream",
        value: { event: { case: "stdout", value: { data } } },
      }),
    ),
    fc.record({ code: fc.nat(300), aborted: fc.boolean() }).map(({ code, aborted }) =>
      execReply(running, {
        case: "shellStream",
        value: { event: { case: "exit", value: { code, aborted } } },
      }),
    ),
    fc.uint8Array({ maxLength: 64 }).map((bytes) => {
      const message = fromAgentClientMessageBytes(bytes);
      return message.ok ? message.value : create(AgentClientMessageSchema);
    }),
  );
  fc.assert(
    fc.property(fc.array(arbitraryReply, { maxLength: 10 }), (replies) => {
      let state = running;
      for (const reply of replies) {
        const step = continueToolCall(state, fromClientMessage(reply), { at: T0, inputID: "i" });
        if (step.ignored !== null) assert.equal(step.state, state);
        state = step.state;
      }
    }),
    { numRuns: 100, seed: 7 },
  );
});

test("oversized fields and gzip bombs are rejected by the limits", () => {
  const limits = { ...DEFAULT_DECODE_LIMITS, maxMessageBytes: 64 * 1024 };
  const big = toBinary(
    BidiAppendRequestSchema,
    create(BidiAppendRequestSchema, {
      requestId: { requestId: "r" },
      dataBinary: new Uint8Array(128 * 1024),
    }),
  );
  const decoded = fromBidiAppendBody({ body: big }, limits);
  assert.equal(decoded.ok, false);
  if (!decoded.ok) assert.equal(decoded.error.reason, "too_large");
  const bomb = gzipSync(new Uint8Array(4 * 1024 * 1024));
  const inflated = fromBidiAppendBody({ body: bomb, contentEncoding: "gzip" }, limits);
  assert.equal(inflated.ok, false);
  if (!inflated.ok) assert.equal(inflated.error.reason, "too_large");
});
