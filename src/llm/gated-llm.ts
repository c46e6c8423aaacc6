/**
 * An `LLM` whose calls are admitted one by one before they start (docs/team.md: users' budgets).
 * `admit` runs before the inner call is made; when it answers with a refusal, the call is never
 * sent and its stream ends with one `error` event carrying the refusal as its message, which the
 * client shows like any failed model call. A call that replays a saved body is a call already
 * running (resumed after a crash or a takeover) and is not gated: a budget stops the next call,
 * never a running one. A failing `admit` refuses (fails closed).
 */

import type { AssistantMessageEvent } from "@earendil-works/pi-ai";
import { toErrorMessage } from "./error-message.ts";
import type { LLM } from "./llm.ts";
import { createResponseStream } from "./response-stream.ts";
import type { LLMCall, LLMStream, ResponseEvent } from "./types.ts";

/** `null`: the call may go ahead; a string: why not, for the user. */
export type AdmitCall = (call: LLMCall) => Promise<string | null>;

export function gateLLM(llm: LLM, admit: AdmitCall): LLM {
  return {
    listModels: () => llm.listModels(),
    health: () => llm.health(),
    findModel: (name) => llm.findModel(name),
    stream(call) {
      if (call.replay !== undefined) return llm.stream(call);
      return deferredStream(call, llm, admit);
    },
  };
}

function deferredStream(call: LLMCall, llm: LLM, admit: AdmitCall): LLMStream {
  const controller = new AbortController();
  const onAbort = () => controller.abort(call.signal?.reason);
  if (call.signal?.aborted === true) controller.abort(call.signal.reason);
  else call.signal?.addEventListener("abort", onAbort, { once: true });
  const release = () => call.signal?.removeEventListener("abort", onAbort);

  const refusal = (message: string): LLMStream => {
    const error = toErrorMessage({
      api: "unknown",
      provider: "cursor-byok",
      model: call.model,
      reason: controller.signal.aborted ? "aborted" : "error",
      errorMessage: message,
      timestamp: Date.now(),
    });
    async function* events(): AsyncIterable<AssistantMessageEvent> {
      yield { type: "error", reason: error.stopReason as "error" | "aborted", error };
    }
    return createResponseStream({
      callID: call.callID,
      controller,
      events: events(),
      toFailure: (reason, text) => ({ ...error, stopReason: reason, errorMessage: text }),
      onEnd: release,
    });
  };

  let inner: LLMStream | undefined;
  /** The stream events come from, once admission decided (the inner call or the refusal). */
  let settled: LLMStream | undefined;
  const decided: Promise<LLMStream> = admit(call).then(
    (verdict) => {
      if (controller.signal.aborted) return refusal("Request was aborted");
      if (verdict !== null) return refusal(verdict);
      // The caller's signal stays linked: aborting it aborts the inner call through ours.
      inner = llm.stream({ ...call, signal: controller.signal });
      return inner;
    },
    (error: unknown) =>
      refusal(
        `The model call was not started: its admission check failed (${
          error instanceof Error ? error.message : String(error)
        }).`,
      ),
  );
  const ready = decided.then((stream) => {
    settled = stream;
    return stream;
  });

  return {
    callID: call.callID,
    get exactRequest() {
      return inner?.exactRequest;
    },
    get attempts() {
      return inner?.attempts ?? [];
    },
    toolCallArgumentsText: (contentIndex) => inner?.toolCallArgumentsText(contentIndex),
    signal: controller.signal,
    abort: (reason) => controller.abort(reason),
    recv: async () => (await ready).recv(),
    poll: () => settled?.poll(),
    async *[Symbol.asyncIterator](): AsyncIterator<ResponseEvent> {
      yield* await ready;
    },
  };
}
