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

import { errorMessage } from "../errors/error-message.ts";
import {
  type CallAmount,
  createUsageMeter,
  estimateInputTokens,
  toReservation,
} from "./call-estimate.ts";
import { toErrorMessage } from "./error-message.ts";
import type { LLM, ModelInfo } from "./llm.ts";
import { createRelayStream, endRelay, relayEvent } from "./response-stream.ts";
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
  // hooks) for as long as the call streams: `drive` takes it from `pending`, which lets go.
  const controller = new AbortController();
  const signal = call.signal;
  const onAbort = () => controller.abort(signal?.reason);
  if (signal?.aborted === true) controller.abort(signal.reason);
  else signal?.addEventListener("abort", onAbort, { once: true });
  const gate: Gate = {
    pending: call,
    modelName: call.model,
    model: llm.findModel(call.model),
    controller,
    inner: undefined,
  };
  const failure = (reason: "error" | "aborted", message: string): AssistantMessage =>
    toFailure(gate.modelName, reason, message);
  // The inner call's events are snapshots already: relayed as they are, one hop, no copy.
  const stream = createRelayStream({
    callID: call.callID,
    controller,
    hooks: {
      toFailure: failure,
      exactRequest: () => gate.inner?.exactRequest,
      attempts: () => gate.inner?.attempts ?? [],
      argumentsText: (contentIndex) => gate.inner?.toolCallArgumentsText(contentIndex),
      onEnd: () => signal?.removeEventListener("abort", onAbort),
    },
  });
  void drive(gate, stream, llm, admit, holdEveryMs);
  return stream;
}

/** One gated call's state, read by its stream's hooks. */
interface Gate {
  /** The call, until `drive` takes it. */
  pending: LLMCall | undefined;
  readonly modelName: string;
  readonly model: ModelInfo | undefined;
  readonly controller: AbortController;
  /** The admitted call, once started. */
  inner: LLMStream | undefined;
}

function toFailure(model: string, reason: "error" | "aborted", message: string): AssistantMessage {
  return toErrorMessage({
    api: "unknown",
    provider: GATE_PROVIDER,
    model,
    reason,
    errorMessage: message,
    timestamp: Date.now(),
  });
}

/**
 * Admits the call, then relays the inner call's events to `stream` as they come (read eagerly,
 * whether or not anyone reads `stream`, so that an ended call is always settled and its hold
 * stopped), settling before the terminal event is handed on.
 */
async function drive(
  gate: Gate,
  stream: LLMStream,
  llm: LLM,
  admit: AdmitCall,
  holdEveryMs: number,
): Promise<void> {
  const { controller, model } = gate;
  const refuse = (message: string): void => {
    const reason = controller.signal.aborted ? "aborted" : "error";
    relayEvent(stream, {
      type: "error",
      reason,
      error: toFailure(gate.modelName, reason, message),
    });
  };
  let sent = gate.pending;
  gate.pending = undefined;
  let holding: ReturnType<typeof setInterval> | undefined;
  let failed: string | undefined;
  try {
    if (sent === undefined) throw new Error("a gated call is driven once");
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
      refuse(
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
      refuse(message);
      return;
    }
    const { settle, hold } = admission;
    if (controller.signal.aborted) {
      await settle?.({ tokens: 0, cost: 0 }).catch(() => {});
      refuse("Request was aborted");
      return;
    }
    // While the call runs, its reservation is marked as in use (store/users.ts `hold`).
    if (hold !== undefined) {
      holding = setInterval(() => void hold().catch(() => {}), holdEveryMs).unref();
    }
    // The caller's signal stays linked: aborting it aborts the inner call through ours.
    const inner = startInner(llm, sent, controller.signal, admission.apiKey);
    gate.inner = inner;
    sent = undefined;
    const meter = createUsageMeter(inputTokens, model);
    for (;;) {
      // A burst of events is taken in one go; a wait only when none has arrived.
      const event = inner.poll() ?? (await inner.recv());
      if (event === undefined) return;
      meter.see(event);
      if (event.type === "done" || event.type === "error") {
        clearInterval(holding);
        // Retried and reported by the admission's owner (cli/team-users.ts): never fails the call.
        await settle?.(meter.used(event)).catch(() => {});
        relayEvent(stream, event);
        return;
      }
      relayEvent(stream, event);
    }
  } catch (error) {
    // Not expected (the inner stream never throws): the stream ends with it as its error.
    failed = errorMessage(error);
  } finally {
    clearInterval(holding);
    endRelay(stream, failed ?? "the model call ended without a terminal event");
  }
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
