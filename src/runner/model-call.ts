/**
 * One model call of a conversation (docs/design.md §5, §7): the exact request is saved before any
 * byte goes upstream (a retry after a restart sends the saved bytes), then the call's events are
 * read outside the conversation's queue and applied in queued steps, one `transition` each: a
 * step takes the event it was started for and those that had already arrived behind it (at most
 * `MAX_BURST`), so a burst from one network read costs one trip through the queue (issue #19),
 * and a cancel can still come between two steps. A cancel or shutdown that comes while the call
 * is being prepared wins: nothing is opened.
 */
import { isContextOverflow, type LLM, type ResponseEvent, toFailureKind } from "../llm/index.ts";
import type { CallLLMCommand, Transition } from "../loop/index.ts";
import type { RecordWrite, Store } from "../store/index.ts";
import type { ApplyInput } from "./apply-input.ts";
import type { Live } from "./conversation-cache.ts";
import type { SerialQueue } from "./serial-queue.ts";
import type { ModelSwitch } from "./types.ts";

export interface ModelCallDeps {
  readonly store: Pick<Store, "getLLMCall" | "saveLLMCall">;
  readonly llm: Pick<LLM, "stream">;
  readonly now: () => number;
  readonly queue: SerialQueue;
  readonly apply: ApplyInput;
  /** True once the runner shuts down: nothing more is opened or applied. */
  readonly isStopping: () => boolean;
  /** Told before a call that repeats a failed call's request on another model is opened. */
  readonly onModelSwitch?: (info: ModelSwitch) => void;
}

/** Send attempts of a call that has a fallback model: the first and one retry. */
export const FAILOVER_ATTEMPTS = 2;

/** The most events one queued step applies. */
export const MAX_BURST = 256;

export type ModelCall = (entry: Live, command: CallLLMCommand) => Promise<void>;

export function createModelCall(deps: ModelCallDeps): ModelCall {
  const { store, llm, now, queue, apply, isStopping } = deps;
  return async (entry, command) => {
    if (isStopping()) return;
    const conversationID = entry.conversationID;
    const turnID = entry.state.committed.turnID;
    if (command.failover !== undefined) {
      deps.onModelSwitch?.({
        conversationID,
        turnID,
        callID: command.callID,
        failedCallID: command.failover.failedCallID,
        from: command.failover.from,
        to: command.model,
        kind: command.failover.kind,
        reason: command.failover.message,
      });
    }
    const saved = await store.getLLMCall(command.callID);
    // A cancel or shutdown that came while the call was being prepared wins: open nothing.
    const current = entry.state.committed;
    if (
      isStopping() ||
      entry.retired ||
      current.status !== "waiting_llm" ||
      current.call?.callID !== command.callID
    ) {
      return;
    }
    const stream = llm.stream({
      callID: command.callID,
      model: command.model,
      request: command.request,
      conversationID,
      ...(command.modelOptions === undefined ? {} : { options: command.modelOptions }),
      // With a fallback left, one quick retry and then the next model (README "Model routing").
      ...(command.fallbackLeft === true ? { maxAttempts: FAILOVER_ATTEMPTS } : {}),
      ...(saved === null ? {} : { replay: { body: saved.request } }),
      // One write before the send: the row is saved already `streaming` (bytes may go up once it
      // is), which a `planned` row followed by a status change only split in two (issue #19);
      // after a crash both read as an unfinished call whose saved bytes are sent again.
      beforeSend: async (exact) => {
        await store.saveLLMCall({
          callID: command.callID,
          conversationID,
          turnID,
          model: command.model,
          request: exact.body,
          requestHash: exact.bodyHash,
          messagesHash: command.messagesHash,
          messageCount: command.messageCount,
          lastMessageHash: command.lastMessageHash,
          status: "streaming",
        });
      },
    });
    entry.stream = { callID: command.callID, stream };
    // Timing for the dashboard: saved with the call's next commit, not as a write of its own.
    let firstEventAt: number | null = null;
    const timing = (): RecordWrite[] =>
      firstEventAt === null
        ? []
        : [{ type: "llm_call_first_event", callID: command.callID, at: firstEventAt }];
    /** Applies `first` and the events that had already arrived behind it, in order. */
    const applyBurst = async (first: ResponseEvent): Promise<Transition | null> => {
      let event: ResponseEvent | undefined = first;
      let step: Transition | null = null;
      for (let applied = 0; event !== undefined; applied++) {
        // "First token" is the first content delta, not `start` (docs/dashboard.md, Timing).
        if (
          event.type === "text_delta" ||
          event.type === "thinking_delta" ||
          event.type === "toolcall_delta"
        ) {
          firstEventAt ??= Math.floor(now());
        }
        step = await apply(
          entry,
          {
            type: "llm_event",
            callID: command.callID,
            event,
            // Why it failed, for the loop's failover decision (loop/model-route.ts).
            ...(event.type === "error" && event.reason === "error"
              ? { failure: toFailureKind(stream.attempts, event.error.errorMessage) }
              : {}),
            // The loop compacts and repeats the call once on a context-length error.
            ...(event.type === "error" && isContextOverflow(event.error)
              ? { contextOverflow: true }
              : {}),
          },
          command.callID,
          timing,
        );
        if (step === null || step.command.type !== "continue_llm") return step;
        if (applied + 1 >= MAX_BURST || isStopping() || entry.retired) return step;
        event = stream.poll();
      }
      return step;
    };
    try {
      for (let event = await stream.recv(); event !== undefined; event = await stream.recv()) {
        if (isStopping() || entry.retired) return;
        const step = await queue.run(conversationID, () => applyBurst(event));
        if (step === null || step.command.type !== "continue_llm") return;
      }
    } finally {
      if (entry.stream?.stream === stream) entry.stream = null;
      // After the terminal event this does nothing; before it, it closes the upstream request.
      stream.abort("stream no longer read");
    }
  };
}
