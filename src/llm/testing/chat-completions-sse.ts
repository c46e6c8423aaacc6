/**
 * Builds an OpenAI Chat Completions SSE transcript for a scripted reply, chunked the way the API
 * streams it (role chunk, content pieces, one tool call per `index` with its arguments split
 * across chunks, a finish chunk with usage, then `[DONE]`), so end-to-end tests can script any
 * conversation against the fake provider.
 */
export interface ScriptedReply {
  readonly reasoning?: string;
  readonly text?: string;
  readonly toolCalls?: readonly {
    readonly id: string;
    readonly name: string;
    readonly arguments: Readonly<Record<string, unknown>>;
  }[];
  /** Defaults to `tool_calls` when there are tool calls, else `stop`. */
  readonly finish?: "stop" | "tool_calls" | "length";
  readonly usage?: {
    readonly prompt: number;
    readonly completion: number;
    readonly cached?: number;
  };
  /** Characters per content / argument chunk. */
  readonly chunkSize?: number;
  readonly id?: string;
  readonly model?: string;
}

export function toChatCompletionSse(reply: ScriptedReply): string {
  const id = reply.id ?? "chatcmpl-scripted";
  const model = reply.model ?? "scripted-model";
  const size = reply.chunkSize ?? 8;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null, usage?: unknown) =>
    `data: ${JSON.stringify({
      id,
      object: "chat.completion.chunk",
      created: 1767225600,
      model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(usage === undefined ? {} : { usage }),
    })}\n\n`;
  const pieces = (text: string): string[] => {
    const out: string[] = [];
    for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
    return out;
  };

  let sse = chunk({ role: "assistant", content: "" });
  for (const piece of pieces(reply.reasoning ?? "")) sse += chunk({ reasoning_content: piece });
  for (const piece of pieces(reply.text ?? "")) sse += chunk({ content: piece });
  (reply.toolCalls ?? []).forEach((call, index) => {
    sse += chunk({
      tool_calls: [
        { index, id: call.id, type: "function", function: { name: call.name, arguments: "" } },
      ],
    });
    for (const piece of pieces(JSON.stringify(call.arguments))) {
      sse += chunk({ tool_calls: [{ index, function: { arguments: piece } }] });
    }
  });
  const finish = reply.finish ?? ((reply.toolCalls ?? []).length > 0 ? "tool_calls" : "stop");
  const usage = reply.usage ?? { prompt: 100, completion: 20 };
  sse += chunk({}, finish, {
    prompt_tokens: usage.prompt,
    completion_tokens: usage.completion,
    total_tokens: usage.prompt + usage.completion,
    prompt_tokens_details: { cached_tokens: usage.cached ?? 0 },
  });
  return `${sse}data: [DONE]\n\n`;
}
