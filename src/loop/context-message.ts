/**
 * Per-turn context enters history as text blocks at the head of the turn's user message, and
 * only for keys whose text changed since the model last saw them. Unchanged context adds
 * nothing, so the cached prefix of the next request is as long as possible.
 */
import { hash as digest } from "node:crypto";
import type { ImageContent, TextContent, UserMessage } from "../llm/types.ts";
import { append } from "./append.ts";
import type { ContextSupplement, SeenContext } from "./types.ts";

export function withContext(
  message: UserMessage,
  supplements: readonly ContextSupplement[],
  seen: readonly SeenContext[],
): { message: UserMessage; seen: readonly SeenContext[] } {
  const blocks: TextContent[] = [];
  let nextSeen = seen;
  for (const supplement of supplements) {
    // One-shot (no `Hash` object per supplement, issue #19); the same digest of the UTF-8 text.
    const hash = digest("sha256", supplement.text, "hex");
    const previous = nextSeen.find((entry) => entry.key === supplement.key);
    if (previous?.hash === hash) continue;
    blocks.push({ type: "text", text: supplement.text });
    nextSeen = previous
      ? nextSeen.map((entry) => (entry.key === supplement.key ? { key: entry.key, hash } : entry))
      : append(nextSeen, [{ key: supplement.key, hash }]);
  }
  if (blocks.length === 0) return { message, seen };
  return {
    message: {
      ...message,
      content: append<TextContent | ImageContent>(blocks, toBlocks(message.content)),
    },
    seen: nextSeen,
  };
}

function toBlocks(content: UserMessage["content"]): (TextContent | ImageContent)[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : [...content];
}
