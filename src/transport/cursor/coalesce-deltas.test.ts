import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import fc from "fast-check";
import { createOutboundStream } from "../outbound-stream.ts";
import { joinDeltas, MAX_COALESCED_TEXT } from "./coalesce-deltas.ts";
import { type AgentServerMessage, TtftBreakdownSchema } from "./gen/agent/v1/agent_stream_pb.js";
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

/** What `pushed` becomes when each message is pushed while the one before it still waits. */
function joinAll(pushed: readonly AgentServerMessage[]): AgentServerMessage[] {
  const out: AgentServerMessage[] = [];
  for (const message of pushed) {
    const last = out.at(-1);
    const joined = last === undefined ? undefined : joinDeltas(last, message);
    if (joined === undefined) out.push(message);
    else out[out.length - 1] = joined;
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

describe("joinDeltas()", () => {
  test("joins adjacent text deltas and stops at anything else", () => {
    const pushed = [text("a"), text("b"), text("c"), completed(), text("d")];
    const out = joinAll(pushed);
    assert.equal(out.length, 3);
    assert.deepEqual(rendered(out.slice(0, 1)), ["text/false:abc"]);
    assert.equal(out[1], pushed[3]);
    assert.equal(out[2], pushed[4]);
  });

  test("the joined message is the one toUpdateMessage builds for the joined text", () => {
    assert.deepStrictEqual(joinDeltas(text("a"), text("b")), text("ab"));
    assert.deepStrictEqual(joinDeltas(text("a", true), text("b", true)), text("ab", true));
    assert.deepStrictEqual(joinDeltas(thinking("a"), thinking("b")), thinking("ab"));
    assert.deepStrictEqual(
      joinDeltas(thinking("a", ThinkingStyle.CODEX), thinking("b", ThinkingStyle.CODEX)),
      thinking("ab", ThinkingStyle.CODEX),
    );
  });

  test("never joins text with thinking, nor deltas whose other fields differ", () => {
    const pushed = [text("a"), thinking("b"), thinking("c", ThinkingStyle.CODEX), text("d", true)];
    assert.deepEqual(joinAll(pushed), pushed);
  });

  test("never joins a delta that carries anything beside its update (ttft_breakdown, unknown fields)", () => {
    const timed = text("b");
    timed.ttftBreakdown = create(TtftBreakdownSchema);
    const unknown = text("c");
    unknown.$unknown = [{ no: 99, wireType: 0, data: new Uint8Array([1]) }];
    assert.equal(joinDeltas(text("a"), timed), undefined);
    assert.equal(joinDeltas(timed, text("a")), undefined);
    assert.equal(joinDeltas(text("a"), unknown), undefined);
    assert.equal(joinDeltas(unknown, text("a")), undefined);
  });

  test("a joined message stays within the size bound", () => {
    const big = "x".repeat(MAX_COALESCED_TEXT / 2);
    const out = joinAll([text(big), text(big), text("y")]);
    assert.deepEqual(
      out.map((message) => rendered([message])[0]?.length),
      ["text/false:".length + MAX_COALESCED_TEXT, "text/false:y".length],
    );
  });

  test("what the client renders is unchanged: same text, same order (property)", () => {
    fc.assert(
      fc.property(fc.array(anyMessage, { maxLength: 40 }), (pending) => {
        const out = joinAll(pending);
        assert.deepEqual(rendered(out), rendered(pending));
        assert.ok(out.length <= pending.length);
      }),
    );
  });

  test("through the outbound stream: a slow reader gets the same text in fewer messages, and a reconnect resends a joined message whole", async () => {
    const stream = createOutboundStream<AgentServerMessage>({
      heartbeatMs: 60_000,
      heartbeat: toHeartbeatMessage,
      join: joinDeltas,
    });
    const sent = [text("a"), text("b"), completed(), thinking("c"), thinking("d"), text("e")];
    for (const message of sent.slice(0, 5)) stream.push(message);
    const first = stream.subscribe();
    const joined = await first.next();
    assert.deepEqual(rendered([joined.value as AgentServerMessage]), ["text/false:ab"]);
    assert.equal((await first.next()).value, sent[2]);
    assert.equal(stream.delivered, 1, "the joined message counts as one");
    // The joined thinking delta is being written when the connection drops.
    assert.deepEqual(rendered([(await first.next()).value as AgentServerMessage]), [
      "thinking/undefined:cd",
    ]);
    await first.return(undefined);
    assert.equal(stream.delivered, 2);
    const second = stream.subscribe();
    stream.push(sent[5] as AgentServerMessage);
    stream.end();
    const rest: AgentServerMessage[] = [];
    for await (const message of second) rest.push(message);
    assert.deepEqual(rendered(rest), ["thinking/undefined:cd", "text/false:e"]);
    assert.equal(stream.delivered, 4);
  });

  test("a delta pushed while the one before it is handed out is never joined into it, also after a reconnect", () => {
    const stream = createOutboundStream<AgentServerMessage>({
      heartbeatMs: 60_000,
      heartbeat: toHeartbeatMessage,
      join: joinDeltas,
    });
    stream.push(text("a"));
    const first = stream.read();
    const written = first.next() as AgentServerMessage;
    assert.deepEqual(rendered([written]), ["text/false:a"]);
    // Pushed while "a" is being written: joined with each other, not with "a".
    stream.push(text("b"));
    stream.push(text("c"));
    assert.deepEqual(rendered([written]), ["text/false:a"], "the handed-out message is unchanged");
    // The connection drops while "a" is written: the next subscriber gets it again, as it was.
    first.close();
    const second = stream.read();
    assert.equal(second.next(), written);
    stream.push(text("d"));
    assert.deepEqual(rendered([second.next() as AgentServerMessage]), ["text/false:bcd"]);
    stream.push(text("e"));
    stream.end();
    assert.deepEqual(rendered([second.next() as AgentServerMessage]), ["text/false:e"]);
    assert.equal(second.next(), undefined);
    assert.equal(second.done, true);
    assert.equal(stream.delivered, 3);
  });
});
