import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { createSnapshotter } from "./snapshot.ts";
import { assertGrammar, assertSnapshots, toTestMessage } from "./testing/streams.ts";
import type { AssistantMessage, ResponseEvent, ToolCall } from "./types.ts";

type Piece =
  | { readonly type: "text"; readonly pieces: readonly string[] }
  | { readonly type: "thinking"; readonly pieces: readonly string[]; readonly signature: string }
  | { readonly type: "toolCall"; readonly id: string; readonly pieces: readonly string[] };

/**
 * Events as pi-ai's adapters produce them: one live message mutated in place and shared by
 * every event. They are all produced before any is read, the worst case of a lagging reader.
 */
function liveEvents(blocks: readonly Piece[]): ResponseEvent[] {
  const live: AssistantMessage = toTestMessage("pending");
  const events: ResponseEvent[] = [{ type: "start", partial: live }];
  blocks.forEach((block, contentIndex) => {
    if (block.type === "text") {
      const item = { type: "text" as const, text: "" };
      live.content.push(item);
      events.push({ type: "text_start", contentIndex, partial: live });
      for (const delta of block.pieces) {
        item.text += delta;
        events.push({ type: "text_delta", contentIndex, delta, partial: live });
      }
      events.push({ type: "text_end", contentIndex, content: item.text, partial: live });
    } else if (block.type === "thinking") {
      const item = { type: "thinking" as const, thinking: "", thinkingSignature: "" };
      live.content.push(item);
      events.push({ type: "thinking_start", contentIndex, partial: live });
      for (const delta of block.pieces) {
        item.thinking += delta;
        events.push({ type: "thinking_delta", contentIndex, delta, partial: live });
      }
      item.thinkingSignature = block.signature;
      events.push({ type: "thinking_end", contentIndex, content: item.thinking, partial: live });
    } else {
      const item: ToolCall = { type: "toolCall", id: block.id, name: "f", arguments: {} };
      live.content.push(item);
      events.push({ type: "toolcall_start", contentIndex, partial: live });
      let text = "";
      for (const delta of block.pieces) {
        text += delta;
        item.arguments = { progress: text.length };
        events.push({ type: "toolcall_delta", contentIndex, delta, partial: live });
      }
      item.arguments = JSON.parse(text) as ToolCall["arguments"];
      events.push({ type: "toolcall_end", contentIndex, toolCall: item, partial: live });
    }
    live.usage.output += 10;
  });
  live.stopReason = "stop";
  events.push({ type: "done", reason: "stop", message: live });
  return events;
}

function split(text: string, cuts: readonly number[]): string[] {
  const points = [...new Set(cuts.map((cut) => cut % (text.length + 1)))].sort((a, b) => a - b);
  const pieces: string[] = [];
  let start = 0;
  for (const point of [...points, text.length]) {
    pieces.push(text.slice(start, point));
    start = point;
  }
  return pieces;
}

describe("snapshots", () => {
  test("a lagging reader still sees each event's own state, not the live message's", () => {
    const events = liveEvents([
      { type: "thinking", pieces: ["Let me ", "think."], signature: "sig-1" },
      { type: "text", pieces: ["Hel", "lo"] },
      { type: "toolCall", id: "call_1", pieces: ['{"pa', 'th": "a\\"b"}'] },
    ]);
    const snapshotter = createSnapshotter();
    const snapshots = events.map((event) => snapshotter.toSnapshot(event));
    // By now the live message holds everything; the snapshots must not.
    const first = snapshots[1];
    assert.ok(first?.type === "thinking_start");
    assert.deepEqual(first.partial.content, [{ type: "thinking", thinking: "" }]);
    const delta = snapshots.find((e) => e.type === "text_delta");
    assert.ok(delta?.type === "text_delta");
    assert.equal(delta.partial.content.length, 2);
    assert.deepEqual(delta.partial.content[1], { type: "text", text: "Hel" });
    assert.deepEqual(delta.partial.content[0], {
      type: "thinking",
      thinking: "Let me think.",
      thinkingSignature: "sig-1",
    });
    const argumentDeltas = snapshots.filter((e) => e.type === "toolcall_delta");
    assert.deepEqual(
      argumentDeltas.map((e) => ("partial" in e ? e.partial.content[2] : undefined)),
      [
        { type: "toolCall", id: "call_1", name: "f", arguments: {} },
        { type: "toolCall", id: "call_1", name: "f", arguments: { path: 'a"b' } },
      ],
      "arguments parsed from the text so far, not the live object's",
    );
    assert.equal(snapshotter.toolCallArgumentsText(2), '{"path": "a\\"b"}');
    assertGrammar(snapshots);
    assertSnapshots(snapshots);
  });

  test("snapshotters share their methods, not their state: two calls read at once keep their own blocks (issue #19)", () => {
    const one = liveEvents([{ type: "toolCall", id: "call_1", pieces: ['{"a":', " 1}"] }]);
    const other = liveEvents([{ type: "text", pieces: ["x", "y"] }]);
    const [first, second] = [createSnapshotter(), createSnapshotter()];
    assert.equal(first.toSnapshot, second.toSnapshot);
    const snapshots: [ResponseEvent[], ResponseEvent[]] = [[], []];
    for (let i = 0; i < Math.max(one.length, other.length); i++) {
      const a = one[i];
      const b = other[i];
      if (a !== undefined) snapshots[0].push(first.toSnapshot(a));
      if (b !== undefined) snapshots[1].push(second.toSnapshot(b));
    }
    const last = (events: ResponseEvent[]) => {
      const event = events.findLast((e) => "partial" in e);
      return event !== undefined && "partial" in event ? event.partial.content : undefined;
    };
    assert.deepEqual(last(snapshots[0]), [
      { type: "toolCall", id: "call_1", name: "f", arguments: { a: 1 } },
    ]);
    assert.deepEqual(last(snapshots[1]), [{ type: "text", text: "xy" }]);
    assert.equal(first.toolCallArgumentsText(0), '{"a": 1}');
    assert.equal(second.toolCallArgumentsText(0), undefined);
    for (const events of snapshots) {
      assertGrammar(events);
      assertSnapshots(events);
    }
  });

  test("unchanged blocks are shared between consecutive snapshots", () => {
    const events = liveEvents([
      { type: "text", pieces: ["a", "b"] },
      { type: "text", pieces: ["c", "d", "e"] },
    ]);
    const snapshotter = createSnapshotter();
    const snapshots = events.map((event) => snapshotter.toSnapshot(event));
    const deltas = snapshots.filter((e) => e.type === "text_delta" && e.contentIndex === 1);
    assert.equal(deltas.length, 3);
    const [a, b] = deltas;
    assert.ok(a !== undefined && "partial" in a && b !== undefined && "partial" in b);
    assert.equal(
      a.partial.content[0],
      b.partial.content[0],
      "the finished block is the same object",
    );
    assert.notEqual(a.partial.content[1], b.partial.content[1]);
  });

  test("the final message is a copy the provider can no longer change", () => {
    const events = liveEvents([{ type: "text", pieces: ["x"] }]);
    const snapshotter = createSnapshotter();
    const last = snapshotter.toSnapshot(events.at(-1) as ResponseEvent);
    assert.ok(last.type === "done");
    const live = (events.at(-1) as Extract<ResponseEvent, { type: "done" }>).message;
    live.content.push({ type: "text", text: "later" });
    assert.equal(last.message.content.length, 1);
  });

  test("property: every partial equals what its events said, whatever the split", () => {
    const text = fc.string({ minLength: 0, maxLength: 40 });
    const cuts = fc.array(fc.nat(), { maxLength: 6 });
    const block = fc.oneof(
      fc.record({ type: fc.constant("text" as const), text, cuts }),
      fc.record({ type: fc.constant("thinking" as const), text, cuts }),
      fc.record({
        type: fc.constant("toolCall" as const),
        value: fc.dictionary(
          fc.string({ maxLength: 5 }),
          fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean()),
        ),
        cuts,
      }),
    );
    fc.assert(
      fc.property(fc.array(block, { maxLength: 5 }), (blocks) => {
        const pieces: Piece[] = blocks.map((b, i) =>
          b.type === "toolCall"
            ? { type: "toolCall", id: `call_${i}`, pieces: split(JSON.stringify(b.value), b.cuts) }
            : b.type === "text"
              ? { type: "text", pieces: split(b.text, b.cuts) }
              : { type: "thinking", pieces: split(b.text, b.cuts), signature: `sig_${i}` },
        );
        const snapshotter = createSnapshotter();
        const snapshots = liveEvents(pieces).map((event) => snapshotter.toSnapshot(event));
        assertGrammar(snapshots);
        assertSnapshots(snapshots);
        blocks.forEach((b, i) => {
          if (b.type === "toolCall") {
            assert.equal(snapshotter.toolCallArgumentsText(i), JSON.stringify(b.value));
          }
        });
      }),
    );
  });
});
