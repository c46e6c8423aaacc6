/**
 * An SSE transcript in any provider kind's wire format for a scripted reply (text, tool calls,
 * usage), in the shapes of the recorded fixtures (`../fixtures/<provider>`), so long scripted
 * conversations can run against the fake provider for every kind.
 */
import { toChatCompletionSse } from "./chat-completions-sse.ts";
import type { ProviderID } from "./provider-specs.ts";

export interface Reply {
  readonly text?: string;
  readonly toolCalls?: readonly {
    readonly id: string;
    readonly name: string;
    readonly arguments: Readonly<Record<string, unknown>>;
  }[];
  /** Input tokens of the request (the provider's count) and output tokens. */
  readonly usage: { readonly input: number; readonly output: number };
}

export function toScriptedSse(kind: ProviderID, reply: Reply): string {
  switch (kind) {
    case "openai-chat":
    case "openai-compatible":
      return toChatCompletionSse({
        ...(reply.text === undefined ? {} : { text: reply.text }),
        ...(reply.toolCalls === undefined ? {} : { toolCalls: reply.toolCalls }),
        usage: { prompt: reply.usage.input, completion: reply.usage.output },
        chunkSize: 64,
      });
    case "anthropic":
      return toAnthropicSse(reply);
    case "gemini":
      return toGeminiSse(reply);
    case "openai-responses":
      return toResponsesSse(reply);
  }
}

function event(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

function toAnthropicSse(reply: Reply): string {
  const usage = { input_tokens: reply.usage.input, cache_read_input_tokens: 0 };
  let sse = event("message_start", {
    type: "message_start",
    message: {
      id: "msg_scripted",
      type: "message",
      role: "assistant",
      model: "claude-scripted",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, cache_creation_input_tokens: 0, output_tokens: 1 },
    },
  });
  let index = 0;
  if (reply.text !== undefined) {
    sse += event("content_block_start", {
      type: "content_block_start",
      index,
      content_block: { type: "text", text: "" },
    });
    sse += event("content_block_delta", {
      type: "content_block_delta",
      index,
      delta: { type: "text_delta", text: reply.text },
    });
    sse += event("content_block_stop", { type: "content_block_stop", index });
    index += 1;
  }
  for (const call of reply.toolCalls ?? []) {
    sse += event("content_block_start", {
      type: "content_block_start",
      index,
      content_block: { type: "tool_use", id: call.id, name: call.name, input: {} },
    });
    sse += event("content_block_delta", {
      type: "content_block_delta",
      index,
      delta: { type: "input_json_delta", partial_json: JSON.stringify(call.arguments) },
    });
    sse += event("content_block_stop", { type: "content_block_stop", index });
    index += 1;
  }
  const tools = (reply.toolCalls ?? []).length > 0;
  sse += event("message_delta", {
    type: "message_delta",
    delta: { stop_reason: tools ? "tool_use" : "end_turn", stop_sequence: null },
    usage: { ...usage, cache_creation_input_tokens: 0, output_tokens: reply.usage.output },
  });
  return sse + event("message_stop", { type: "message_stop" });
}

function toGeminiSse(reply: Reply): string {
  const parts: unknown[] = [];
  if (reply.text !== undefined) parts.push({ text: reply.text });
  for (const call of reply.toolCalls ?? []) {
    parts.push({ functionCall: { id: call.id, name: call.name, args: call.arguments } });
  }
  const data = {
    candidates: [{ content: { parts, role: "model" }, index: 0, finishReason: "STOP" }],
    usageMetadata: {
      promptTokenCount: reply.usage.input,
      candidatesTokenCount: reply.usage.output,
      totalTokenCount: reply.usage.input + reply.usage.output,
    },
    modelVersion: "gemini-scripted",
    responseId: "scripted",
  };
  return `data: ${JSON.stringify(data)}\n\n`;
}

function toResponsesSse(reply: Reply): string {
  let sequence = 0;
  const next = (name: string, data: Record<string, unknown>) =>
    event(name, { type: name, sequence_number: sequence++, ...data });
  const response = (status: string, output: unknown[], usage: unknown) => ({
    id: "resp_scripted",
    object: "response",
    created_at: 1767225600,
    status,
    error: null,
    incomplete_details: null,
    model: "gpt-scripted",
    output,
    usage,
  });
  let sse = next("response.created", { response: response("in_progress", [], null) });
  const output: unknown[] = [];
  if (reply.text !== undefined) {
    const item = { id: "msg_scripted", type: "message", role: "assistant" };
    const index = output.length;
    sse += next("response.output_item.added", {
      output_index: index,
      item: { ...item, status: "in_progress", content: [] },
    });
    const part = { type: "output_text", annotations: [], text: "" };
    sse += next("response.content_part.added", {
      item_id: item.id,
      output_index: index,
      content_index: 0,
      part,
    });
    sse += next("response.output_text.delta", {
      item_id: item.id,
      output_index: index,
      content_index: 0,
      delta: reply.text,
    });
    sse += next("response.output_text.done", {
      item_id: item.id,
      output_index: index,
      content_index: 0,
      text: reply.text,
    });
    const done = { ...part, text: reply.text };
    sse += next("response.content_part.done", {
      item_id: item.id,
      output_index: index,
      content_index: 0,
      part: done,
    });
    const complete = { ...item, status: "completed", content: [done] };
    sse += next("response.output_item.done", { output_index: index, item: complete });
    output.push(complete);
  }
  for (const call of reply.toolCalls ?? []) {
    const index = output.length;
    const args = JSON.stringify(call.arguments);
    const item = { id: `fc_${call.id}`, type: "function_call", call_id: call.id, name: call.name };
    sse += next("response.output_item.added", {
      output_index: index,
      item: { ...item, status: "in_progress", arguments: "" },
    });
    sse += next("response.function_call_arguments.delta", {
      item_id: item.id,
      output_index: index,
      delta: args,
    });
    sse += next("response.function_call_arguments.done", {
      item_id: item.id,
      output_index: index,
      arguments: args,
    });
    const complete = { ...item, status: "completed", arguments: args };
    sse += next("response.output_item.done", { output_index: index, item: complete });
    output.push(complete);
  }
  return (
    sse +
    next("response.completed", {
      response: response("completed", output, {
        input_tokens: reply.usage.input,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: reply.usage.output,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: reply.usage.input + reply.usage.output,
      }),
    })
  );
}
