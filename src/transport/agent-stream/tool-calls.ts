/**
 * The tool call the turn has open on this stream. The runner asks for one (`run`, the
 * `TurnOutput.runTool` of turn-output.ts) and waits for its result; the result comes from the
 * client's replies (`applyClientEvent`), from the server's own web work, or, for a call recovered
 * after a restart whose outcome is unknown, from the late-result timer that tells the model the
 * outcome is unknown (the call is never run again).
 *
 * State: `open` is the runner's wait (none, or one), `work` the web work running for it, `late`
 * the late-result timer, `modeAtStart` the mode when the last call started (a switch_mode call may
 * change it; read once by `settingsAfterTool`).
 */
import type { ConversationState, ToolResultMessage, TurnSettings } from "../../loop/index.ts";
import type { TurnOutput } from "../../runner/types.ts";
import {
  type ClientEvent,
  continueToolCall,
  expireToolCall,
  finishServerWork,
  fromModeSettings,
  type Mode,
  type ServerWork,
  startToolCall,
  toAgentMode,
  toModeSettings,
} from "../cursor/index.ts";
import { runServerWork } from "../web-work.ts";
import { createOneShotTimer } from "./one-shot-timer.ts";
import { type StreamState, send } from "./stream-state.ts";

export interface ToolCalls {
  /** `TurnOutput.runTool`: starts the call on the client (or the server) and waits for its result. */
  run: TurnOutput["runTool"];
  /** A client reply to the open call (exec results, heartbeats, interaction responses). */
  applyClientEvent(seqno: number, event: ClientEvent): void;
  /** `TurnOutput.settingsAfterTool`: the mode the call switched to, if it did. */
  settingsAfterTool(settings: TurnSettings): TurnSettings | undefined;
  /** The runner's wait for the open call, if any, fails with `reason`. */
  rejectOpen(reason: string): void;
  /** Aborts the web work running, if any. */
  stopWork(): void;
  clearLateTimer(): void;
}

interface OpenToolCall {
  readonly operationID: string;
  resolve(result: ToolResultMessage): void;
  reject(error: Error): void;
}

export function createToolCalls(stream: StreamState): ToolCalls {
  const { requestID, deps } = stream;
  const { log, now } = deps;
  let open: OpenToolCall | null = null;
  let work: AbortController | null = null;
  let modeAtStart: Mode | null = null;
  const late = createOneShotTimer();

  const finish = (message: ToolResultMessage | null): void => {
    if (message !== null && open !== null) {
      const finished = open;
      open = null;
      finished.resolve(message);
    }
  };

  /**
   * Runs the server's own work for the open tool call (a web search or fetch) and applies its
   * result like a client reply. Ending the stream aborts it; a result that comes too late is
   * dropped.
   */
  const startWork = (item: { readonly id: number; readonly work: ServerWork }): void => {
    const controller = new AbortController();
    work?.abort();
    work = controller;
    const began = now();
    void runServerWork(deps.web, item.work, controller.signal).then((result) => {
      if (work === controller) work = null;
      log.info(
        {
          request: requestID,
          tool: item.work.type,
          outcome: result.outcome.type,
          durationMs: now() - began,
        },
        "web tool ran",
      );
      if (controller.signal.aborted || stream.turn === null || open === null) return;
      const operationID = open.operationID;
      const step = finishServerWork(stream.turn, item.id, result, {
        at: now(),
        inputID: `result:${operationID}`,
      });
      if (step.ignored !== null) {
        log.debug({ request: requestID, why: step.ignored }, "web tool result ignored");
        return;
      }
      stream.turn = step.state;
      send(stream, step.messages);
      if (step.work !== null) startWork(step.work);
      finish(step.input?.message ?? null);
    });
  };

  const startLateTimer = (operationID: string): void => {
    late.arm(deps.options.lateResultGraceMs, () => {
      if (stream.turn === null || open?.operationID !== operationID) return;
      const step = expireToolCall(stream.turn, { at: now(), inputID: `result:${operationID}` });
      if (step.ignored !== null) return;
      stream.turn = step.state;
      send(stream, step.messages);
      log.warn(
        { request: requestID, conversation: stream.conversationID, operation: operationID },
        "no late result arrived: the model is told the tool's outcome is unknown",
      );
      finish(step.input?.message ?? null);
    });
  };

  return {
    run(command, state: ConversationState, attempt) {
      if (stream.turn === null) return Promise.reject(new Error("the stream has no turn"));
      // After a restart the turn state comes from the run request; a mode switched to since is
      // in the committed settings.
      const committed = state.settings === null ? null : fromModeSettings(state.settings);
      if (committed !== null && committed !== stream.turn.mode) {
        stream.turn = { ...stream.turn, mode: committed, agentMode: toAgentMode(committed) };
      }
      const context = { at: now(), inputID: `result:${command.operationID}` };
      const step = startToolCall(stream.turn, command, context, {
        recovered: attempt.outcomeUnknown,
      });
      if (step.ignored !== null) return Promise.reject(new Error(step.ignored));
      modeAtStart = stream.turn.mode;
      stream.turn = step.state;
      send(stream, step.messages);
      if (step.input !== null) return Promise.resolve(step.input.message);
      if (attempt.outcomeUnknown) {
        const waiting = stream.turn.open?.awaiting.type === "earlier";
        log.warn(
          {
            request: requestID,
            conversation: stream.conversationID,
            tool: command.toolCall.name,
            operation: command.operationID,
          },
          waiting
            ? "tool call sent before a restart, outcome unknown: waiting for a late result, not running it again"
            : "tool call sent before a restart, outcome unknown: read-only, sending it again",
        );
        if (waiting) startLateTimer(command.operationID);
      }
      return new Promise((resolve, reject) => {
        open = { operationID: command.operationID, resolve, reject };
        if (step.work !== null) startWork(step.work);
      });
    },
    applyClientEvent(seqno, event) {
      if (stream.turn === null) return;
      const step = continueToolCall(stream.turn, event, {
        at: now(),
        inputID: `${requestID}:${seqno}`,
      });
      if (step.ignored !== null) {
        log.debug(
          { request: requestID, event: event.type, why: step.ignored },
          "client event ignored",
        );
        return;
      }
      stream.turn = step.state;
      send(stream, step.messages);
      if (step.work !== null) startWork(step.work);
      // A late reply arrived for a recovered call: its outcome is known now.
      late.clear();
      finish(step.input?.message ?? null);
    },
    settingsAfterTool(settings) {
      const before = modeAtStart;
      modeAtStart = null;
      const turn = stream.turn;
      if (turn === null || before === null || turn.mode === before) return undefined;
      return toModeSettings(settings, turn.mode, turn.mcpTools, turn.web);
    },
    rejectOpen(reason) {
      open?.reject(new Error(reason));
      open = null;
    },
    stopWork() {
      work?.abort();
      work = null;
    },
    clearLateTimer: late.clear,
  };
}
