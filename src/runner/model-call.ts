/**
 * One model call of a conversation (docs/design.md §5, §7): the exact request is saved before any
 * byte goes upstream (a retry after a restart sends the saved bytes), then the call's events are
 * read outside the conversation's queue and applied one `transition` each. An event whose step
 * commits nothing (a delta that continues the call) is applied at once when nothing of the
 * conversation is queued or running (`ApplyInput.now`): no trip through the queue, no promise
 * (issue #19). Any other event goes through the queue, in a step that takes it and those that had
 * already arrived behind it (at most `MAX_BURST`), so a cancel can still come between two steps.
 *
 * A call planned by the step being committed is prepared before that commit (`prepare`): the
 * stream is opened and held at `beforeSend` until the commit, so its exact request is saved in
 * the step's own transaction — one store write (one fsync on SQLite) before the send instead of
 * two (issue #19). Nothing leaves the process before that commit returns; a step that is not
 * committed drops the call unsent (a lost compare-and-swap waits for the drop to end before the
 * step is applied again), and a cancel applied after it aborts the call. A call that waits for a
 * slot of its model does not hold the step (`onQueued`): it saves its request itself, with the
 * turn of the step that planned it, once it has its slot. A call opened
 * here otherwise (resumed, or not prepared): a cancel or shutdown that comes while it is being
 * prepared wins, nothing is opened.
 */
import {
  type ExactRequest,
  isContextOverflow,
  type LLM,
  type LLMCall,
  type LLMStream,
  type ResponseEvent,
  toFailureKind,
} from "../llm/index.ts";
import type { CallLLMCommand, LLMEventInput, Transition } from "../loop/index.ts";
import type { RecordWrite, Store } from "../store/index.ts";
import type { ApplyInput } from "./apply-input.ts";
import type { Live } from "./conversation-cache.ts";
import { type PreparedCall, toCallRow } from "./prepared-call.ts";
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
  /** Overrides `PREPARE_WAIT_MS` (RunnerOptions `prepareWaitMs`). */
  readonly prepareWaitMs?: number;
}

/** Send attempts of a call that has a fallback model: the first and one retry. */
export const FAILOVER_ATTEMPTS = 2;

/** The most events one queued step applies. */
export const MAX_BURST = 256;

/**
 * The most a step waits for the request of the call it plans (`prepare`) before it is committed
 * without it; the call then saves its request in a write of its own before sending, as a resumed
 * call does. Building a request takes about a millisecond, and a call that must wait for a slot
 * of its model (`maxConcurrent`) says so at once (`LLMCall.onQueued`): the step does not wait for
 * it. This bound only covers what is not signalled — a team admission (a store query), the first
 * load of a provider's module, a loaded machine — so that no step holds its conversation's inputs
 * (a cancel included) longer than that. Either outcome is correct: it decides only whether the
 * request is saved in the step's commit or by the call's own write.
 */
export const PREPARE_WAIT_MS = 50;

export interface ModelCall {
  /** Reads the call's events, opening it first unless it was `prepared` (and is sent now). */
  (entry: Live, command: CallLLMCommand, prepared?: PreparedCall): Promise<void>;
  /**
   * Opens the call the step being committed plans (in turn `turnID`) and waits until its exact
   * request is known; null when it is not opened here (stopping, or a request saved before: sent
   * again the usual way, from its bytes).
   */
  prepare(entry: Live, command: CallLLMCommand, turnID: string): Promise<PreparedCall | null>;
}

/** What `prepare` keeps for the reader: the held stream and its first event. */
interface Opened extends PreparedCall {
  readonly stream: LLMStream;
  readonly first: Promise<ResponseEvent | undefined>;
}

export function createModelCall(deps: ModelCallDeps): ModelCall {
  const { store, llm, now, queue, apply, isStopping } = deps;

  /** Opens the upstream stream of `command`; `beforeSend` gets its exact request. */
  const open = (
    entry: Live,
    command: CallLLMCommand,
    replay: string | null,
    beforeSend: (exact: ExactRequest) => Promise<void>,
  ): LLMStream => llm.stream(toLLMCall(entry, command, replay, beforeSend));

  const toLLMCall = (
    entry: Live,
    command: CallLLMCommand,
    replay: string | null,
    beforeSend: (exact: ExactRequest) => Promise<void>,
  ): LLMCall => {
    // A copy keeps its source's prompt-cache key (loop/types.ts `cacheKeyFrom`).
    const { cacheKeyFrom } = entry.state.committed;
    return {
      callID: command.callID,
      model: command.model,
      request: command.request,
      conversationID: entry.conversationID,
      ...(cacheKeyFrom === undefined ? {} : { cacheKeyFrom }),
      ...(command.modelOptions === undefined ? {} : { options: command.modelOptions }),
      // With a fallback left, one quick retry and then the next model (README "Model routing").
      ...(command.fallbackLeft === true ? { maxAttempts: FAILOVER_ATTEMPTS } : {}),
      ...(replay === null ? {} : { replay: { body: replay } }),
      beforeSend,
    };
  };

  const prepare = async (
    entry: Live,
    command: CallLLMCommand,
    turnID: string,
  ): Promise<PreparedCall | null> => {
    if (isStopping() || entry.retired) return null;
    if ((await store.getLLMCall(command.callID)) !== null) return null;
    const conversationID = entry.conversationID;
    // The request, kept only while the step decides; not after (issue #19: heap per stream).
    let deciding = true;
    let pending: ExactRequest | null = null;
    let seen!: (known: boolean) => void;
    const known = new Promise<boolean>((resolve) => {
      seen = resolve;
    });
    let send!: () => void;
    let drop!: (error: Error) => void;
    const committed = new Promise<void>((resolve, reject) => {
      send = resolve;
      drop = reject;
    });
    committed.catch(() => {});
    /** Whether the step's commit saves the call's row (else the call saves it, as before). */
    let inCommit = false;
    const stream = llm.stream({
      ...toLLMCall(entry, command, null, async (exact) => {
        if (deciding) {
          pending = exact;
          seen(true);
        }
        await committed;
        if (inCommit) return;
        // A call canceled before its send saves no row (nothing is sent: the fetch is aborted).
        if (stream.signal.aborted) throw new Error("the call was canceled before it was sent");
        await store.saveLLMCall(toCallRow(command, conversationID, turnID, exact));
      }),
      // Waiting for a slot of its model: the step goes on without the request (late path).
      onQueued: () => seen(false),
    });
    // Before the send, the only event a stream can have is its terminal error.
    const first = stream.recv();
    // A bound for waits that are not signalled (PREPARE_WAIT_MS).
    const timer = setTimeout(() => seen(false), deps.prepareWaitMs ?? PREPARE_WAIT_MS);
    const exact = (await Promise.race([known, first.then(() => false)])) ? pending : null;
    clearTimeout(timer);
    deciding = false;
    pending = null;
    inCommit = exact !== null;
    const opened: Opened = {
      callID: command.callID,
      exact,
      stream,
      first,
      send: () => {
        opened.exact = null;
        send();
      },
      drop: async () => {
        opened.exact = null;
        drop(new Error("the step that planned the call was not committed"));
        stream.abort("the step that planned the call was not committed");
        // Ended once `recv` has nothing more: its slot released and, behind a team gate, its
        // reservation settled (gated-llm.ts settles before the terminal event is handed out).
        await first;
        while ((await stream.recv()) !== undefined) {}
      },
    };
    return opened;
  };

  /** Sent prepared calls (`call` drops one that was not). */
  const sent = new WeakSet<Opened>();

  /** Opens (or lets go, when prepared) the stream of `command`; null when nothing is opened. */
  const openCall = async (
    entry: Live,
    command: CallLLMCommand,
    held: Opened | undefined,
  ): Promise<LLMStream | null> => {
    if (isStopping()) return null;
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
    const saved = held === undefined ? await store.getLLMCall(command.callID) : null;
    // A cancel or shutdown that came while the call was being prepared wins: open nothing (a
    // prepared call is dropped unsent).
    const current = entry.state.committed;
    if (
      isStopping() ||
      entry.retired ||
      current.status !== "waiting_llm" ||
      current.call?.callID !== command.callID
    ) {
      return null;
    }
    // The stream is registered in the same step as the check above (a cancel aborts it).
    if (held !== undefined) {
      sent.add(held);
      held.send();
      entry.stream = { callID: command.callID, stream: held.stream };
      return held.stream;
    }
    const stream = open(
      entry,
      command,
      saved?.request ?? null,
      // One write before the send: the row is saved already `streaming` (bytes may go up once
      // it is), which a `planned` row followed by a status change only split in two (issue
      // #19); after a crash both read as an unfinished call whose saved bytes are sent again.
      async (exact) => {
        await store.saveLLMCall(toCallRow(command, conversationID, turnID, exact));
      },
    );
    entry.stream = { callID: command.callID, stream };
    return stream;
  };

  const call = async (entry: Live, command: CallLLMCommand, prepared?: PreparedCall) => {
    let held = prepared as Opened | undefined;
    prepared = undefined;
    let stream: LLMStream;
    try {
      const opened = await openCall(entry, command, held);
      if (opened === null) return;
      stream = opened;
    } finally {
      // A prepared call not let go (stopping, state moved on, or a throw, e.g. `onModelSwitch`)
      // is dropped: its slot, its reservation and the stream end (review-19c finding 2).
      if (held !== undefined && !sent.has(held)) void held.drop();
    }
    let first: Promise<ResponseEvent | undefined> | undefined = held?.first ?? stream.recv();
    // Let go, as `first` once read (a suspended function keeps what its variables hold): neither
    // the prepared call's promises and closures nor the first event are kept while the call
    // streams (issue #19).
    held = undefined;
    // The call's reading state: one record, read by the module functions below (issue #19:
    // four closures and their context per call in flight, for as long as it streams).
    const reading: Reading = {
      apply,
      entry,
      command,
      stream,
      now,
      isStopping,
      firstEventAt: null,
      timing: undefined,
    };
    try {
      let event = await first;
      first = undefined;
      while (event !== undefined) {
        if (isStopping() || entry.retired) return;
        // With nothing of the conversation queued or running, a step that commits nothing (a
        // delta) is applied here and now: one event costs no trip through the queue and no
        // promise (issue #19). Anything else goes through the queue.
        const current: ResponseEvent = event;
        const idle = queue.idle(entry.conversationID);
        let step: Transition | null | undefined = idle ? applyNow(reading, current) : undefined;
        if (step === undefined) {
          if (idle) {
            // The step commits (`applyNow` said so): what the deltas before it wrote goes out
            // first (`afterWrites`).
            await afterWrites();
            if (isStopping() || entry.retired) return;
          }
          step = await queue.run(entry.conversationID, () => applyBurst(reading, current, idle));
        }
        if (step === null || step.command.type !== "continue_llm") return;
        event = stream.poll() ?? (await stream.recv());
      }
    } finally {
      if (entry.stream?.stream === stream) entry.stream = null;
      // After the terminal event this does nothing; before it, it closes the upstream request.
      stream.abort("stream no longer read");
    }
  };
  return Object.assign(call, { prepare });
}

/**
 * Resolves in the event loop's check phase, after the immediates already queued. A step that
 * commits (a call's end, say) does a millisecond or more of synchronous work (the store's commit,
 * the turn's end in the transport: its checkpoint) that would otherwise run in the same promise
 * jobs as the deltas before it, ahead of their writes: a client's stream sends a burst's deltas
 * from an immediate (docs/architecture.md, the transport's writer). So the last text of a reply
 * whose text and end arrive in one network read no longer waits for that work (issue #19).
 */
function afterWrites(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** One call being read (`call`): what its events are applied with. */
interface Reading {
  readonly apply: ApplyInput;
  readonly entry: Live;
  readonly command: CallLLMCommand;
  readonly stream: LLMStream;
  readonly now: () => number;
  readonly isStopping: () => boolean;
  /** When the first content delta came (epoch ms), for the dashboard; null before. */
  firstEventAt: number | null;
  /** `toTiming` of this call, made the first time a step is committed. */
  timing: ((step: Transition) => readonly RecordWrite[]) | undefined;
}

/** Timing for the dashboard: saved with the call's next commit, not as a write of its own. */
function toTiming(reading: Reading): RecordWrite[] {
  const { firstEventAt, command } = reading;
  return firstEventAt === null
    ? []
    : [{ type: "llm_call_first_event", callID: command.callID, at: firstEventAt }];
}

/** `toTiming` of the call, as `ApplyInput` takes it: made once, the first time it is needed. */
function timingOf(reading: Reading): (step: Transition) => readonly RecordWrite[] {
  reading.timing ??= () => toTiming(reading);
  return reading.timing;
}

/** The loop's input for `event`. */
function toInput(reading: Reading, event: ResponseEvent): LLMEventInput {
  return {
    type: "llm_event",
    callID: reading.command.callID,
    event,
    // Why it failed, for the loop's failover decision (loop/model-route.ts).
    ...(event.type === "error" && event.reason === "error"
      ? { failure: toFailureKind(reading.stream.attempts, event.error.errorMessage) }
      : {}),
    // The loop compacts and repeats the call once on a context-length error.
    ...(event.type === "error" && isContextOverflow(event.error) ? { contextOverflow: true } : {}),
  };
}

/** Applies `event` at once when its step commits nothing (`ApplyInput.now`), else undefined. */
function applyNow(reading: Reading, event: ResponseEvent): Transition | undefined {
  // "First token" is the first content delta, not `start` (docs/dashboard.md, Timing).
  if (
    event.type === "text_delta" ||
    event.type === "thinking_delta" ||
    event.type === "toolcall_delta"
  ) {
    reading.firstEventAt ??= Math.floor(reading.now());
  }
  return reading.apply.now(reading.entry, toInput(reading, event));
}

/**
 * Applies `first` and the events that had already arrived behind it, in order, in the
 * conversation's queue: each step with nothing to commit at once, the others committed.
 */
async function applyBurst(
  reading: Reading,
  first: ResponseEvent,
  commits: boolean,
): Promise<Transition | null> {
  const { entry, command, stream } = reading;
  let event: ResponseEvent | undefined = first;
  let step: Transition | null = null;
  for (let applied = 0; event !== undefined; applied++) {
    // `commits`: the first event was just found to need a commit (`applyNow` said so).
    const quick = applied === 0 && commits ? undefined : applyNow(reading, event);
    step =
      quick ??
      (await reading.apply(entry, toInput(reading, event), command.callID, timingOf(reading)));
    if (step === null || step.command.type !== "continue_llm") return step;
    if (applied + 1 >= MAX_BURST || reading.isStopping() || entry.retired) return step;
    event = stream.poll();
  }
  return step;
}
