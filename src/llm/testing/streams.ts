/**
 * Test helpers for response streams: draining a stream, and checking the stream contract
 * (event grammar, snapshots that never change, partials that match the deltas).
 */
import assert from "node:assert/strict";
import { toZeroUsage } from "../error-message.ts";
import type { AssistantMessage, ResponseEvent, ResponseStream } from "../types.ts";

/** An assistant message of model `m` that used nothing, with `text` as its one block if any. */
export function toTestMessage(
  stopReason: AssistantMessage["stopReason"],
  text = "",
): AssistantMessage {
  return {
    role: "assistant",
    content: text === "" ? [] : [{ type: "text", text }],
    api: "test-api",
    provider: "test",
    model: "m",
    usage: toZeroUsage(),
    stopReason,
    timestamp: 0,
  };
}

/** Every event of `stream`, in order, until it ends. Fails instead of looping forever. */
export async function collect(stream: ResponseStream, limit = 10_000): Promise<ResponseEvent[]> {
  const events: ResponseEvent[] = [];
  for (let event = await stream.recv(); event !== undefined; event = await stream.recv()) {
    events.push(event);
    assert.ok(events.length <= limit, `stream produced more than ${limit} events`);
  }
  return events;
}

/**
 * Drains `stream` like `collect`, serialising each event when it is handed out, and checks at
 * the end that no event changed afterwards (docs/design.md §4.1: snapshots, not live objects).
 */
export async function collectChecked(stream: ResponseStream): Promise<ResponseEvent[]> {
  const events: ResponseEvent[] = [];
  const taken: string[] = [];
  for (let event = await stream.recv(); event !== undefined; event = await stream.recv()) {
    events.push(event);
    taken.push(JSON.stringify(event));
    assert.ok(events.length <= 10_000, "stream produced more than 10000 events");
  }
  assert.equal(await stream.recv(), undefined, "recv() after the end must stay undefined");
  events.forEach((event, i) => {
    assert.equal(
      JSON.stringify(event),
      taken[i],
      `event ${i} (${event.type}) changed after it was handed out`,
    );
  });
  assertGrammar(events);
  assertSnapshots(events);
  return events;
}

export function terminalOf(events: readonly ResponseEvent[]): ResponseEvent {
  const last = events.at(-1);
  assert.ok(last !== undefined, "the stream produced no event");
  return last;
}

/** The stream grammar of types.ts: start, per-block start/deltas/end, exactly one terminal last. */
export function assertGrammar(events: readonly ResponseEvent[]): void {
  const terminals = events.filter((e) => e.type === "done" || e.type === "error");
  assert.equal(terminals.length, 1, "exactly one terminal event");
  assert.equal(events.at(-1), terminals[0], "the terminal event is the last one");
  const first = events[0];
  if (first?.type !== "start") {
    assert.equal(events.length, 1, "a stream that fails before start holds only the error");
    assert.equal(first?.type, "error");
    return;
  }
  assert.equal(events.filter((e) => e.type === "start").length, 1, "one start");
  const kinds = new Map<number, { kind: string; ended: boolean }>();
  for (const event of events.slice(1, -1)) {
    assert.ok("contentIndex" in event, `unexpected ${event.type} between start and the terminal`);
    const [kind, phase] = event.type.split("_") as [string, string];
    const block = kinds.get(event.contentIndex);
    if (phase === "start") {
      assert.equal(block, undefined, `block ${event.contentIndex} started twice`);
      kinds.set(event.contentIndex, { kind, ended: false });
      continue;
    }
    assert.ok(block !== undefined, `${event.type} before its block started`);
    assert.equal(block.kind, kind, `${event.type} on a ${block.kind} block`);
    assert.equal(block.ended, false, `${event.type} after its block ended`);
    if (phase === "end") block.ended = true;
  }
  if (events.at(-1)?.type === "done") {
    for (const [index, block] of kinds) assert.ok(block.ended, `block ${index} never ended`);
  }
}

/**
 * Each event's partial shows exactly what the events up to it said: text and thinking equal
 * their deltas so far (or the `*_end` content once ended), tool calls carry their final form
 * once ended; snapshots are frozen.
 */
export function assertSnapshots(events: readonly ResponseEvent[]): void {
  const texts = new Map<number, string>();
  const ended = new Map<number, unknown>();
  for (const event of events) {
    if (!("partial" in event)) continue;
    switch (event.type) {
      case "text_delta":
      case "thinking_delta":
        texts.set(event.contentIndex, (texts.get(event.contentIndex) ?? "") + event.delta);
        break;
      case "text_end":
      case "thinking_end":
        texts.set(event.contentIndex, event.content);
        ended.set(event.contentIndex, event.partial.content[event.contentIndex]);
        break;
      case "toolcall_end":
        assert.deepEqual(event.partial.content[event.contentIndex], event.toolCall);
        ended.set(event.contentIndex, event.toolCall);
        break;
      default:
        break;
    }
    assert.ok(Object.isFrozen(event.partial), `${event.type}: partial is not frozen`);
    assert.ok(Object.isFrozen(event.partial.content), `${event.type}: content is not frozen`);
    event.partial.content.forEach((block, index) => {
      assert.ok(Object.isFrozen(block), `${event.type}: block ${index} is not frozen`);
      if (block.type === "text")
        assert.equal(block.text, texts.get(index) ?? "", `text ${index} at ${event.type}`);
      if (block.type === "thinking" && block.redacted !== true) {
        assert.equal(block.thinking, texts.get(index) ?? "", `thinking ${index} at ${event.type}`);
      }
      if (ended.has(index))
        assert.deepEqual(block, ended.get(index), `block ${index} changed after its end`);
    });
  }
}

/** A retry `sleep` that returns at once and records the waits asked for. */
export function recordingSleep(): {
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly delays: number[];
} {
  const delays: number[] = [];
  return {
    delays,
    sleep: (ms, signal) => {
      delays.push(ms);
      return signal.aborted ? Promise.reject(signal.reason) : Promise.resolve();
    },
  };
}
