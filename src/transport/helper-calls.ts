/**
 * One small model call for a helper task (chat title, transcript overview, commit message,
 * branch name): the prompt from the dialect (cursor/helper-tasks.ts), no tools, no history, no
 * store. Bounded by a time limit, so a slow or stuck provider cannot hold the client's request
 * past its own time-out.
 */
import { randomUUID } from "node:crypto";
import type { LLM } from "../llm/index.ts";
import type { HelperPrompt } from "./cursor/helper-tasks.ts";

/** The pseudo-conversations helper calls run in: the server's, never a user's (user-access.ts). */
export const HELPER_CONVERSATION_PREFIX = "cursor-byok-helper-";

export type HelperTask = "title" | "overview" | "commit-message" | "branch-name";

export type HelperResult =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "failed"; readonly error: string };

export interface HelperCallOptions {
  /** The configured model to use; `undefined`: the default model (the first offered). */
  readonly model: string | undefined;
  readonly timeoutMs: number;
}

export type HelperCall = (
  task: HelperTask,
  prompt: HelperPrompt,
  signal: AbortSignal,
) => Promise<HelperResult>;

export function createHelperCall(
  llm: Pick<LLM, "stream" | "listModels">,
  now: () => number,
  options: HelperCallOptions,
): HelperCall {
  return async (task, prompt, signal) => {
    const model = options.model ?? llm.listModels()[0]?.name;
    if (model === undefined) return { type: "failed", error: "no model is configured" };
    const stream = llm.stream({
      callID: `helper-${task}-${randomUUID()}`,
      model,
      // One cache key per task: the instruction prefix is the same for every call of a task.
      conversationID: `${HELPER_CONVERSATION_PREFIX}${task}`,
      signal: AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)]),
      request: {
        systemPrompt: prompt.systemPrompt,
        messages: [{ role: "user", content: prompt.userText, timestamp: now() }],
        tools: [],
      },
    });
    for await (const event of stream) {
      if (event.type === "done") {
        const text = event.message.content
          .flatMap((block) => (block.type === "text" ? [block.text] : []))
          .join("");
        return { type: "text", text };
      }
      if (event.type === "error") {
        return {
          type: "failed",
          error: signal.aborted
            ? "the client canceled the request"
            : event.reason === "aborted"
              ? `no answer from model "${model}" within ${options.timeoutMs} ms`
              : (event.error.errorMessage ?? "the model call failed"),
        };
      }
    }
    return { type: "failed", error: "the model stream ended without an answer" };
  };
}
