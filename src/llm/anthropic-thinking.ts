/**
 * With budget thinking on, Anthropic refuses a request that ends with tool results whose calls'
 * assistant message does not start with a thinking block ("When `thinking` is enabled, a final
 * `assistant` message must start with a thinking block", 400). Claude's own messages always do;
 * another model's never can (pi-ai drops foreign thinking, and a signature cannot be made up):
 * a fallback to Claude in the middle of a turn, or a switch while a tool batch ran. Anthropic's
 * remedy is to disable thinking, so that one request goes without; the next turn (a new user
 * message) thinks again. Only the `thinking` field changes: the messages, and so the prefix of
 * the next request, stay as they are (docs/design.md §9).
 */
type JsonRecord = Record<string, unknown>;

/** The payload with thinking disabled where Anthropic would refuse it, or `payload` itself. */
export function withThinkingAllowed(api: string, payload: unknown): unknown {
  if (api !== "anthropic-messages" || !isRecord(payload)) return payload;
  if (!isRecord(payload.thinking) || payload.thinking.type !== "enabled") return payload;
  const messages = Array.isArray(payload.messages) ? payload.messages : [];
  const last: unknown = messages.at(-1);
  const final: unknown = messages.at(-2);
  if (!isRecord(last) || last.role !== "user" || !Array.isArray(last.content)) return payload;
  const results = last.content;
  if (results.length === 0 || !results.every((b) => isRecord(b) && b.type === "tool_result")) {
    return payload;
  }
  if (!isRecord(final) || final.role !== "assistant" || !Array.isArray(final.content)) {
    return payload;
  }
  const first: unknown = final.content[0];
  if (isRecord(first) && (first.type === "thinking" || first.type === "redacted_thinking")) {
    return payload;
  }
  return { ...payload, thinking: { type: "disabled" } };
}

function isRecord(value: unknown): value is JsonRecord {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
