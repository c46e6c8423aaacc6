/**
 * Aggregation of a streaming response from its deltas. Every function returns a new
 * `PendingResponse`, or a string saying why the event does not fit the stream so far.
 */
import type { ResponseEvent } from "../llm/types.ts";
import type { PendingBlock, PendingResponse } from "./types.ts";

type BlockEvent = Exclude<ResponseEvent, { type: "start" | "done" | "error" }>;

export function createPendingResponse(
  callID: string,
  event: Extract<ResponseEvent, { type: "start" }>,
): PendingResponse {
  return { callID, blocks: [], usage: usageOf(event) ?? null };
}

/** Applies one block event; returns the reason when it breaks the stream grammar. */
export function applyBlockEvent(
  pending: PendingResponse,
  event: BlockEvent,
): PendingResponse | string {
  const index = event.contentIndex;
  if (!Number.isInteger(index) || index < 0) return `contentIndex ${index} is not a valid index`;
  const block = pending.blocks[index] ?? null;
  switch (event.type) {
    case "text_start":
    case "thinking_start":
    case "toolcall_start": {
      if (block !== null) return `${event.type}: block ${index} was already opened`;
      return withBlock(pending, index, openBlock(event), usageOf(event));
    }
    case "text_delta":
      if (block?.type !== "text" || !block.open) return `text_delta: no open text block ${index}`;
      return withBlock(
        pending,
        index,
        { ...block, text: block.text + event.delta },
        usageOf(event),
      );
    case "thinking_delta":
      if (block?.type !== "thinking" || !block.open) {
        return `thinking_delta: no open thinking block ${index}`;
      }
      return withBlock(
        pending,
        index,
        { ...block, thinking: block.thinking + event.delta },
        usageOf(event),
      );
    case "toolcall_delta":
      if (block?.type !== "toolCall" || !block.open) {
        return `toolcall_delta: no open tool call ${index}`;
      }
      return withBlock(
        pending,
        index,
        { ...block, argumentsText: block.argumentsText + event.delta },
        usageOf(event),
      );
    case "text_end":
      if (block?.type !== "text" || !block.open) return `text_end: no open text block ${index}`;
      return withBlock(
        pending,
        index,
        { type: "text", text: event.content, open: false },
        usageOf(event),
      );
    case "thinking_end":
      if (block?.type !== "thinking" || !block.open) {
        return `thinking_end: no open thinking block ${index}`;
      }
      return withBlock(
        pending,
        index,
        { type: "thinking", thinking: event.content, open: false },
        usageOf(event),
      );
    case "toolcall_end":
      if (block?.type !== "toolCall" || !block.open) {
        return `toolcall_end: no open tool call ${index}`;
      }
      return withBlock(
        pending,
        index,
        { ...block, id: event.toolCall.id, name: event.toolCall.name, open: false },
        usageOf(event),
      );
    default: {
      const unexpected: never = event;
      return `unexpected event ${(unexpected as { type: string }).type}`;
    }
  }
}

function openBlock(event: Extract<BlockEvent, { type: `${string}_start` }>): PendingBlock {
  switch (event.type) {
    case "text_start":
      return { type: "text", text: "", open: true };
    case "thinking_start":
      return { type: "thinking", thinking: "", open: true };
    case "toolcall_start": {
      // Providers differ in when the id and name arrive; take whatever the snapshot has now and
      // the authoritative values from `toolcall_end`.
      const known = event.partial?.content?.[event.contentIndex];
      const toolCall = known?.type === "toolCall" ? known : undefined;
      return {
        type: "toolCall",
        id: toolCall?.id ?? "",
        name: toolCall?.name ?? "",
        argumentsText: "",
        open: true,
      };
    }
  }
}

function withBlock(
  pending: PendingResponse,
  index: number,
  block: PendingBlock,
  usage: PendingResponse["usage"],
): PendingResponse {
  const blocks = [...pending.blocks];
  while (blocks.length < index) blocks.push(null);
  blocks[index] = block;
  return { callID: pending.callID, blocks, usage: usage ?? pending.usage };
}

/** The usage in an event's snapshot, if it carries one. */
function usageOf(
  event: Exclude<ResponseEvent, { type: "done" | "error" }>,
): PendingResponse["usage"] {
  return event.partial?.usage ?? null;
}
