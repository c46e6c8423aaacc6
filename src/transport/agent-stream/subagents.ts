/**
 * Runs subagents (the `task` tool, src/loop/subagent.ts, README "Subagents") for the turn on this
 * stream. A subagent is a child conversation of the runner: its own loop state and append-only
 * history in the store, linked to the parent's tool call (`ConversationState.parent`, and an id
 * derived from the parent's operation). Its tool calls go to the same client through this
 * stream's tool calls (tool-calls.ts), each its own operation with the usual exactly-once rules;
 * its final answer becomes the parent's tool result.
 *
 * - Start or continue: the child's `start` input has an id derived from the parent's operation, so
 *   a parent call asked for again (after a restart, or a resume) finds the child that already
 *   exists: an ended one gives its answer, a running one is resumed on this stream.
 * - Stop: when the parent's turn no longer waits for the call (the parent was canceled), the child
 *   is canceled; when only the stream went away (shutdown, a dropped connection) it is just
 *   detached and continues with the next stream that resumes the parent. `cancel` stops one child
 *   (the client's `cancel_subagent` action); the parent goes on with an error result.
 * - Usage: every model call of a child adds its tokens to the parent turn's usage (the
 *   `turn_ended` update and the "turn ended" log), its summary calls too (`countUsage`); a
 *   "subagent ended" line logs each child. Not counted there (README "Subagents" says so): a
 *   call still streaming when the parent is canceled (the turn reports before its children are
 *   stopped).
 */
import { createHash } from "node:crypto";
import { toErrorMessage } from "../../llm/index.ts";
import type { AssistantMessage, ToolResultMessage, Usage } from "../../llm/types.ts";
import {
  type CallClientCommand,
  type ConversationState,
  EXPLORE,
  GENERAL,
  type ResponseEvent,
  type SubagentDefinition,
  type TurnSettings,
  toNotRunResult,
  toStickySubagentSettings,
  toSubagentConversationID,
  toSubagentModel,
  toSubagentSettings,
} from "../../loop/index.ts";
import type { TurnOutcome, TurnOutput } from "../../runner/types.ts";
import type { OperationAttempt } from "../../store/index.ts";
import { toCompactionSettings } from "../compaction-settings.ts";
import {
  addUsage,
  type CustomSubagentDefinition,
  PARENT_ONLY_TOOLS,
  redactSecrets,
  type ServerWork,
  type SubagentOutcome,
  toEffectFreeToolNames,
  toSubagentSystemPrompt,
} from "../cursor/index.ts";
import type { StreamState } from "./stream-state.ts";
import { DEFAULT_SUBAGENT_MAX_CONCURRENT, DEFAULT_SUBAGENT_MAX_STEPS } from "./types.ts";

/**
 * The id a subagent's tool call `operationID` has on the wire (`callId`, the exec's
 * `toolCallId`): unique on the stream, since operation ids are, and stable across a restart.
 * The model's own id (providers reuse `call_0`) stays in the subagent's history.
 */
export function toSubagentCallID(operationID: string): string {
  return `task_${createHash("sha256").update(operationID).digest("hex").slice(0, 24)}`;
}

/** What a subagent needs of the stream's tool calls. */
export interface SubagentTools {
  /** Runs a subagent's tool call on the client; its updates show in task call `taskCallID`. */
  run(
    command: CallClientCommand,
    state: ConversationState,
    attempt: OperationAttempt,
    taskCallID: string,
  ): Promise<ToolResultMessage>;
  /** Shows a subagent's streamed text and thinking inside task call `taskCallID`. */
  showProgress(taskCallID: string, events: readonly ResponseEvent[]): void;
  /** Stops the open call `operationID` (its wait fails with `reason`). */
  abort(operationID: string, reason: string): void;
}

/** The parent's tool call a subagent runs for. */
export interface SubagentCall {
  readonly operationID: string;
  readonly toolCallID: string;
  /** The parent's committed state when the call started (its settings shape the child's). */
  readonly state: ConversationState;
}

export interface Subagents {
  /** Runs (or continues) the subagent of `call`; never rejects. */
  run(
    call: SubagentCall,
    work: Extract<ServerWork, { type: "subagent" }>,
    signal: AbortSignal,
  ): Promise<SubagentOutcome>;
  /**
   * Cancels the running subagent with this id (the parent's tool-call id, or the child's
   * conversation id); false when none runs.
   */
  cancel(subagentID: string, reason: string): Promise<boolean>;
}

interface Running {
  readonly call: SubagentCall;
  readonly childID: string;
  readonly output: TurnOutput;
  /** The child's tool calls running on the client now. */
  readonly open: Set<string>;
  /** Ends `run` without an outcome: the stream went away and the child was left as it is. */
  readonly leave: () => void;
}

export function createSubagents(stream: StreamState, tools: SubagentTools): Subagents {
  const { deps, requestID } = stream;
  const { runner, log, now } = deps;
  /** Made on first use: an open stream that runs no subagent holds no empty Map (issue #19). */
  let running: Map<string, Running> | undefined;

  const cancelChild = (entry: Running, inputID: string, reason: string) =>
    runner.submit(entry.childID, { type: "cancel", inputID, at: now(), reason }, entry.output);

  return {
    async run(call, work, signal) {
      const parentID = call.state.conversationID;
      const parentSettings = call.state.settings;
      const resumed = work.resume === "" ? null : await findResumable(work.resume, parentID);
      if (resumed?.type === "error") {
        return { type: "error", message: resumed.message, agentID: work.resume };
      }
      const childID = resumed?.childID ?? toSubagentConversationID(parentID, call.operationID);
      if (parentSettings === null) {
        return { type: "error", message: "the parent turn has no settings", agentID: childID };
      }
      const definition =
        resumed?.definition ??
        findDefinition(work.subagentType, stream.turn?.customSubagents ?? []);
      if (definition === null) {
        const custom = (stream.turn?.customSubagents ?? []).map((entry) => entry.name);
        return {
          type: "error",
          agentID: childID,
          message: `there is no subagent type "${work.subagentType}"; the types are: ${["explore", "general", ...custom].join(", ")}`,
        };
      }
      const maxConcurrent = deps.options.subagentMaxConcurrent ?? DEFAULT_SUBAGENT_MAX_CONCURRENT;
      if ((running?.size ?? 0) >= maxConcurrent) {
        return {
          type: "error",
          agentID: childID,
          message: `it was not started: at most ${maxConcurrent} subagents run at once; ask for it again when one of the others has finished`,
        };
      }
      // A resumed subagent goes on with its own settings (its model, tools and prompt).
      const settings =
        resumed?.settings ??
        toStickySubagentSettings(
          toChildSettings(parentSettings, definition, work.model),
          call.state,
        );
      const began = now();
      let usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 };
      const open = new Set<string>();
      type Ending = { outcome: TurnOutcome; state: ConversationState } | null;
      let resolveEnding: (ending: Ending) => void = () => {};
      const ended = new Promise<Ending>((resolve) => {
        resolveEnding = resolve;
      });
      const settle = (outcome: TurnOutcome, state: ConversationState) =>
        resolveEnding({ outcome, state });
      // The child's tokens count for the parent's turn (turn_ended, the turn-ended log).
      const count = (called: Usage): void => {
        if (stream.turn === null) return;
        stream.turn = { ...stream.turn, usage: addUsage(stream.turn.usage, called) };
        usage = {
          input: usage.input + called.input,
          output: usage.output + called.output,
          cacheRead: usage.cacheRead + called.cacheRead,
          cacheWrite: usage.cacheWrite + called.cacheWrite,
          cost: usage.cost + called.cost.total,
        };
      };
      const maxSteps = deps.options.subagentMaxSteps ?? DEFAULT_SUBAGENT_MAX_STEPS;
      let steps = 0;
      const output: TurnOutput = {
        publish(events) {
          tools.showProgress(call.toolCallID, events);
          for (const event of events) {
            const message =
              event.type === "done" ? event.message : event.type === "error" ? event.error : null;
            if (event.type === "done") {
              steps += 1;
              // A subagent nobody watches cannot run forever: after its last allowed model call
              // it is stopped instead of running the tools that call asked for.
              if (steps >= maxSteps && event.message.stopReason === "toolUse") {
                void cancelChild(
                  entry,
                  `${childID}:max-steps:${requestID}`,
                  `limit of ${maxSteps} steps reached`,
                ).catch(() => {});
              }
            }
            if (message !== null) count(message.usage);
          }
        },
        // The child's summary (compaction) calls, which publish nothing.
        countUsage: count,
        runTool(command, state, attempt) {
          // The loop refuses tools outside the child's set (L48); a read-only type's call to a
          // tool with effects is refused here too, whatever settings it was committed with.
          if (definition.readOnly && !mayReadOnlyRun(definition, command.toolCall.name)) {
            return Promise.resolve(
              toNotRunResult(
                command.toolCall,
                `Not run: the tool "${command.toolCall.name}" is not available to this read-only subagent.`,
                now(),
              ),
            );
          }
          open.add(command.operationID);
          return tools
            .run(command, state, attempt, call.toolCallID)
            .finally(() => open.delete(command.operationID));
        },
        end(outcome, state) {
          // A call the child still had open (it was canceled) is closed on the client too.
          for (const operationID of [...open])
            tools.abort(operationID, `the subagent ended (${outcome.type})`);
          settle(outcome, state);
        },
        // Once the parent's stream has ended (another stream took the parent's turn over) nobody
        // reads this child: the stream that resumes the parent's task call takes the child over
        // too (loop/turn-ownership.ts), even before `stopOnAbort` has detached it.
        isDetached: () => stream.outbound.ended,
        release(reason) {
          // As `stopOnAbort` leaves a child: its open calls' waits end (the runner asks them
          // again on the new output), and nobody waits for its outcome here any more.
          for (const operationID of [...open]) tools.abort(operationID, reason);
          resolveEnding(null);
        },
      };
      const entry: Running = { call, childID, output, open, leave: () => resolveEnding(null) };
      running ??= new Map();
      running.set(call.toolCallID, entry);
      const onAbort = (): void => {
        void stopOnAbort(entry).catch(() => {});
      };
      signal.addEventListener("abort", onAbort, { once: true });
      try {
        const started = await startOrContinue(entry, work, settings, definition, resumed !== null);
        if (started.type === "ended") return started.outcome;
        const ending = await ended;
        if (ending === null) {
          // Nobody reads this outcome (the call's wait has ended); the child is continued later.
          return { type: "error", agentID: childID, message: "the stream ended" };
        }
        const { outcome, state } = ending;
        const result = toOutcome(outcome, state, childID, now() - began);
        log.info(
          {
            conversation: parentID,
            request: requestID,
            subagent: childID,
            type: definition.name,
            model: settings.model,
            outcome: outcome.type,
            inputTokens: usage.input,
            outputTokens: usage.output,
            cacheReadTokens: usage.cacheRead,
            cacheWriteTokens: usage.cacheWrite,
            // USD at the model's configured prices (0 when it has none).
            cost: usage.cost,
            durationMs: now() - began,
          },
          "subagent ended",
        );
        return result;
      } catch (error) {
        return {
          type: "error",
          agentID: childID,
          message: redactSecrets(error instanceof Error ? error.message : String(error)),
        };
      } finally {
        signal.removeEventListener("abort", onAbort);
        running?.delete(call.toolCallID);
      }
    },

    async cancel(subagentID, reason) {
      const entry =
        running?.get(subagentID) ??
        [...(running?.values() ?? [])].find((candidate) => candidate.childID === subagentID);
      if (entry === undefined) return false;
      // Keyed by the parent's call: a resumed child has several turns, each its own cancel.
      await cancelChild(entry, `${entry.call.operationID}:cancel`, reason);
      return true;
    },
  };

  /**
   * Starts the child's first turn, or, when that input was applied before, continues the child as
   * it is: its answer when it ended, a resume on this stream when it waits for something.
   */
  async function startOrContinue(
    entry: Running,
    work: Extract<ServerWork, { type: "subagent" }>,
    settings: TurnSettings,
    definition: SubagentDefinition,
    resuming: boolean,
  ): Promise<{ type: "running" } | { type: "ended"; outcome: SubagentOutcome }> {
    const { call, childID, output } = entry;
    const at = now();
    const inputID = `task:${call.operationID}`;
    const prompt = { role: "user" as const, content: work.prompt, timestamp: at };
    // Continuing an earlier subagent is a new turn of its conversation; it never cancels one
    // that still runs (the model must wait for that one's result).
    const submitted = resuming
      ? await runner.submit(
          childID,
          { type: "user_message", inputID, at, message: prompt },
          output,
          { supersede: false },
        )
      : await runner.submit(
          childID,
          {
            type: "start",
            inputID,
            at,
            userMessage: prompt,
            // The parent's environment, workspace and rules, which its system prompt refers to.
            context: stream.turn?.subagentContext ?? [],
            settings,
            parent: {
              conversationID: call.state.conversationID,
              operationID: call.operationID,
              toolCallID: call.toolCallID,
              subagentType: definition.name,
            },
          },
          output,
        );
    if (submitted.type === "applied" && submitted.rejected === null) return { type: "running" };
    if (submitted.type === "applied") {
      throw new Error(
        `it is still working on an earlier task (${submitted.rejected}); wait for its result`,
      );
    }
    const current = await runner.inspect(childID);
    const state = current?.committed ?? null;
    if (state === null) throw new Error("the subagent's conversation was not found");
    if (await runner.resume(childID, output)) return { type: "running" };
    if (state.status === "final" || state.status === "failed" || state.status === "canceled") {
      const outcome: TurnOutcome =
        state.status === "canceled"
          ? { type: "canceled", reason: "canceled" }
          : state.status === "failed"
            ? { type: "failed", message: toFailureMessage(state) }
            : { type: "final", message: lastAssistant(state) };
      return { type: "ended", outcome: toOutcome(outcome, state, childID, 0) };
    }
    throw new Error(`the subagent could not be continued (${state.status})`);
  }

  /**
   * The subagent `agentID` names, when the model may continue it: a subagent of this parent
   * conversation, not running on this stream now. Its settings and type carry over.
   */
  async function findResumable(
    agentID: string,
    parentID: string,
  ): Promise<
    | { type: "ok"; childID: string; settings: TurnSettings; definition: SubagentDefinition }
    | { type: "error"; message: string }
  > {
    const state = agentID.startsWith(`${parentID}~task~`)
      ? ((await runner.inspect(agentID))?.committed ?? null)
      : null;
    if (state === null || state.parent?.conversationID !== parentID || state.settings === null) {
      return { type: "error", message: `there is no subagent "${agentID}" in this conversation` };
    }
    if ([...(running?.values() ?? [])].some((entry) => entry.childID === agentID)) {
      return {
        type: "error",
        message: `the subagent "${agentID}" is still working on an earlier task; wait for its result`,
      };
    }
    const definition =
      findDefinition(state.parent.subagentType, stream.turn?.customSubagents ?? []) ?? GENERAL;
    return { type: "ok", childID: agentID, settings: state.settings, definition };
  }

  /**
   * The parent's wait for the call ended: cancel the child when the parent's turn no longer waits
   * for it; otherwise (the stream went away) leave it for the next stream to continue.
   */
  async function stopOnAbort(entry: Running): Promise<void> {
    const parent = await runner.inspect(entry.call.state.conversationID, { liveOnly: true });
    const waiting = parent?.committed.waiting;
    const stillWaiting =
      parent?.committed.status === "waiting_client" &&
      waiting != null &&
      waiting.operationIDs.slice(waiting.answered).includes(entry.call.operationID) &&
      waiting.early[waiting.operationIDs.indexOf(entry.call.operationID)] == null;
    if (stillWaiting) {
      // Only the stream went away (a shutdown): the child stays as it is, its open calls are
      // left for the next stream that resumes the parent.
      runner.detach(entry.childID, entry.output);
      for (const operationID of [...entry.open]) tools.abort(operationID, "the stream ended");
      entry.leave();
      return;
    }
    await cancelChild(entry, `${entry.call.operationID}:parent-ended`, "the parent turn ended");
  }

  /** Whether a read-only subagent may run tool `name`: an effect-free tool, or one it names. */
  function mayReadOnlyRun(definition: SubagentDefinition, name: string): boolean {
    const turn = stream.turn;
    if (turn === null) return false;
    return (
      toEffectFreeToolNames(turn.mode, turn.mcpTools, turn.web).includes(name) ||
      (definition.tools !== "all" && definition.tools.includes(name))
    );
  }

  function toChildSettings(
    parent: TurnSettings,
    definition: SubagentDefinition,
    requested: string,
  ): TurnSettings {
    const model = toSubagentModel({
      override: deps.options.subagentModels?.[definition.name],
      requested,
      definition: definition.model,
      parent: parent.model,
      isConfigured: (name) => deps.models.findModel(name) !== undefined,
    });
    const base = toSubagentSettings(parent, definition, {
      model,
      // In ask and plan mode the parent only reads, so its subagents do too (its tools say so).
      systemPrompt: toSubagentSystemPrompt(
        definition.readOnly || stream.turn?.mode === "ask" || stream.turn?.mode === "plan",
        definition.instructions,
      ),
      withheld: PARENT_ONLY_TOOLS,
      effectFree:
        stream.turn === null
          ? []
          : toEffectFreeToolNames(stream.turn.mode, stream.turn.mcpTools, stream.turn.web),
    });
    if (model === parent.model) return base;
    // Another model: its own fallbacks and compaction, not the parent's; no picker options.
    const info = deps.models.findModel(model);
    const { modelOptions: _options, compaction: _compaction, ...rest } = base;
    if (info === undefined) return rest;
    return {
      ...rest,
      ...(info.fallbacks.length === 0 ? {} : { fallbacks: info.fallbacks }),
      compaction: toCompactionSettings(info, (name) => deps.models.findModel(name)),
    };
  }
}

/**
 * The definition of a type name: a custom subagent of exactly that name (the user's definition
 * wins over a built-in of the same name), then the built-ins and the custom subagents by a
 * loose match (case, `-`, `_` and spaces ignored: models trained elsewhere write
 * `general-purpose` or `Explore`).
 */
export function findDefinition(
  name: string,
  custom: readonly CustomSubagentDefinition[],
): SubagentDefinition | null {
  const wanted = name.trim();
  const exact = custom.find((entry) => entry.name === wanted);
  if (exact !== undefined) return toCustomDefinition(exact);
  const loose = (text: string) => text.toLowerCase().replace(/[-_\s]/g, "");
  const key = loose(wanted);
  if (key === "" || key === "general" || key === "generalpurpose") return GENERAL;
  if (key === "explore") return EXPLORE;
  const similar = custom.find((entry) => loose(entry.name) === key);
  return similar === undefined ? null : toCustomDefinition(similar);
}

function toCustomDefinition(found: CustomSubagentDefinition): SubagentDefinition {
  return {
    name: found.name,
    instructions: found.prompt,
    tools: found.tools.length === 0 ? "all" : found.tools,
    readOnly: found.readOnly,
    model: found.model,
  };
}

function toOutcome(
  outcome: TurnOutcome,
  state: ConversationState,
  agentID: string,
  durationMs: number,
): SubagentOutcome {
  switch (outcome.type) {
    case "final":
      return { type: "completed", text: toText(outcome.message), agentID, durationMs };
    case "failed":
      return {
        type: "error",
        agentID,
        message: `its turn failed: ${redactSecrets(outcome.message.errorMessage ?? "unknown error")}`,
      };
    case "canceled": {
      const last = lastText(state);
      return {
        type: "error",
        agentID,
        message:
          `it was canceled (${outcome.reason}) after ${state.messages.length} messages` +
          (last === "" ? "" : `; its last text: ${last}`),
      };
    }
  }
}

function toText(message: AssistantMessage): string {
  return message.content
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("\n")
    .trim();
}

/** The text of the subagent's last assistant message that has some; "" none. */
function lastText(state: ConversationState): string {
  for (let i = state.messages.length - 1; i >= 0; i -= 1) {
    const message = state.messages[i];
    if (message?.role !== "assistant") continue;
    const text = toText(message);
    if (text !== "") return text;
  }
  return "";
}

function lastAssistant(state: ConversationState): AssistantMessage {
  for (let i = state.messages.length - 1; i >= 0; i -= 1) {
    const message = state.messages[i];
    if (message?.role === "assistant") return message;
  }
  throw new Error("the subagent ended without an answer");
}

function toFailureMessage(state: ConversationState): AssistantMessage {
  return toErrorMessage({
    api: "cursor-byok",
    provider: "cursor-byok",
    model: state.settings?.model ?? "",
    reason: "error",
    errorMessage: state.failure?.message ?? "unknown error",
    timestamp: 0,
  });
}
