/**
 * Coalescing of adjacent streamed deltas (issue #19): when the client reads slower than the model
 * writes, a text delta pushed while the text delta before it still waits to be sent is joined
 * with it into one `text_delta` whose text is theirs concatenated, and likewise thinking deltas
 * (outbound-stream.ts `join`). The client appends each delta to what it shows, so one delta "ab"
 * renders exactly like "a" then "b" (docs/protocol.md §2.5, interaction updates).
 *
 * Only deltas of the same kind with the same other fields (`is_server_notice`, `thinking_style`)
 * are joined; anything else between them (a tool call, thinking completed, a heartbeat) ends the
 * run, so the order and content of what the client receives are unchanged.
 */
import type { AgentServerMessage } from "./gen/agent/v1/agent_stream_pb.js";
import type { InteractionUpdate } from "./gen/agent/v1/interaction_update_pb.js";
import { hasOuterFields, toTextDeltaMessage, toThinkingDeltaMessage } from "./server-message.ts";

/** A joined message stays below this many UTF-16 code units of text. */
export const MAX_COALESCED_TEXT = 64 * 1024;

/**
 * The update a message carries, when it is a plain interaction update: nothing else set on the
 * message (unknown fields, `ttft_breakdown`), which a joined message would drop.
 */
function toUpdate(message: AgentServerMessage): InteractionUpdate["message"] | undefined {
  if (
    message.message.case !== "interactionUpdate" ||
    message.$unknown !== undefined ||
    hasOuterFields(message)
  ) {
    return undefined;
  }
  const update = message.message.value;
  return update.$unknown === undefined ? update.message : undefined;
}

/**
 * The one message standing for `last` then `next` when both are plain text deltas, or both plain
 * thinking deltas, with the same other fields and together within `MAX_COALESCED_TEXT`; else
 * undefined (sent apart).
 */
export function joinDeltas(
  last: AgentServerMessage,
  next: AgentServerMessage,
): AgentServerMessage | undefined {
  const a = toUpdate(last);
  const b = toUpdate(next);
  if (a === undefined || b === undefined) return undefined;
  if (a.case === "textDelta" && b.case === "textDelta") {
    if (a.value.$unknown !== undefined || b.value.$unknown !== undefined) return undefined;
    if (a.value.isServerNotice !== b.value.isServerNotice) return undefined;
    if (a.value.text.length + b.value.text.length > MAX_COALESCED_TEXT) return undefined;
    return toTextDeltaMessage(a.value.text + b.value.text, a.value.isServerNotice);
  }
  if (a.case === "thinkingDelta" && b.case === "thinkingDelta") {
    if (a.value.$unknown !== undefined || b.value.$unknown !== undefined) return undefined;
    if (a.value.thinkingStyle !== b.value.thinkingStyle) return undefined;
    if (a.value.text.length + b.value.text.length > MAX_COALESCED_TEXT) return undefined;
    return toThinkingDeltaMessage(a.value.text + b.value.text, a.value.thinkingStyle);
  }
  return undefined;
}
