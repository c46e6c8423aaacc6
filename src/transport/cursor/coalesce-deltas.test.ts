import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { createOutboundStream } from "../outbound-stream.ts";
import { coalesceDeltas, MAX_COALESCED_TEXT } from "./coalesce-deltas.ts";
import type { AgentServerMessage } from "./gen/agent/v1/agent_stream_pb.js";
import { ThinkingStyle } from "./gen/agent/v1/interaction_update_pb.js";
import { toHeartbeatMessage, toUpdateMessage } from "./server-message.ts";

const text = (value: string, isServerNotice = false) =>
  toUpdateMessage({ case: "textDelta", value: { text: value, isServerNotice } });
const thinking = (value: string, thinkingStyle?: ThinkingStyle) =>
  toUpdateMessage({
    case: "thinkingDelta",
    value: { text: value, ...(thinkingStyle === undefined ? {} : { thinkingStyle }) },
  });
const completed = () =>
  toUpdateMessage({ case: "thinkingCompleted", value: { thinkingDurationMs: 5 } });

/** What the client renders: deltas of one kind and fields joined, everything else as is. */
function rendered(messages: readonly AgentServerMessage[]): string[] {
  const out: string[] = [];
  for (const message of messages) {
    const update =
      message.message.case === "interactionUpdate" ? message.message.value.message : null;
    const entry =
      update?.case === "textDelta"
        ? { kind: `text/${update.value.isServerNotice}`, text: update.value.text }
        : update?.case === "thinkingDelta"
          ? { kind: `thinking/${update.value.thinkingStyle}`, text: update.value.text }
          : { kind: `other/${update?.case ?? message.message.case}`, text: "" };
    const last = out.at(-1);
    if (last?.startsWith(`${entry.kind}:`) === true && !entry.kind.startsWith("other/")) {
      out[out.length - 1] = last + entry.text;
    } else {
      out.push(`${entry.kind}:${entry.text}`);
    }
  }
  return out;
}

/** Everything `pending` becomes when it is read start to end, coalesced. */
function readAll(pending: readonly AgentServerMessage[]): AgentServerMessage[] {
  const out: AgentServerMessage[] = [];
  for (let i = 0; i < pending.length; ) {
    const { message, count } = coalesceDeltas(pending, i);
    assert.ok(count >= 1);
    out.push(message);
    i += count;
  }
  return out;
}

const anyMessage = fc.oneof(
  fc.string({ maxLength: 6 }).map((value) => text(value)),
  fc.string({ maxLength: 6 }).map((value) => text(value, true)),
  fc.string({ maxLength: 6 }).map((value) => thinking(value)),
  fc.string({ maxLength: 6 }).map((value) => thinking(value, ThinkingStyle.CODEX)),
  fc.constant(null).map(() => completed()),
  fc.constant(null).map(() => toHeartbeatMessage()),
);

describe("coalesceDeltas()", () => {
  test("joins adjacent text deltas and stops at anything else", () => {
    const pending = [text("a"), text("b"), text("c"), completed(), text("d")];
    const first = coalesceDeltas(pending, 0);
    assert.equal(first.count, 3);
    assert.deepEqual(rendered([first.message]), ["text/false:abc"]);
    assert.equal(coalesceDeltas(pending, 3).message, pending[3]);
    assert.equal(coalesceDeltas(pending, 4).message, pending[4]);
  });

  test("never joins text with thinking, nor deltas whose other fields differ", () => {
    const pending = [text("a"), thinking("b"), thinking("c", ThinkingStyle.CODEX), text("d", true)];
    assert.deepEqual(
      readAll(pending).map((message) => message),
      pending,
    );
  });

  test("a joined message stays within the size bound", () => {
    const big = "x".repeat(MAX_COALESCED_TEXT / 2);
    const pending = [text(big), text(big), text("y")];
    assert.equal(coalesceDeltas(pending, 0).count, 2);
    assert.equal(coalesceDeltas(pending, 2).count, 1);
  });

  test("what the client renders is unchanged: same text, same order (property)", () => {
    fc.assert(
      fc.property(fc.array(anyMessage, { maxLength: 40 }), (pending) => {
        const out = readAll(pending);
        assert.deepEqual(rendered(out), rendered(pending));
        assert.ok(out.length <= pending.length);
      }),
    );
  });

  test("through the outbound stream: a slow reader gets the same text in fewer messages, and a reconnect resends a joined message whole", async () => {
    const stream = createOutboundStream<AgentServerMessage>({
      heartbeatMs: 60_000,
      heartbeat: toHeartbeatMessage,
      coalesce: coalesceDeltas,
    });
    const sent = [text("a"), text("b"), completed(), thinking("c"), thinking("d"), text("e")];
    for (const message of sent.slice(0, 5)) stream.push(message);
    const first = stream.subscribe();
    const joined = await first.next();
    assert.deepEqual(rendered([joined.value as AgentServerMessage]), ["text/false:ab"]);
    assert.equal((await first.next()).value, sent[2]);
    assert.equal(stream.delivered, 2);
    // The joined thinking delta is being written when the connection drops.
    assert.deepEqual(rendered([(await first.next()).value as AgentServerMessage]), [
      "thinking/undefined:cd",
    ]);
    await first.return(undefined);
    assert.equal(stream.delivered, 3);
    const second = stream.subscribe();
    stream.push(sent[5] as AgentServerMessage);
    stream.end();
    const rest: AgentServerMessage[] = [];
    for await (const message of second) rest.push(message);
    assert.deepEqual(rendered(rest), ["thinking/undefined:cd", "text/false:e"]);
    assert.equal(stream.delivered, 6);
  });
});
