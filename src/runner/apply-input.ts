/**
 * Applying one input to a conversation held in memory (docs/design.md §5, §7): `transition`, then
 * — when the committed state changed — one commit of the state with the records the step implies,
 * guarded by the conversation's version; then the emitted events go to the client and the command
 * is carried out. A lost compare-and-swap reloads what the other writer committed and applies the
 * input again, at most `MAX_CONFLICT_ATTEMPTS` times.
 *
 * A step that plans a model call prepares it before its commit (model-call.ts `prepare`): the
 * call's exact request is saved in the step's transaction, and the request is let go only once
 * that commit returned; a step that is not committed drops it unsent (issue #19).
 */
import type { Usage } from "../llm/types.ts";
import {
  type Command,
  type ConversationState,
  type Input,
  type Transition,
  toStepRecords,
  transition,
} from "../loop/index.ts";
import type { RecordWrite, Store } from "../store/index.ts";
import type { ConversationCache, Live } from "./conversation-cache.ts";
import { type PreparedCall, toCallRow } from "./prepared-call.ts";

/** How often one input is re-applied after losing the compare-and-swap before the turn fails. */
export const MAX_CONFLICT_ATTEMPTS = 3;

/**
 * Applies `input` under `inputID`; `extra` adds records to its commit. Resolves null when the
 * store had already applied the input (a duplicate); rejects when the commit failed.
 */
export interface ApplyInput {
  (
    entry: Live,
    input: Input,
    inputID: string,
    extra?: (step: Transition) => readonly RecordWrite[],
  ): Promise<Transition | null>;
  /**
   * Applies `input` at once when its step leaves the committed state as it was (a streamed
   * delta that only continues the call: nothing to commit): transition, publish and execute,
   * synchronously — no promise, no trip through the queue (issue #19). Returns undefined, having
   * done nothing, when the step has to be committed: the caller then applies the input the
   * usual way, which takes the step again from the state it then finds. The caller holds the
   * conversation's queue, or knows it idle (serial-queue.ts `idle`).
   */
  now(entry: Live, input: Input): Transition | undefined;
}

export interface ApplyInputDeps {
  readonly store: Pick<Store, "commitInput" | "getLLMCall" | "getClientOperation">;
  readonly cache: Pick<ConversationCache, "reload">;
  /** Carries out the step's command, after its events were published (with its prepared call). */
  readonly execute: (entry: Live, command: Command, prepared?: PreparedCall) => void;
  /** Opens the model call a step plans before the step is committed (model-call.ts). */
  readonly prepare?: (
    entry: Live,
    command: Extract<Command, { type: "call_llm" }>,
    turnID: string,
  ) => Promise<PreparedCall | null>;
}

export function createApplyInput(deps: ApplyInputDeps): ApplyInput {
  const { store, cache, execute, prepare } = deps;

  /**
   * The records a committed step implies (`toStepRecords`), less status changes of rows the
   * store does not have (a call or operation from before they were saved).
   */
  async function toRecords(before: ConversationState, step: Transition): Promise<RecordWrite[]> {
    const records: RecordWrite[] = [];
    for (const record of toStepRecords(before, step)) {
      const exists =
        record.type === "llm_call_status"
          ? (await store.getLLMCall(record.callID)) !== null
          : record.type === "client_operation_status"
            ? (await store.getClientOperation(record.operationID)) !== null
            : true;
      if (exists) records.push(record);
    }
    return records;
  }

  async function applyOnce(
    entry: Live,
    input: Input,
    inputID: string,
    extra: (step: Transition) => readonly RecordWrite[],
    attempt: number,
  ): Promise<Transition | null> {
    const before = entry.state;
    const step = transition(before, input);
    let prepared: PreparedCall | null = null;
    if (step.state.committed !== before.committed) {
      const records = [...(await toRecords(before.committed, step)), ...extra(step)];
      if (step.command.type === "call_llm" && prepare !== undefined) {
        const { conversationID, turnID } = step.state.committed;
        prepared = await prepare(entry, step.command, turnID);
        if (prepared?.exact != null) {
          records.push({
            type: "llm_call",
            call: toCallRow(step.command, conversationID, turnID, prepared.exact),
          });
        }
      }
      let result: Awaited<ReturnType<typeof store.commitInput>>;
      try {
        result = await store.commitInput({
          inputID,
          expectedVersion: entry.version,
          state: step.state.committed,
          result: { command: step.command.type, rejected: step.rejected?.reason ?? null },
          records,
        });
      } catch (error) {
        void prepared?.drop();
        throw error;
      }
      if (result.type === "conflict") {
        // Ended before the retry prepares the call again: the dropped attempt's slot and team
        // reservation are given back first, so they do not refuse the retry (review-19c #1).
        await prepared?.drop();
      } else if (result.type !== "committed") {
        void prepared?.drop();
      }
      switch (result.type) {
        case "committed":
          entry.version = result.commit.version;
          break;
        case "duplicate":
        case "call_finished":
          await cache.reload(entry);
          return null;
        case "conflict": {
          // Another writer moved the conversation: start again from what it committed.
          await cache.reload(entry);
          if (attempt >= MAX_CONFLICT_ATTEMPTS) {
            throw new Error(
              `the conversation kept changing under this server (${attempt} conflicts)`,
            );
          }
          return applyOnce(entry, input, inputID, extra, attempt + 1);
        }
      }
    }
    return finish(entry, before.committed, input, step, prepared);
  }

  /** A step taken (and committed, when it had to be): its state, its events, its command. */
  function finish(
    entry: Live,
    before: ConversationState,
    input: Input,
    step: Transition,
    prepared: PreparedCall | null,
  ): Transition {
    try {
      entry.state = step.state;
      entry.output?.publish(step.emit, step.state);
      const unshown = toSummaryUsage(before, input);
      if (unshown !== null) entry.output?.countUsage?.(unshown);
    } catch (error) {
      void prepared?.drop();
      throw error;
    }
    execute(entry, step.command, prepared ?? undefined);
    return step;
  }

  const apply = (
    entry: Live,
    input: Input,
    inputID: string,
    extra: (step: Transition) => readonly RecordWrite[] = () => [],
  ): Promise<Transition | null> => applyOnce(entry, input, inputID, extra, 1);
  const now = (entry: Live, input: Input): Transition | undefined => {
    const before = entry.state;
    const step = transition(before, input);
    if (step.state.committed !== before.committed) return undefined;
    return finish(entry, before.committed, input, step, null);
  };
  return Object.assign(apply, { now });
}

/**
 * The usage a summary call's last event reports (its `done` or `error`): the loop emits nothing
 * for a summary call (loop/summary-call.ts), so its tokens reach the turn's figure only this way.
 */
function toSummaryUsage(state: ConversationState, input: Input): Usage | null {
  if (input.type !== "llm_event") return null;
  if (state.call?.callID !== input.callID || state.call.summary === undefined) return null;
  const event = input.event;
  if (event.type === "done") return event.message.usage;
  if (event.type === "error") return event.error.usage;
  return null;
}
