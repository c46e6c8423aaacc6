/**
 * The runner (docs/design.md §5, §7): thin glue that feeds inputs to `transition`, commits what
 * changed, publishes the emitted events, and executes the command. It decides nothing itself: what
 * a step writes and who may act on a turn are the loop's (`toStepRecords`, turn-ownership.ts).
 *
 * - Inputs of one conversation enter `transition` one at a time (a serial queue per
 *   conversation); the store's version compare-and-swap is the final arbiter.
 * - Commit order: a state change is committed before its events or command reach the client; a
 *   model call's exact request is saved (in the LLM layer's `beforeSend`) before any byte goes
 *   upstream; a client operation is saved before it is sent (`runOnce`).
 * - Model events are read outside the queue and each is applied as its own queued step, so a
 *   cancel can come between two events.
 * - A tool result is a new input, applied when the client answers; nothing waits for it.
 */
import { toErrorMessage } from "../llm/index.ts";
import {
  type CallClientCommand,
  type CallLLMCommand,
  type Command,
  type ConversationState,
  type Input,
  mayCancel,
  mayResume,
  type ToolResultMessage,
  type Transition,
  toResumeCommand,
  toStepRecords,
  toSupersedingCancel,
  transition,
} from "../loop/index.ts";
import { createOperationRunner, type RecordWrite } from "../store/index.ts";
import { createConversationCache, type Live } from "./conversation-cache.ts";
import { createSerialQueue } from "./serial-queue.ts";
import type { Runner, RunnerOptions, SubmitOptions, SubmitResult, TurnOutcome } from "./types.ts";

/** How often one input is re-applied after losing the compare-and-swap before the turn fails. */
const MAX_CONFLICT_ATTEMPTS = 3;

export function createRunner(options: RunnerOptions): Runner {
  const { store, llm } = options;
  const now = options.now ?? Date.now;
  const report = options.onError ?? (() => {});
  const queue = createSerialQueue();
  const operations = createOperationRunner(store);
  const live = createConversationCache(store);
  const background = new Set<Promise<void>>();
  let stopping = false;

  /**
   * Runs work outside the caller's queue step. Model calls are awaited by `shutdown`; tool calls
   * are not, since they wait for a client that may never answer.
   */
  const spawn = (
    conversationID: string,
    what: "model call" | "tool call",
    work: () => Promise<void>,
  ): void => {
    const task = work()
      .catch((error: unknown) => report(error, { conversationID, what }))
      .finally(() => background.delete(task));
    if (what === "model call") background.add(task);
  };

  /**
   * Applies one input: transition, commit, publish, execute. Runs inside the conversation's
   * queue. Returns null when the store had already applied it (a duplicate). Any failure ends
   * the turn on the client (the loop never saw it) and is rethrown.
   */
  async function apply(
    entry: Live,
    input: Input,
    inputID: string,
    extra: (step: Transition) => readonly RecordWrite[] = () => [],
  ): Promise<Transition | null> {
    try {
      return await applyOnce(entry, input, inputID, extra, 1);
    } catch (error) {
      fail(entry, `the conversation could not be saved: ${describe(error)}`);
      throw error;
    }
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
    if (step.state.committed !== before.committed) {
      const records = [...(await toRecords(before.committed, step)), ...extra(step)];
      const result = await store.commitInput({
        inputID,
        expectedVersion: entry.version,
        state: step.state.committed,
        result: { command: step.command.type, rejected: step.rejected?.reason ?? null },
        records,
      });
      switch (result.type) {
        case "committed":
          entry.version = result.commit.version;
          break;
        case "duplicate":
        case "call_finished":
          await live.reload(entry);
          return null;
        case "conflict": {
          // Another writer moved the conversation: start again from what it committed.
          await live.reload(entry);
          if (attempt >= MAX_CONFLICT_ATTEMPTS) {
            throw new Error(
              `the conversation kept changing under this server (${attempt} conflicts)`,
            );
          }
          return applyOnce(entry, input, inputID, extra, attempt + 1);
        }
      }
    }
    entry.state = step.state;
    const output = entry.output;
    output?.publish(step.emit, step.state);
    execute(entry, step.command);
    return step;
  }

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

  function execute(entry: Live, command: Command): void {
    switch (command.type) {
      case "call_llm":
        if (entry.calling === command.callID) return;
        entry.calling = command.callID;
        spawn(entry.conversationID, "model call", () =>
          callModel(entry, command).finally(() => {
            if (entry.calling === command.callID) entry.calling = null;
          }),
        );
        return;
      case "call_client":
        spawn(entry.conversationID, "tool call", () => callTool(entry, command));
        return;
      case "final":
      case "failed":
      case "canceled":
        endTurn(entry, command);
        return;
      case "continue_llm":
      case "wait_input":
        return;
    }
  }

  function endTurn(entry: Live, outcome: TurnOutcome): void {
    if (outcome.type === "canceled") entry.stream?.stream.abort("canceled");
    const output = entry.output;
    entry.output = null;
    output?.end(outcome, entry.state.committed);
  }

  /** Ends the turn on the client with a failure the loop never saw (e.g. the store failed). */
  function fail(entry: Live, message: string): void {
    if (entry.retired) return;
    entry.retired = true;
    entry.stream?.stream.abort("failed");
    live.drop(entry.conversationID);
    const failure = toErrorMessage({
      api: "cursor-byok",
      provider: "cursor-byok",
      model: entry.state.committed.settings?.model ?? "",
      reason: "error",
      errorMessage: message,
      timestamp: now(),
    });
    endTurn(entry, { type: "failed", message: failure });
  }

  async function callModel(entry: Live, command: CallLLMCommand): Promise<void> {
    if (stopping) return;
    const conversationID = entry.conversationID;
    const turnID = entry.state.committed.turnID;
    const saved = await store.getLLMCall(command.callID);
    // A cancel or shutdown that came while the call was being prepared wins: open nothing.
    const current = entry.state.committed;
    if (
      stopping ||
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
      ...(saved === null ? {} : { replay: { body: saved.request } }),
      beforeSend: async (exact) => {
        await store.saveLLMCall({
          callID: command.callID,
          conversationID,
          turnID,
          model: command.model,
          request: exact.body,
          messagesHash: command.messagesHash,
          messageCount: command.messageCount,
          lastMessageHash: command.lastMessageHash,
          status: "planned",
        });
        await store.setLLMCallStatus(command.callID, "streaming");
      },
    });
    entry.stream = { callID: command.callID, stream };
    // Timing for the dashboard: saved with the call's next commit, not as a write of its own.
    let firstEventAt: number | null = null;
    const timing = (): RecordWrite[] =>
      firstEventAt === null
        ? []
        : [{ type: "llm_call_first_event", callID: command.callID, at: firstEventAt }];
    try {
      for await (const event of stream) {
        if (stopping || entry.retired) return;
        // "First token" is the first content delta, not `start` (docs/dashboard.md, Timing).
        if (
          event.type === "text_delta" ||
          event.type === "thinking_delta" ||
          event.type === "toolcall_delta"
        ) {
          firstEventAt ??= Math.floor(now());
        }
        const step = await queue.run(conversationID, () =>
          apply(
            entry,
            { type: "llm_event", callID: command.callID, event },
            command.callID,
            timing,
          ),
        );
        if (step === null || step.command.type !== "continue_llm") return;
      }
    } finally {
      if (entry.stream?.stream === stream) entry.stream = null;
      // After the terminal event this does nothing; before it, it closes the upstream request.
      stream.abort("stream no longer read");
    }
  }

  async function callTool(entry: Live, command: CallClientCommand): Promise<void> {
    const output = entry.output;
    if (stopping || output === null || entry.tools.has(command.operationID)) return;
    const state = entry.state.committed;
    entry.tools.add(command.operationID);
    try {
      let record: Awaited<ReturnType<typeof operations.runOnce>>;
      try {
        record = await operations.runOnce(
          {
            operationID: command.operationID,
            conversationID: entry.conversationID,
            turnID: state.turnID,
            toolCallID: command.toolCall.id,
            request: command.toolCall,
          },
          (_saved, attempt) => output.runTool(command, state, attempt),
        );
      } catch (error) {
        // The turn ended while the client ran the tool (a cancel, a shutdown, the client gone):
        // the operation stays for a resume or is canceled with the turn. Not a fault.
        if (stopping || entry.retired || !isWaitingFor(entry, command.operationID)) return;
        throw error;
      }
      if (record.status !== "completed" || stopping || entry.retired) return;
      const message = record.result as ToolResultMessage;
      // A tool may change what the rest of the turn runs with (a mode switch).
      const settings =
        state.settings === null ? undefined : output.settingsAfterTool?.(state.settings);
      await queue.run(entry.conversationID, () =>
        apply(
          entry,
          {
            type: "tool_result",
            inputID: `result:${command.operationID}`,
            at: now(),
            message,
            ...(settings === undefined ? {} : { settings }),
          },
          `result:${command.operationID}`,
        ),
      );
    } finally {
      entry.tools.delete(command.operationID);
    }
  }

  return {
    submit(conversationID, input, output, submitOptions: SubmitOptions = {}) {
      return queue.run(conversationID, async (): Promise<SubmitResult> => {
        const entry = await live.load(conversationID);
        if (await store.findInputCommit(conversationID, input.inputID)) {
          return { type: "duplicate" };
        }
        if (input.type === "cancel") {
          const access = mayCancel(entry.output, output);
          if (access.type === "refused") return { type: "applied", rejected: access.reason };
          const step = await apply(entry, input, input.inputID);
          return step === null ? { type: "duplicate" } : applied(step);
        }
        const cancel = toSupersedingCancel(entry.state.committed, input);
        if (cancel !== null) await apply(entry, cancel, cancel.inputID);
        entry.output = output;
        const { requestID, clientState } = submitOptions;
        const step = await apply(entry, input, input.inputID, (started) =>
          requestID === undefined
            ? []
            : [
                {
                  type: "request_stream",
                  requestID,
                  clientState: JSON.stringify({
                    turnID: started.state.committed.turnID,
                    client: clientState ?? null,
                  } satisfies BoundStream),
                },
              ],
        );
        if (step?.rejected) entry.output = null;
        return step === null ? { type: "duplicate" } : applied(step);
      });
    },

    resume(conversationID, output, options = {}) {
      return queue.run(conversationID, async () => {
        const entry = await live.load(conversationID);
        const state = entry.state.committed;
        if (mayResume(state, entry.output, output, options.turnID).type === "refused") return false;
        const command = toResumeCommand(state);
        if (command === null) return false;
        entry.output = output;
        const busy =
          command.type === "call_llm"
            ? entry.calling === command.callID
            : entry.tools.has(command.operationID);
        if (!busy) execute(entry, command);
        return true;
      });
    },

    async findStream(requestID) {
      const bound = await store.findRequestStream(requestID);
      if (bound === null) return null;
      let saved: BoundStream = { turnID: "", client: null };
      try {
        saved = JSON.parse(bound.clientState ?? "null") ?? saved;
      } catch {
        // A binding written without our wrapper: no turn to match, so nothing to resume.
      }
      return {
        conversationID: bound.conversationID,
        turnID: saved.turnID,
        clientState: saved.client,
      };
    },

    detach(conversationID, output) {
      const entry = live.get(conversationID);
      if (entry?.output === output) entry.output = null;
    },

    async inspect(conversationID, inspectOptions = {}) {
      return queue.run(conversationID, async () => {
        const cached = live.get(conversationID);
        if (cached !== undefined) return cached.state;
        if (inspectOptions.liveOnly === true) return null;
        const loaded = await store.load(conversationID);
        return loaded === null ? null : { committed: loaded.state, pending: null };
      });
    },

    async shutdown() {
      stopping = true;
      for (const entry of live.values()) entry.stream?.stream.abort("server shutting down");
      while (background.size > 0) await Promise.allSettled([...background]);
    },
  };
}

/** What the runner saves with a stream binding: the turn it started and the client's state. */
interface BoundStream {
  readonly turnID: string;
  readonly client: string | null;
}

/** Whether the conversation still waits for the result of `operationID`. */
function isWaitingFor(entry: Live, operationID: string): boolean {
  const state = entry.state.committed;
  const waiting = state.waiting;
  return (
    state.status === "waiting_client" &&
    waiting !== undefined &&
    waiting !== null &&
    waiting.operationIDs.slice(waiting.answered).includes(operationID)
  );
}

function applied(step: Transition): SubmitResult {
  return { type: "applied", rejected: step.rejected?.reason ?? null };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
