/**
 * Turns pi-ai's events, whose `partial` is one live object the provider keeps mutating, into
 * events that are snapshots (docs/design.md §4.1).
 *
 * The content of each snapshot is rebuilt from the events themselves, not copied from the live
 * object: text and thinking grow by their deltas, a tool call's arguments are parsed from the
 * concatenated `toolcall_delta` text, and a block takes its final form (signatures included)
 * from its `*_end` event. So the partial of an event shows exactly what the events up to it
 * said, even when pi-ai queued several events and mutated the live object ahead of them.
 * Message-level fields (usage, response id, stop reason) are copied from the live object when
 * the event is read. Unchanged blocks are shared between snapshots, so a delta costs time in
 * the size of what changed, not of the whole message; so are the content array and the usage
 * while they do not change (issue #19: no copies per delta beyond the
 * changed block). Snapshots, their content arrays and their blocks are frozen.
 */
import {
  type AssistantMessage,
  type AssistantMessageEvent,
  ToolCallArgumentsStream,
} from "@earendil-works/pi-ai";
import { withMethods } from "./with-methods.ts";

type Block = AssistantMessage["content"][number];
type Usage = AssistantMessage["usage"];

/** Whether two usages have the same own keys with identical values (`cost` compared likewise). */
function sameUsage(a: Usage, b: Usage): boolean {
  return sameShallow(a, b, "cost") && sameShallow(a.cost, b.cost);
}

function sameShallow(a: object, b: object, except?: string): boolean {
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  let count = 0;
  for (const key in right) {
    if (key !== except && left[key] !== right[key]) return false;
    count++;
  }
  for (const _ in left) count--;
  return count === 0;
}

/**
 * Its members are methods shared by every instance: call them on the object, never pass them on
 * (bind or wrap in an arrow).
 */
export interface Snapshotter {
  /** The snapshot form of `event`. Events must be given in stream order. */
  toSnapshot(event: AssistantMessageEvent): AssistantMessageEvent;
  /** The concatenated `toolcall_delta` text of the tool call at `contentIndex`. */
  toolCallArgumentsText(contentIndex: number): string | undefined;
}

/**
 * One call's snapshotter: a plain record of its state, whose prototype is `snapshotterMethods`,
 * shared by every call (issue #19: no closures per call in flight).
 */
interface State {
  /** The blocks so far; frozen, and replaced (never changed) by `setBlock`. */
  content: readonly Block[];
  /** Made at the first tool call: an empty Map is ≈ 190 bytes per open call (issue #19). */
  argumentStreams: Map<number, ToolCallArgumentsStream> | undefined;
  /** The last snapshot's usage, reused while the live message's usage stays the same. */
  lastUsage: Usage | undefined;
}

const NO_BLOCKS: readonly Block[] = Object.freeze([]);

export function createSnapshotter(): Snapshotter {
  const state: State = {
    content: NO_BLOCKS,
    argumentStreams: undefined,
    lastUsage: undefined,
  };
  return withMethods(state, snapshotterMethods);
}

const snapshotterMethods: Snapshotter & ThisType<State> = {
  toSnapshot(event) {
    return toSnapshot(this, event);
  },
  toolCallArgumentsText(contentIndex) {
    return this.argumentStreams?.get(contentIndex)?.text;
  },
};

function setBlock(s: State, index: number, block: Block, live: AssistantMessage): void {
  // Copied by hand: `slice()` of a frozen array takes V8's slow path. Made to size: an array
  // grown by `push` reserves room for 17 blocks, for every delta and for the call's life
  // (issue #19).
  const content = s.content;
  const next: Block[] = new Array(Math.max(content.length, index + 1));
  for (let i = 0; i < content.length; i++) next[i] = content[i] as Block;
  // A block announced out of order: fill the gap from the live message so indexes line up.
  for (let i = content.length; i < index; i++) {
    const gap = live.content[i];
    next[i] = Object.freeze(gap === undefined ? { type: "text", text: "" } : structuredClone(gap));
  }
  next[index] = Object.freeze(block);
  s.content = Object.freeze(next);
}

function snapshot(s: State, live: AssistantMessage): AssistantMessage {
  const { usage, diagnostics, deferred } = live;
  if (s.lastUsage === undefined || !sameUsage(s.lastUsage, usage)) {
    s.lastUsage = Object.freeze({ ...usage, cost: Object.freeze({ ...usage.cost }) });
  }
  // One spread of the live message (V8's fast object clone), then our own parts over it.
  const message: AssistantMessage = {
    ...live,
    // Shared between snapshots until a block changes: it is frozen and never written.
    content: s.content as Block[],
    usage: s.lastUsage,
  };
  if (diagnostics !== undefined) message.diagnostics = structuredClone(diagnostics);
  if (deferred !== undefined) message.deferred = structuredClone(deferred);
  return Object.freeze(message);
}

function toSnapshot(s: State, event: AssistantMessageEvent): AssistantMessageEvent {
  switch (event.type) {
    case "start":
      s.content = NO_BLOCKS;
      s.lastUsage = undefined;
      s.argumentStreams?.clear();
      return { type: "start", partial: snapshot(s, event.partial) };
    case "text_start":
      setBlock(s, event.contentIndex, { type: "text", text: "" }, event.partial);
      return { ...event, partial: snapshot(s, event.partial) };
    case "text_delta": {
      const block = s.content[event.contentIndex];
      const next: Block =
        block?.type === "text"
          ? { ...block, text: block.text + event.delta }
          : { type: "text", text: event.delta };
      setBlock(s, event.contentIndex, next, event.partial);
      return { ...event, partial: snapshot(s, event.partial) };
    }
    case "text_end": {
      const live = event.partial.content[event.contentIndex];
      const final =
        live?.type === "text" ? structuredClone(live) : { type: "text" as const, text: "" };
      setBlock(s, event.contentIndex, { ...final, text: event.content }, event.partial);
      return { ...event, partial: snapshot(s, event.partial) };
    }
    case "thinking_start": {
      const live = event.partial.content[event.contentIndex];
      // Redacted thinking arrives whole at its start and gets no deltas.
      const start =
        live?.type === "thinking" && live.redacted === true
          ? structuredClone(live)
          : { type: "thinking" as const, thinking: "" };
      setBlock(s, event.contentIndex, start, event.partial);
      return { ...event, partial: snapshot(s, event.partial) };
    }
    case "thinking_delta": {
      const block = s.content[event.contentIndex];
      const next: Block =
        block?.type === "thinking"
          ? { ...block, thinking: block.thinking + event.delta }
          : { type: "thinking", thinking: event.delta };
      setBlock(s, event.contentIndex, next, event.partial);
      return { ...event, partial: snapshot(s, event.partial) };
    }
    case "thinking_end": {
      const live = event.partial.content[event.contentIndex];
      const final =
        live?.type === "thinking"
          ? structuredClone(live)
          : { type: "thinking" as const, thinking: "" };
      setBlock(s, event.contentIndex, { ...final, thinking: event.content }, event.partial);
      return { ...event, partial: snapshot(s, event.partial) };
    }
    case "toolcall_start": {
      const live = event.partial.content[event.contentIndex];
      s.argumentStreams ??= new Map();
      s.argumentStreams.set(event.contentIndex, new ToolCallArgumentsStream());
      setBlock(
        s,
        event.contentIndex,
        {
          type: "toolCall",
          id: live?.type === "toolCall" ? live.id : "",
          name: live?.type === "toolCall" ? live.name : "",
          arguments: {},
        },
        event.partial,
      );
      return { ...event, partial: snapshot(s, event.partial) };
    }
    case "toolcall_delta": {
      s.argumentStreams ??= new Map();
      let stream = s.argumentStreams.get(event.contentIndex);
      if (stream === undefined) {
        stream = new ToolCallArgumentsStream();
        s.argumentStreams.set(event.contentIndex, stream);
      }
      const args = stream.append(event.delta);
      const block = s.content[event.contentIndex];
      const live = event.partial.content[event.contentIndex];
      // Some providers name the call or give its id only after arguments started.
      const id =
        (live?.type === "toolCall" ? live.id : "") || (block?.type === "toolCall" ? block.id : "");
      const name =
        (live?.type === "toolCall" ? live.name : "") ||
        (block?.type === "toolCall" ? block.name : "");
      setBlock(
        s,
        event.contentIndex,
        { type: "toolCall", id, name, arguments: args },
        event.partial,
      );
      return { ...event, partial: snapshot(s, event.partial) };
    }
    case "toolcall_end": {
      const toolCall = structuredClone(event.toolCall);
      setBlock(s, event.contentIndex, toolCall, event.partial);
      return { ...event, toolCall, partial: snapshot(s, event.partial) };
    }
    case "done":
      return { ...event, message: structuredClone(event.message) };
    case "error":
      return { ...event, error: structuredClone(event.error) };
  }
}
