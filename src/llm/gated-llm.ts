/**
 * An `LLM` whose calls are admitted one by one before they start, and settled when they end
 * (docs/team.md: users' budgets and keys).
 *
 * `admit` runs before the inner call is made, with the call's reservation (call-estimate.ts). It
 * answers:
 * - a refusal: the call is never sent; its stream ends with one `error` event carrying the
 *   refusal as its message, which the client shows like any failed model call (a budget refusal
 *   starts with `BUDGET_REACHED_PREFIX` and is told apart by `isBudgetRefusal`);
 * - an admission, with the key to send instead of the configured one (a user's own key) and a
 *   `settle` that is told what the call used once it ended — reported, or estimated for a call
 *   cut short after tokens arrived (aborted, failed) — before the terminal event is handed out,
 *   so whoever sees a call end sees it counted.
 *
 * A call that replays a saved body is a call already running (resumed after a crash or a
 * takeover): it is admitted with `replay: true`, so its key and its settlement apply but a budget
 * does not stop it. A failing `admit` refuses (fails closed).
 */

import type { AssistantMessageEvent } from "@earendil-works/pi-ai";
import {
  type CallAmount,
  createUsageMeter,
  estimateInputTokens,
  toReservation,
} from "./call-estimate.ts";
import { toErrorMessage } from "./error-message.ts";
import type { LLM, ModelInfo } from "./llm.ts";
import { createResponseStream } from "./response-stream.ts";
import type { Secret } from "./secret.ts";
import type { AssistantMessage, LLMCall, LLMStream } from "./types.ts";

/** How a budget refusal's message starts; the client shows the message as is. */
export const BUDGET_REACHED_PREFIX = "Budget reached: ";
/** The provider name of the calls this gate refused (never sent). */
export const GATE_PROVIDER = "cursor-byok";

export interface AdmissionRequest {
  readonly call: LLMCall;
  /** The configured model called (its provider id picks a user's key), if known. */
  readonly model: ModelInfo | undefined;
  /** A replay of a call admitted before: not held to a budget again. */
  readonly replay: boolean;
  /** What the call may use at most: held against the budget until it is settled. */
  readonly reservation: CallAmount;
}

export type Admission =
  | {
      readonly type: "refused";
      /** `budget`: a budget is reached (the message starts with `BUDGET_REACHED_PREFIX`). */
      readonly kind: "budget" | "other";
      /** For the user: who, what, and what to do. */
      readonly message: string;
    }
  | {
      readonly type: "admitted";
      /** Sent instead of the model's configured key. */
      readonly apiKey?: Secret;
      /** Told what the call used, once it ended. Its failure does not fail the call. */
      readonly settle?: (used: CallAmount) => Promise<void>;
      /**
       * Called every `holdEveryMs` while the call runs (from admission to settlement), so its
       * reservation is not taken for an abandoned one. Its failure does not fail the call.
       */
      readonly hold?: () => Promise<void>;
    };

export type AdmitCall = (request: AdmissionRequest) => Promise<Admission>;

/** Whether a failed call's message is a budget refusal of this gate. */
export function isBudgetRefusal(message: Pick<AssistantMessage, "provider" | "errorMessage">) {
  return (
    message.provider === GATE_PROVIDER &&
    (message.errorMessage ?? "").startsWith(BUDGET_REACHED_PREFIX)
  );
}

export interface GateOptions {
  /** How often a running call's `hold` is called. Default: 60 s (store/users.ts). */
  readonly holdEveryMs?: number;
}

/** The default of `GateOptions.holdEveryMs` (the store's `RESERVATION_HOLD_EVERY_MS`). */
export const HOLD_EVERY_MS = 60_000;

export function gateLLM(llm: LLM, admit: AdmitCall, options: GateOptions = {}): LLM {
  const holdEveryMs = options.holdEveryMs ?? HOLD_EVERY_MS;
  return {
    listModels: () => llm.listModels(),
    health: () => llm.health(),
    findModel: (name) => llm.findModel(name),
    stream: (call) => gatedStream(call, llm, admit, holdEveryMs),
  };
}

function gatedStream(call: LLMCall, llm: LLM, admit: AdmitCall, holdEveryMs: number): LLMStream {
  // No closure below refers to `call` itself, which would keep it (its request, the caller's
  // hooks) for as long as the call streams: only `pending` does, and lets go once it is sent.
  const controller = new AbortController();
  const signal = call.signal;
  const modelName = call.model;
  const onAbort = () => controller.abort(signal?.reason);
  if (signal?.aborted === true) controller.abort(signal.reason);
  else signal?.addEventListener("abort", onAbort, { once: true });
  const release = () => signal?.removeEventListener("abort", onAbort);
  const model = llm.findModel(modelName);
  let pending: LLMCall | undefined = call;

  const failure = (reason: "error" | "aborted", message: string): AssistantMessage =>
    toErrorMessage({
      api: "unknown",
      provider: GATE_PROVIDER,
      model: modelName,
      reason,
      errorMessage: message,
      timestamp: Date.now(),
    });
  const refusal = (message: string): AssistantMessageEvent => {
    const reason = controller.signal.aborted ? "aborted" : "error";
    return { type: "error", reason, error: failure(reason, message) };
  };

  let inner: LLMStream | undefined;
  async function* events(): AsyncIterable<AssistantMessageEvent> {
    let sent = pending as LLMCall | undefined;
    pending = undefined;
    if (sent === undefined) throw new Error("a gated call's events are read once");
    const inputTokens = estimateInputTokens(sent);
    let admission: Admission;
    try {
      admission = await admit({
        call: sent,
        model,
        replay: sent.replay !== undefined,
        reservation: toReservation(sent, model, inputTokens),
      });
    } catch (error) {
      yield refusal(
        `The model call was not started: its admission check failed (${
          error instanceof Error ? error.message : String(error)
        }).`,
      );
      return;
    }
    if (admission.type === "refused") {
      const message =
        admission.kind === "budget" && !admission.message.startsWith(BUDGET_REACHED_PREFIX)
          ? `${BUDGET_REACHED_PREFIX}${admission.message}`
          : admission.message;
      yield refusal(message);
      return;
    }
    const { settle, hold } = admission;
    if (controller.signal.aborted) {
      await settle?.({ tokens: 0, cost: 0 }).catch(() => {});
      yield refusal("Request was aborted");
      return;
    }
    // While the call runs, its reservation is marked as in use (store/users.ts `hold`).
    const holding =
      hold === undefined
        ? undefined
        : setInterval(() => void hold().catch(() => {}), holdEveryMs).unref();
    try {
      // The caller's signal stays linked: aborting it aborts the inner call through ours.
      inner = startInner(llm, sent, controller.signal, admission.apiKey);
      sent = undefined;
      const meter = createUsageMeter(inputTokens, model);
      for await (const event of inner) {
        meter.see(event);
        if (event.type === "done" || event.type === "error") {
          clearInterval(holding);
          // Retried and reported by the admission's owner (cli/team-users.ts): never fails the call.
          await settle?.(meter.used(event)).catch(() => {});
        }
        yield event;
      }
    } finally {
      clearInterval(holding);
    }
  }

  return createResponseStream({
    callID: call.callID,
    controller,
    events: events(),
    hooks: {
      toFailure: failure,
      exactRequest: () => inner?.exactRequest,
      attempts: () => inner?.attempts ?? [],
      // The inner call's raw argument text (the outer snapshot sees only the parsed events).
      argumentsText: (contentIndex) => inner?.toolCallArgumentsText(contentIndex),
      onEnd: release,
    },
  });
}

/**
 * The inner call, started from a function of its own: a suspended async function keeps what its
 * variables hold, used again or not, and the gate's generator must not keep the sent call.
 */
function startInner(
  llm: LLM,
  sent: LLMCall,
  signal: AbortSignal,
  apiKey: Secret | undefined,
): LLMStream {
  return llm.stream({ ...sent, signal, ...(apiKey === undefined ? {} : { apiKey }) });
}
