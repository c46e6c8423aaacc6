/**
 * The tool calls the turn has open on this stream. The runner asks for each (`run`, the
 * `TurnOutput.runTool` of turn-output.ts) and waits for its result; the result comes from the
 * client's replies (`applyClientEvent`), from the server's own web work, or, for a call recovered
 * after a restart whose outcome is unknown, from the late-result timer that tells the model the
 * outcome is unknown (the call is never run again).
 *
 * Several calls may be open at once (a batch of read-only calls, src/loop/tool-batch.ts); the
 * dialect says which call each reply advanced (`ToolStep.operationID`).
 *
 * State, by operation id: `open` the runner's waits, `works` the web work running for a call,
 * `lates` the late-result timers; `modeAtStart` the mode when the last call started (a
 * switch_mode call may change it, and runs alone; read once by `settingsAfterTool`).
 */

import { withMethods } from "../../llm/index.ts";
import type {
  ConversationState,
  ResponseEvent,
  ToolResultMessage,
  TurnSettings,
} from "../../loop/index.ts";
import type { TurnOutput } from "../../runner/types.ts";
import {
  type AgentServerMessage,
  abortToolCall,
  type ClientEvent,
  continueToolCall,
  expireToolCall,
  findOpen,
  finishServerWork,
  fromModeSettings,
  type Mode,
  type ServerWork,
  type ServerWorkResult,
  startToolCall,
  toAgentMode,
  toEffectFreeToolNames,
  toModeSettings,
  toTaskProgress,
  toTaskProgressEvents,
} from "../cursor/index.ts";
import { runServerWork } from "../web-work.ts";
import { createEffectsLock } from "./effects-lock.ts";
import { createOneShotTimer, type OneShotTimer } from "./one-shot-timer.ts";
import { type StreamState, send } from "./stream-state.ts";
import {
  createSubagents,
  type SubagentCall,
  type Subagents,
  toSubagentCallID,
} from "./subagents.ts";
import type { AgentStreamOptions } from "./types.ts";

/**
 * Its members are methods shared by every instance: call them on the object, never pass them on
 * (bind or wrap in an arrow).
 */
export interface ToolCalls {
  /** `TurnOutput.runTool`: starts the call on the client (or the server) and waits for its result. */
  run(...args: Parameters<TurnOutput["runTool"]>): ReturnType<TurnOutput["runTool"]>;
  /** A client reply to the open call (exec results, heartbeats, interaction responses). */
  applyClientEvent(seqno: number, event: ClientEvent): void;
  /** `TurnOutput.settingsAfterTool`: the mode the call switched to, if it did. */
  settingsAfterTool(settings: TurnSettings): TurnSettings | undefined;
  /** The runner's waits for the open calls, if any, fail with `reason`. */
  rejectOpen(reason: string): void;
  /** Aborts the web work running, if any. */
  stopWork(): void;
  /** Clears every late-result timer. */
  clearLateTimer(): void;
  /** Stops the running subagent `subagentID` (`cancel_subagent`); false when none runs. */
  cancelSubagent(subagentID: string, reason: string): Promise<boolean>;
  /**
   * The turn ends: closes the subagents' open calls on the client, inside their task cards (their
   * waits end when subagents.ts has stopped each subagent).
   */
  closeSubagentCalls(reason: string): void;
}

interface OpenToolCall {
  resolve(result: ToolResultMessage): void;
  reject(error: Error): void;
}

/** `settings` without batches of read-only calls when the server turned them off. */
export function withBatches(options: AgentStreamOptions, settings: TurnSettings): TurnSettings {
  return options.parallelTools === false
    ? { ...settings, readOnlyTools: [], concurrentTools: [] }
    : settings;
}

/**
 * One stream's tool calls: a plain record of their state, whose prototype is `toolCallsMethods`,
 * shared by every stream (issue #19: a factory of closures made ≈ 15 closures and their context
 * per open stream). Its maps are made on first use: every open stream would otherwise hold five
 * empty ones (≈ 190 bytes each) while it waits for the model.
 */
interface Calls extends ToolCalls {
  readonly stream: StreamState;
  open: Map<string, OpenToolCall> | undefined;
  works: Map<string, AbortController> | undefined;
  lates: Map<string, OneShotTimer> | undefined;
  modeAtStart: Mode | null;
  /** The parent's call behind each open subagent call (its state shapes the child). */
  taskCalls: Map<string, SubagentCall> | undefined;
  /**
   * Open calls of subagents, with the parent's task call each belongs to: their updates show
   * inside that call's card (cursor/task-progress.ts), and `rejectOpen` leaves them to
   * subagents.ts, which cancels the child first (or detaches it), so the child's runner never
   * sees its call fail while it still waits.
   */
  childCalls: Map<string, string> | undefined;
  /**
   * The stream's subagents (subagents.ts) and their effects lock, made at the first subagent
   * call: most streams run none (≈ 0.8 KiB per open stream otherwise; issue #19).
   */
  subagents: Subagents | undefined;
}

export function createToolCalls(stream: StreamState): ToolCalls {
  const calls: Omit<Calls, keyof ToolCalls> = {
    stream,
    open: undefined,
    works: undefined,
    lates: undefined,
    modeAtStart: null,
    taskCalls: undefined,
    childCalls: undefined,
    subagents: undefined,
  };
  return withMethods(calls, toolCallsMethods);
}

/** The public methods, shared by every stream's tool calls (`this` is the stream's record). */
const toolCallsMethods: ToolCalls & ThisType<Calls> = {
  run(command, state: ConversationState, attempt) {
    const stream = this.stream;
    const { requestID, deps } = stream;
    if (stream.turn === null) return Promise.reject(new Error("the stream has no turn"));
    // After a restart the turn state comes from the run request; a mode switched to since is
    // in the committed settings.
    const committed = state.settings === null ? null : fromModeSettings(state.settings);
    if (committed !== null && committed !== stream.turn.mode) {
      stream.turn = { ...stream.turn, mode: committed, agentMode: toAgentMode(committed) };
    }
    const context = { at: deps.now(), inputID: `result:${command.operationID}` };
    const taskCallID = this.childCalls?.get(command.operationID);
    const step = startToolCall(stream.turn, command, context, {
      recovered: attempt.outcomeUnknown,
      ...(taskCallID === undefined ? {} : { taskCallID }),
    });
    if (step.ignored !== null) return Promise.reject(new Error(step.ignored));
    this.modeAtStart = stream.turn.mode;
    stream.turn = step.state;
    holdFor(this, command.operationID, step.input);
    sendFor(this, command.operationID, step.messages);
    if (step.input !== null) return Promise.resolve(step.input.message);
    if (attempt.outcomeUnknown) {
      const waiting = findOpen(stream.turn, command.operationID)?.awaiting.type === "earlier";
      deps.log.warn(
        {
          request: requestID,
          conversation: stream.conversationID,
          tool: command.toolCall.name,
          operation: command.operationID,
        },
        waiting
          ? "tool call sent before (a restart, or on a stream taken over), outcome unknown: waiting for a late result, not running it again"
          : "tool call sent before (a restart, or on a stream taken over), outcome unknown: read-only, sending it again",
      );
      if (waiting) startLateTimer(this, command.operationID);
    }
    return new Promise((resolve, reject) => {
      this.open ??= new Map();
      this.open.set(command.operationID, { resolve, reject });
      if (step.work?.work.type === "subagent") {
        this.taskCalls ??= new Map();
        this.taskCalls.set(command.operationID, {
          operationID: command.operationID,
          toolCallID: command.toolCall.id,
          state,
        });
      }
      if (step.work !== null) startWork(this, command.operationID, step.work);
    });
  },
  applyClientEvent(seqno, event) {
    const stream = this.stream;
    if (stream.turn === null) return;
    const step = continueToolCall(stream.turn, event, {
      at: stream.deps.now(),
      inputID: `${stream.requestID}:${seqno}`,
    });
    if (step.ignored !== null) {
      stream.deps.log.debug(
        { request: stream.requestID, event: event.type, why: step.ignored },
        "client event ignored",
      );
      return;
    }
    stream.turn = step.state;
    holdFor(this, step.operationID, step.input);
    sendFor(this, step.operationID, step.messages);
    const operationID = step.operationID;
    if (operationID === null) return;
    if (step.work !== null) startWork(this, operationID, step.work);
    // A late reply arrived for a recovered call: its outcome is known now.
    clearLate(this, operationID);
    finish(this, operationID, step.input?.message ?? null);
  },
  settingsAfterTool(settings) {
    const before = this.modeAtStart;
    this.modeAtStart = null;
    const turn = this.stream.turn;
    if (turn === null || before === null || turn.mode === before) return undefined;
    return withBatches(
      this.stream.deps.options,
      toModeSettings(settings, turn.mode, turn.mcpTools, turn.web),
    );
  },
  rejectOpen(reason) {
    const waiting = [...(this.open ?? [])].filter(
      ([operationID]) => this.childCalls?.has(operationID) !== true,
    );
    for (const [operationID, call] of waiting) {
      this.open?.delete(operationID);
      call.reject(new Error(reason));
    }
  },
  stopWork() {
    for (const controller of this.works?.values() ?? []) controller.abort();
    this.works?.clear();
  },
  clearLateTimer() {
    for (const late of this.lates?.values() ?? []) late.clear();
    this.lates?.clear();
  },
  cancelSubagent(subagentID, reason) {
    return this.subagents === undefined
      ? Promise.resolve(false)
      : this.subagents.cancel(subagentID, reason);
  },
  closeSubagentCalls(reason) {
    const stream = this.stream;
    for (const operationID of this.childCalls?.keys() ?? []) {
      if (stream.turn === null) return;
      const step = abortToolCall(stream.turn, operationID, stream.deps.now(), reason);
      stream.turn = step.state;
      sendFor(this, operationID, step.messages);
    }
  },
};

/** Sends what a step of call `operationID` produced; a subagent's shows in its task card. */
function sendFor(
  calls: Calls,
  operationID: string | null,
  messages: readonly AgentServerMessage[],
): void {
  const taskCallID = operationID === null ? undefined : calls.childCalls?.get(operationID);
  send(calls.stream, taskCallID === undefined ? messages : toTaskProgress(taskCallID, messages));
}

function clearLate(calls: Calls, operationID: string): void {
  calls.lates?.get(operationID)?.clear();
  calls.lates?.delete(operationID);
}

/**
 * A tool call's result came (`input`): its step is in the turn before the runner saved the
 * result, so the stream's checkpoints wait until it did (`TurnOutput.toolSaved`;
 * checkpoint-writer.ts `holdCheckpoints`): a restart in between would ask the call again and the
 * client's checkpoint would list its step twice. A subagent's call puts no step in the turn.
 */
function holdFor(calls: Calls, operationID: string | null, input: unknown): void {
  if (operationID === null || input === null || calls.childCalls?.has(operationID) === true) {
    return;
  }
  calls.stream.checkpoints.holdCheckpoints(operationID);
}

function finish(calls: Calls, operationID: string, message: ToolResultMessage | null): void {
  const waiting = calls.open?.get(operationID);
  if (message !== null && waiting !== undefined) {
    calls.open?.delete(operationID);
    waiting.resolve(message);
  }
}

/**
 * Runs the server's own work for the open tool call (a web search or fetch) and applies its
 * result like a client reply. Ending the stream aborts it; a result that comes too late is
 * dropped.
 */
function startWork(
  calls: Calls,
  operationID: string,
  item: { readonly id: number; readonly work: ServerWork },
): void {
  const stream = calls.stream;
  const { requestID, deps } = stream;
  const { log, now } = deps;
  const controller = new AbortController();
  calls.works?.get(operationID)?.abort();
  calls.works ??= new Map();
  calls.works.set(operationID, controller);
  const began = now();
  const work = item.work;
  const call = calls.taskCalls?.get(operationID);
  const running: Promise<ServerWorkResult> =
    work.type !== "subagent"
      ? runServerWork(deps.web, work, controller.signal)
      : call === undefined
        ? Promise.resolve({
            type: "subagent",
            outcome: { type: "error", message: "the task call was not found", agentID: "" },
          })
        : useSubagents(calls)
            .run(call, work, controller.signal)
            .then((outcome) => ({ type: "subagent", outcome }));
  void running.then((result) => {
    if (calls.works?.get(operationID) === controller) calls.works.delete(operationID);
    calls.taskCalls?.delete(operationID);
    log.info(
      {
        request: requestID,
        tool: item.work.type,
        outcome: result.outcome.type,
        durationMs: now() - began,
      },
      work.type === "subagent" ? "subagent ran" : "web tool ran",
    );
    if (
      controller.signal.aborted ||
      stream.turn === null ||
      calls.open?.has(operationID) !== true
    ) {
      return;
    }
    const step = finishServerWork(stream.turn, item.id, result, {
      at: now(),
      inputID: `result:${operationID}`,
    });
    if (step.ignored !== null) {
      log.debug({ request: requestID, why: step.ignored }, "web tool result ignored");
      return;
    }
    stream.turn = step.state;
    holdFor(calls, operationID, step.input);
    sendFor(calls, operationID, step.messages);
    if (step.work !== null) startWork(calls, operationID, step.work);
    finish(calls, operationID, step.input?.message ?? null);
  });
}

function startLateTimer(calls: Calls, operationID: string): void {
  const stream = calls.stream;
  calls.lates ??= new Map();
  const late = calls.lates.get(operationID) ?? createOneShotTimer();
  calls.lates.set(operationID, late);
  late.arm(stream.deps.options.lateResultGraceMs, () => {
    calls.lates?.delete(operationID);
    if (stream.turn === null || calls.open?.has(operationID) !== true) return;
    const step = expireToolCall(stream.turn, operationID, {
      at: stream.deps.now(),
      inputID: `result:${operationID}`,
    });
    if (step.ignored !== null) return;
    stream.turn = step.state;
    holdFor(calls, operationID, step.input);
    sendFor(calls, operationID, step.messages);
    stream.deps.log.warn(
      { request: stream.requestID, conversation: stream.conversationID, operation: operationID },
      "no late result arrived: the model is told the tool's outcome is unknown",
    );
    finish(calls, operationID, step.input?.message ?? null);
  });
}

/** The stream's subagents, made at the first subagent call. */
function useSubagents(calls: Calls): Subagents {
  if (calls.subagents !== undefined) return calls.subagents;
  const stream = calls.stream;
  const { requestID, deps } = stream;
  const { log, now } = deps;
  /** Subagents' calls with effects, one at a time across the stream's subagents. */
  const effects = createEffectsLock();
  /** A subagent's streamed text and thinking, shown inside its task card. */
  const showProgress = (taskCallID: string, events: readonly ResponseEvent[]): void => {
    send(stream, toTaskProgressEvents(taskCallID, events));
  };
  calls.subagents = createSubagents(stream, {
    showProgress,
    async run(command, state, attempt, taskCallID) {
      const { operationID } = command;
      // Sibling subagents' calls with effects run one at a time (effects-lock.ts); reads do not wait.
      const turn = stream.turn;
      const effectFree =
        turn === null ? [] : toEffectFreeToolNames(turn.mode, turn.mcpTools, turn.web);
      const locked = !effectFree.includes(command.toolCall.name);
      if (locked) {
        await effects.acquire(operationID, (holder) =>
          log.debug(
            { request: requestID, operation: operationID, tool: command.toolCall.name, holder },
            "subagent tool call waits for another subagent's call with effects",
          ),
        );
      }
      calls.childCalls ??= new Map();
      calls.childCalls.set(operationID, taskCallID);
      // The client keys tool cards, approvals and background shells by call id, and models reuse
      // ids (`call_0`): the child's call gets an id unique on the stream, its result the model's.
      const toolCall = command.toolCall;
      const shown = { ...command, toolCall: { ...toolCall, id: toSubagentCallID(operationID) } };
      try {
        const result = await calls.run(shown, state, attempt);
        return { ...result, toolCallId: toolCall.id };
      } finally {
        calls.childCalls?.delete(operationID);
        if (locked) effects.release(operationID, "done");
      }
    },
    abort(operationID, reason) {
      // A call still waiting for the lock is never started.
      effects.release(operationID, reason);
      const waiting = calls.open?.get(operationID);
      calls.open?.delete(operationID);
      clearLate(calls, operationID);
      if (stream.turn !== null) {
        const step = abortToolCall(stream.turn, operationID, now(), reason);
        stream.turn = step.state;
        sendFor(calls, operationID, step.messages);
      }
      waiting?.reject(new Error(reason));
    },
  });
  return calls.subagents;
}
