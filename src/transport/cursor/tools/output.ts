/** Builders shared by the tool handlers. */
import type { ImageContent } from "../../../llm/types.ts";
import type { TodoItem } from "../gen/agent/v1/common_pb.js";
import type { ClientReply, ToolOutput, UiTool, UiUpdate } from "./types.ts";

export function toOutput(
  text: string,
  ui: UiTool,
  options: {
    readonly isError?: boolean;
    readonly images?: readonly ImageContent[];
    readonly updates?: readonly UiUpdate[];
    readonly todos?: readonly TodoItem[];
  } = {},
): ToolOutput {
  return {
    text,
    isError: options.isError ?? false,
    images: options.images ?? [],
    ui,
    updates: options.updates ?? [],
    todos: options.todos ?? null,
  };
}

/** The message for a reply of the wrong kind (e.g. a write result to a read request). */
export function toUnexpectedReply(reply: ClientReply): string {
  const kind =
    reply.type === "server"
      ? `a ${reply.result.type} result`
      : (reply.result.case ?? "an empty result");
  return `The client answered with ${kind}, which does not fit this tool call; the call did not complete.`;
}
