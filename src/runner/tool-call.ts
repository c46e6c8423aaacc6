/**
 * One tool call of a conversation (docs/design.md §5, §8): run once through the store's operation
 * record (a saved result is used; a call sent before and never answered is not run again with
 * effects), on the stream that carries the turn; its result is a new input, applied in the
 * conversation's queue. Nothing waits for the client.
 */
import type { CallClientCommand, ToolResultMessage } from "../loop/index.ts";
import type { OperationRunner } from "../store/index.ts";
import type { ApplyInput } from "./apply-input.ts";
import type { Live } from "./conversation-cache.ts";
import type { SerialQueue } from "./serial-queue.ts";

export interface ToolCallDeps {
  readonly operations: OperationRunner;
  readonly now: () => number;
  readonly queue: SerialQueue;
  readonly apply: ApplyInput;
  /** True once the runner shuts down: no result is applied. */
  readonly isStopping: () => boolean;
}

export type ToolCall = (entry: Live, command: CallClientCommand) => Promise<void>;

export function createToolCall(deps: ToolCallDeps): ToolCall {
  const { operations, now, queue, apply, isStopping } = deps;
  return async (entry, command) => {
    const output = entry.output;
    if (isStopping() || output === null) return;
    const earlier = entry.tools.get(command.operationID);
    // Asked on this output already: not twice.
    if (earlier?.output === output) return;
    let settle = (): void => {};
    const run = { output, settled: new Promise<void>((resolve) => (settle = resolve)) };
    entry.tools.set(command.operationID, run);
    try {
      if (earlier !== undefined) {
        // Asked on an output that was taken over (a resume, `TurnOutput.release`): its wait ends,
        // then the call is run again here, not joined to the old attempt (`runOnce` gives it
        // `outcomeUnknown`: it was sent and may have run).
        await earlier.settled;
        if (entry.output !== output || !isWaitingFor(entry, command.operationID)) return;
      }
      const state = entry.state.committed;
      let record: Awaited<ReturnType<typeof operations.runOnce>>;
      try {
        record = await operations
          .runOnce(
            {
              operationID: command.operationID,
              conversationID: entry.conversationID,
              turnID: state.turnID,
              toolCallID: command.toolCall.id,
              request: command.toolCall,
            },
            (_saved, attempt) => output.runTool(command, state, attempt),
          )
          .finally(() => output.toolSaved?.(command.operationID));
      } catch (error) {
        // The turn ended while the client ran the tool (a cancel, a shutdown, the client gone),
        // or the output was detached (a subagent's, when its parent's stream went) or taken over:
        // the operation stays for a resume or is canceled with the turn. Not a fault.
        if (
          isStopping() ||
          entry.retired ||
          entry.output !== output ||
          !isWaitingFor(entry, command.operationID)
        ) {
          return;
        }
        throw error;
      }
      if (record.status !== "completed" || isStopping() || entry.retired) return;
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
      if (entry.tools.get(command.operationID) === run) entry.tools.delete(command.operationID);
      settle();
    }
  };
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
