/**
 * Coalescing of adjacent streamed deltas (issue #19): when the client reads slower than the model
 * writes, the text deltas waiting for it are sent as one `text_delta` whose text is theirs
 * concatenated, and likewise thinking deltas. The client appends each delta to what it shows, so
 * one delta "ab" renders exactly like "a" then "b" (docs/protocol.md §2.5, interaction updates).
 *
 * Only deltas of the same kind with the same other fields (`is_server_notice`, `thinking_style`)
 * are joined; anything else between them (a tool call, thinking completed, a heartbeat) ends the
 * run, so the order and content of what the client receives are unchanged.
 */
import type { AgentServerMessage } from "./gen/agent/v1/agent_stream_pb.js";
import type { InteractionUpdate } from "./gen/agent/v1/interaction_update_pb.js";
import { toUpdateMessage } from "./server-message.ts";

/** A coalesced message stays below this many UTF-16 code units of text. */
export const MAX_COALESCED_TEXT = 64 * 1024;

/** The delta a message carries, when it is a plain text or thinking delta. */
function toDelta(message: AgentServerMessage):
  | {
      readonly kind: "textDelta" | "thinkingDelta";
      readonly text: string;
      /** The delta's other fields, as one comparable key. */
      readonly key: string;
    }
  | undefined {
  if (message.message.case !== "interactionUpdate" || message.$unknown !== undefined) {
    return undefined;
  }
  const update = message.message.value;
  if (update.$unknown !== undefined) return undefined;
  switch (update.message.case) {
    case "textDelta": {
      const delta = update.message.value;
      if (delta.$unknown !== undefined) return undefined;
      return { kind: "textDelta", text: delta.text, key: `${delta.isServerNotice}` };
    }
    case "thinkingDelta": {
      const delta = update.message.value;
      if (delta.$unknown !== undefined) return undefined;
      return { kind: "thinkingDelta", text: delta.text, key: `${delta.thinkingStyle}` };
    }
    default:
      return undefined;
  }
}

/**
 * The message to send for `pending[start]` and how many messages it stands for: a run of
 * adjacent deltas of one kind joined into one message, or `pending[start]` alone.
 */
export function coalesceDeltas(
  pending: readonly AgentServerMessage[],
  start: number,
): { readonly message: AgentServerMessage; readonly count: number } {
  const first = pending[start] as AgentServerMessage;
  const next = pending[start + 1];
  if (next === undefined) return { message: first, count: 1 };
  const head = toDelta(first);
  if (head === undefined) return { message: first, count: 1 };
  let text = head.text;
  let count = 1;
  for (let i = start + 1; i < pending.length; i++) {
    const delta = toDelta(pending[i] as AgentServerMessage);
    if (delta === undefined || delta.kind !== head.kind || delta.key !== head.key) break;
    if (text.length + delta.text.length > MAX_COALESCED_TEXT) break;
    text += delta.text;
    count++;
  }
  if (count === 1) return { message: first, count };
  const update = (first.message.value as InteractionUpdate).message;
  // The first delta's other fields (equal for the whole run), with the joined text.
  const message =
    update.case === "textDelta"
      ? toUpdateMessage({
          case: "textDelta",
          value: { text, isServerNotice: update.value.isServerNotice },
        })
      : toUpdateMessage({
          case: "thinkingDelta",
          value: {
            text,
            ...(update.case === "thinkingDelta" && update.value.thinkingStyle !== undefined
              ? { thinkingStyle: update.value.thinkingStyle }
              : {}),
          },
        });
  return { message, count };
}
