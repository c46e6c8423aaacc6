/**
 * Runs the tool calls of the loop (`call_client`, each call of a `call_clients` batch) against the
 * client: picks the catalogue tool,
 * checks the model's arguments, sends the exec or interaction query, matches the client's
 * replies to it, and produces the loop's `tool_result` input when the call is done. Multi-step
 * tools (edit = read → replace → write) and streamed ones (shell) stay one operation with one
 * operation id. Server-side tools (todo_write) finish at once without the client; tools whose
 * work the server does itself (web_search, web_fetch) hand it out as `work` for the transport to
 * run, and `finishServerWork` applies its result like a client reply.
 *
 * Message order for a client tool: tool_call_started → checkpoint (call pending) → exec/query;
 * on completion: any final updates → tool_call_completed → checkpoint (nothing pending).
 * Bad arguments and unknown tools become isError results for the model, never exceptions.
 *
 * Several calls may be open at once (a batch of read-only calls). Each has its own exec ids and
 * UI call id; a client reply is matched to its call by exec id (else the numeric id), the way
 * public Cursor servers keep their pending execs keyed by exec id. Every step says which call it
 * advanced (`operationID`).
 *
 * Why one file of about 570 lines: it is one state machine over the turn's open tool calls
 * (start, continue, expire, finish server work, abort). Its private helpers (`applyProgress`,
 * `finish`, the builders of what is awaited and sent) serve every entry point; splitting them
 * off would only export them for one caller.
 */
import { createHash } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { ImageContent, TextContent, ToolResultMessage } from "../../llm/types.ts";
import type { CallClientCommand, ToolResultInput } from "../../loop/types.ts";
import { toCheckpointMessage } from "./checkpoint.ts";
import type { ClientEvent } from "./client-message.ts";
import {
  type AgentServerMessage,
  AgentServerMessageSchema,
} from "./gen/agent/v1/agent_stream_pb.js";
import { ConversationStepSchema } from "./gen/agent/v1/conversation_state_pb.js";
import { ToolCallSchema } from "./gen/agent/v1/tool_call_pb.js";
import { toAgentMode } from "./mode.ts";
import { toUpdateMessage } from "./server-message.ts";
import { type AnyTool, findTool } from "./tools/catalogue.ts";
import type { ServerWork, ServerWorkResult } from "./tools/server-work.ts";
import type {
  ClientReply,
  ClientRequest,
  ToolEnv,
  ToolOutput,
  ToolProgress,
  UiTool,
} from "./tools/types.ts";
import type { Awaiting, OpenToolCall, TurnState } from "./turn-state.ts";

export interface ToolContext {
  /** Arrival time of the input being handled, epoch ms. */
  readonly at: number;
  /** The idempotency key of the loop input a finished call produces. */
  readonly inputID: string;
}

export interface ToolStep {
  readonly state: TurnState;
  /** The operation of the tool call this step advanced; null when it was ignored. */
  readonly operationID: string | null;
  readonly messages: readonly AgentServerMessage[];
  /** The loop input to apply next; set when the tool call finished. */
  readonly input: ToolResultInput | null;
  /** Why the event was not applied; the state is then returned unchanged. */
  readonly ignored: string | null;
  /** Work the server must run now; its result goes to `finishServerWork` with this `id`. */
  readonly work: { readonly id: number; readonly work: ServerWork } | null;
}

export interface StartOptions {
  /**
   * The call was sent by an earlier server process and no result was saved: its outcome is
   * unknown (it may have run). A repeatable tool is sent again; a tool with effects is not — it
   * waits only for a late reply to the earlier exec (`expireToolCall` ends the wait).
   */
  readonly recovered: boolean;
  /**
   * Set for a subagent's call: the parent's task call it runs under. Its step is the subagent's,
   * not the parent's, so it is not added to the turn's steps (the checkpoint shows the task).
   */
  readonly taskCallID?: string;
}

export function startToolCall(
  state: TurnState,
  command: CallClientCommand,
  context: ToolContext,
  options: StartOptions = { recovered: false },
): ToolStep {
  if (state.open.some((open) => open.operationID === command.operationID)) {
    return ignore(state, `tool call ${command.toolCall.id} is already running`);
  }
  const call = command.toolCall;
  const env = toEnv(state, call.id, context.at);
  const tool = findTool(call.name, state.mode, state.mcpTools, state.web);
  const withoutTool = (text: string): ToolStep => ({
    state,
    operationID: command.operationID,
    messages: [],
    input: toResultInput(call.id, call.name, { text, isError: true, images: [] }, context),
    ignored: null,
    work: null,
  });
  if (tool === null) return withoutTool(`There is no tool named "${call.name}" in this mode.`);
  if (call.argumentsError !== undefined) {
    return withoutTool(
      `The arguments for ${call.name} are not a valid JSON object: ${call.argumentsError}`,
    );
  }
  const parsed = tool.parse(call.arguments, env);
  if (!parsed.ok) return withoutTool(`Invalid arguments for ${call.name}: ${parsed.error}`);
  const open: OpenToolCall = {
    operationID: command.operationID,
    toolCallID: call.id,
    toolName: call.name,
    modelCallID: state.modelCallID,
    arguments: call.arguments,
    args: parsed.args,
    stage: "",
    data: null,
    awaiting: { type: "exec", id: 0, execID: "" },
    startedAt: context.at,
    recovered: null,
    ...(options.taskCallID === undefined ? {} : { taskCallID: options.taskCallID }),
  };
  const started = toUpdateMessage({
    case: "toolCallStarted",
    value: {
      callId: call.id,
      toolCall: toUiToolCall(tool.started(parsed.args, env), open, null),
      modelCallId: open.modelCallID,
    },
  });
  const progress = tool.start(parsed.args, env);
  if (!options.recovered || progress.type !== "request") {
    return applyProgress(state, tool, open, progress, context, [started]);
  }
  const recovered = { resultCase: toResultCase(progress.request) };
  if (tool.repeatable) {
    const step = applyProgress(state, tool, open, progress, context, [started]);
    const sent = findOpen(step.state, open.operationID);
    return sent === null ? step : { ...step, state: withOpen(step.state, { ...sent, recovered }) };
  }
  const waiting = withOpen(state, {
    ...open,
    stage: progress.stage,
    data: progress.data,
    awaiting: { type: "earlier" },
    recovered,
  });
  return {
    state: waiting,
    operationID: open.operationID,
    messages: [started, toCheckpointMessage(waiting)],
    input: null,
    work: null,
    ignored: null,
  };
}

/** What the model sees for a call whose outcome stayed unknown after a restart. */
export const UNKNOWN_OUTCOME =
  "The outcome of this tool call is unknown: the server restarted, or the client moved to a new stream, while the client was running it, and its result never arrived. It may or may not have taken effect. Check (for example, read the file or list the directory) before retrying.";

/**
 * Ends the recovered call `operationID` if it is still waiting for a late reply to an earlier
 * process's exec (`awaiting.type === "earlier"`): the model gets an error result saying its
 * outcome is unknown. Ignored for any other call.
 */
export function expireToolCall(
  state: TurnState,
  operationID: string,
  context: ToolContext,
): ToolStep {
  const open = findOpen(state, operationID);
  if (open === null || open.awaiting.type !== "earlier") {
    return ignore(state, "no recovered tool call waits for a late result");
  }
  const tool = findTool(open.toolName, state.mode, state.mcpTools);
  if (tool === null) return ignore(state, `tool ${open.toolName} is no longer offered`);
  const env = toEnv(state, open.toolCallID, context.at);
  const failed = tool.failed(
    open.args,
    "its result was lost (a server restart or a client reconnect)",
    env,
  );
  return finish(state, open, { ...failed, text: UNKNOWN_OUTCOME, isError: true }, context, []);
}

/** Applies a client reply (or control message) to the running tool call it answers. */
export function continueToolCall(
  state: TurnState,
  event: ClientEvent,
  context: ToolContext,
): ToolStep {
  if (state.open.length === 0) return ignore(state, `no tool call is running (${event.type})`);
  const open = findAnswered(state, event);
  if (open === null) return ignore(state, `${describeReply(event)}, not a running one`);
  const tool = findTool(open.toolName, state.mode, state.mcpTools, state.web);
  if (tool === null) return ignore(state, `tool ${open.toolName} is no longer offered`);
  const env = toEnv(state, open.toolCallID, context.at);
  switch (event.type) {
    case "exec_result": {
      const reply: ClientReply = { type: "exec", result: event.result };
      return applyProgress(
        state,
        tool,
        open,
        tool.resume(open.args, open.stage, open.data, reply, env),
        context,
        [],
      );
    }
    case "interaction_response": {
      const reply: ClientReply = { type: "query", result: event.result };
      return applyProgress(
        state,
        tool,
        open,
        tool.resume(open.args, open.stage, open.data, reply, env),
        context,
        [],
      );
    }
    case "exec_throw": {
      const error = event.error.trim() === "" ? "unknown error" : event.error;
      return finish(state, open, tool.failed(open.args, error, env), context, []);
    }
    default:
      return ignore(state, `${event.type} is not a tool reply`);
  }
}

/** The open call `event` answers, or null (control messages and heartbeats answer none). */
function findAnswered(state: TurnState, event: ClientEvent): OpenToolCall | null {
  const found = (match: (open: OpenToolCall) => boolean) => state.open.find(match) ?? null;
  switch (event.type) {
    case "exec_result":
      return found(
        (open) =>
          isLateReply(open, event) ||
          (open.awaiting.type === "exec" && isSameExec(open.awaiting, event.id, event.execID)),
      );
    case "interaction_response":
      return found((open) => open.awaiting.type === "query" && open.awaiting.id === event.id);
    case "exec_throw":
      return found((open) => open.awaiting.type === "exec" && open.awaiting.id === event.id);
    default:
      return null;
  }
}

function describeReply(event: ClientEvent): string {
  switch (event.type) {
    case "exec_result":
      return `result for exec ${event.id} "${event.execID}"`;
    case "interaction_response":
      return `response to query ${event.id}`;
    case "exec_throw":
      return `throw for exec ${event.id}`;
    case "exec_stream_close":
      // Not terminal: for one-shot execs it may even arrive before the result.
      return "stream_close is not terminal";
    case "exec_heartbeat":
      return "exec heartbeat";
    default:
      return `${event.type} is not a tool reply`;
  }
}

/** Applies the result of the server's own work (`ToolStep.work` number `id`) to its call. */
export function finishServerWork(
  state: TurnState,
  id: number,
  result: ServerWorkResult,
  context: ToolContext,
): ToolStep {
  if (state.open.length === 0) return ignore(state, "no tool call is running (server work)");
  const open =
    state.open.find((call) => call.awaiting.type === "server" && call.awaiting.id === id) ?? null;
  if (open === null) return ignore(state, `result of server work ${id}, not a running one`);
  const tool = findTool(open.toolName, state.mode, state.mcpTools, state.web);
  if (tool === null) return ignore(state, `tool ${open.toolName} is no longer offered`);
  const env = toEnv(state, open.toolCallID, context.at);
  const reply: ClientReply = { type: "server", result };
  return applyProgress(
    state,
    tool,
    open,
    tool.resume(open.args, open.stage, open.data, reply, env),
    context,
    [],
  );
}

/**
 * Stops every running tool call (cancel): asks the client to abort each exec, closes each call
 * in the UI as failed and records it as a step. The loop itself records the calls as not run.
 */
export function abortToolCalls(
  state: TurnState,
  at: number,
  reason: string,
): { state: TurnState; messages: AgentServerMessage[] } {
  let current = state;
  const messages: AgentServerMessage[] = [];
  for (const open of state.open) {
    const aborted = abortOne(current, open, at, reason);
    current = aborted.state;
    messages.push(...aborted.messages);
  }
  return { state: current, messages };
}

/**
 * Stops the running tool call `operationID` only (a subagent's call when the subagent ends): as
 * `abortToolCalls` for that one call; nothing when it is not running.
 */
export function abortToolCall(
  state: TurnState,
  operationID: string,
  at: number,
  reason: string,
): { state: TurnState; messages: AgentServerMessage[] } {
  const open = findOpen(state, operationID);
  if (open === null) return { state, messages: [] };
  const aborted = abortOne(state, open, at, reason);
  return {
    state: aborted.state,
    messages: [...aborted.messages, toCheckpointMessage(aborted.state)],
  };
}

function abortOne(
  state: TurnState,
  open: OpenToolCall,
  at: number,
  reason: string,
): { state: TurnState; messages: AgentServerMessage[] } {
  const messages: AgentServerMessage[] = [];
  if (open.awaiting.type === "exec") {
    messages.push(
      create(AgentServerMessageSchema, {
        message: {
          case: "execServerControlMessage",
          value: { message: { case: "abort", value: { id: open.awaiting.id } } },
        },
      }),
    );
  }
  const tool = findTool(open.toolName, state.mode, state.mcpTools, state.web);
  if (tool === null) return { state: withoutOpen(state, open.operationID), messages };
  const output = tool.failed(open.args, reason, toEnv(state, open.toolCallID, at));
  const toolCall = toUiToolCall(output.ui, open, at);
  messages.push(
    toUpdateMessage({
      case: "toolCallCompleted",
      value: { callId: open.toolCallID, toolCall, modelCallId: open.modelCallID },
    }),
  );
  const step = create(ConversationStepSchema, { message: { case: "toolCall", value: toolCall } });
  const closed = withoutOpen(state, open.operationID);
  const steps = open.taskCallID === undefined ? [...closed.steps, step] : closed.steps;
  return { state: { ...closed, steps }, messages };
}

/** The open call of `operationID`, or null. */
export function findOpen(state: TurnState, operationID: string): OpenToolCall | null {
  return state.open.find((open) => open.operationID === operationID) ?? null;
}

/** `state` with `open` replacing the call of its operation, or added after the others. */
function withOpen(state: TurnState, open: OpenToolCall): TurnState {
  const index = state.open.findIndex((call) => call.operationID === open.operationID);
  return {
    ...state,
    open:
      index < 0 ? [...state.open, open] : state.open.map((call, i) => (i === index ? open : call)),
  };
}

function withoutOpen(state: TurnState, operationID: string): TurnState {
  return { ...state, open: state.open.filter((call) => call.operationID !== operationID) };
}

/** One step of a tool's progress (a request to send, a wait, or done) applied to its open call. */
function applyProgress(
  state: TurnState,
  tool: AnyTool,
  open: OpenToolCall,
  progress: ToolProgress<unknown>,
  context: ToolContext,
  before: AgentServerMessage[],
): ToolStep {
  switch (progress.type) {
    case "request": {
      const id = state.nextID;
      const awaiting = toAwaiting(progress.request, open.operationID, id);
      const next: TurnState = withOpen(
        { ...state, nextID: id + 1 },
        { ...open, stage: progress.stage, data: progress.data, awaiting, recovered: null },
      );
      const isFirst = findOpen(state, open.operationID) === null;
      const checkpoint = isFirst ? [toCheckpointMessage(next)] : [];
      if (progress.request.type === "server") {
        return {
          state: next,
          operationID: open.operationID,
          messages: [...before, ...checkpoint],
          input: null,
          ignored: null,
          work: { id, work: progress.request.work },
        };
      }
      return {
        state: next,
        operationID: open.operationID,
        messages: [...before, ...checkpoint, toRequestMessage(progress.request, awaiting)],
        input: null,
        ignored: null,
        work: null,
      };
    }
    case "wait":
      if (findOpen(state, open.operationID) === null) {
        // A handler must not wait before it asked for anything; treat it as a failed call.
        return finish(
          state,
          open,
          tool.failed(
            open.args,
            "the tool did not send a request",
            toEnv(state, open.toolCallID, context.at),
          ),
          context,
          before,
        );
      }
      return {
        state: withOpen(state, { ...open, data: progress.data }),
        operationID: open.operationID,
        messages: [...before, ...progress.updates.map((update) => toUpdateMessage(update))],
        input: null,
        ignored: null,
        work: null,
      };
    case "done":
      return finish(state, open, progress.output, context, before);
  }
}

function finish(
  state: TurnState,
  open: OpenToolCall,
  output: ToolOutput,
  context: ToolContext,
  before: AgentServerMessage[],
): ToolStep {
  const toolCall = toUiToolCall(output.ui, open, context.at);
  const step = create(ConversationStepSchema, { message: { case: "toolCall", value: toolCall } });
  const next: TurnState = {
    ...withoutOpen(state, open.operationID),
    steps: open.taskCallID === undefined ? [...state.steps, step] : state.steps,
    todos: output.todos ?? state.todos,
    ...(output.mode === undefined || output.mode === state.mode
      ? {}
      : { mode: output.mode, agentMode: toAgentMode(output.mode) }),
  };
  const completed = toUpdateMessage({
    case: "toolCallCompleted",
    value: { callId: open.toolCallID, toolCall, modelCallId: open.modelCallID },
  });
  return {
    state: next,
    operationID: open.operationID,
    messages: [
      ...before,
      ...output.updates.map((update) => toUpdateMessage(update)),
      completed,
      toCheckpointMessage(next),
    ],
    input: toResultInput(open.toolCallID, open.toolName, output, context),
    ignored: null,
    work: null,
  };
}

function toUiToolCall(tool: UiTool, open: OpenToolCall, completedAt: number | null) {
  return create(ToolCallSchema, {
    tool,
    toolCallId: open.toolCallID,
    startedAtMs: BigInt(open.startedAt),
    ...(completedAt === null ? {} : { completedAtMs: BigInt(completedAt) }),
  });
}

type SentAwaiting = Exclude<Awaiting, { type: "earlier" }>;

function toAwaiting(request: ClientRequest, operationID: string, id: number): SentAwaiting {
  if (request.type === "query") return { type: "query", id };
  if (request.type === "server") return { type: "server", id };
  return { type: "exec", id, execID: toExecID(operationID, id) };
}

/**
 * The exec's string id: derived from the operation and the exec number, so it is unique per
 * step of a multi-step tool and identical when the same input is replayed.
 */
export function toExecID(operationID: string, id: number): string {
  return `exec-${createHash("sha256").update(`${operationID}#${id}`).digest("hex").slice(0, 24)}`;
}

function toRequestMessage(
  request: Exclude<ClientRequest, { type: "server" }>,
  awaiting: SentAwaiting,
): AgentServerMessage {
  if (request.type === "query") {
    return create(AgentServerMessageSchema, {
      message: { case: "interactionQuery", value: { id: awaiting.id, query: request.query } },
    });
  }
  return create(AgentServerMessageSchema, {
    message: {
      case: "execServerMessage",
      value: {
        id: awaiting.id,
        execId: awaiting.type === "exec" ? awaiting.execID : "",
        message: request.exec,
      },
    },
  });
}

/**
 * A reply to the exec an earlier server process sent for this call (see
 * `OpenToolCall.recovered`): its exec id is the one that process derived from this operation and
 * the exec's number, and its result is of the kind the call's current stage expects. Clients that
 * echo no exec id cannot be matched this way.
 */
function isLateReply(
  open: OpenToolCall,
  event: Extract<ClientEvent, { type: "exec_result" }>,
): boolean {
  return (
    open.recovered !== null &&
    event.execID !== "" &&
    event.execID === toExecID(open.operationID, event.id) &&
    event.result.case === open.recovered.resultCase
  );
}

/** The result case that answers `request` (`readArgs` → `readResult`, a query → `query`). */
function toResultCase(request: ClientRequest): string {
  if (request.type === "query") return "query";
  if (request.type === "server") return "server";
  if (request.exec.case === "shellStreamArgs") return "shellStream";
  return request.exec.case.replace(/Args$/, "Result");
}

/** The client echoes both ids; match on exec_id when it sent one, else on the numeric id. */
function isSameExec(
  awaiting: Extract<Awaiting, { type: "exec" }>,
  id: number,
  execID: string,
): boolean {
  return execID !== "" ? execID === awaiting.execID : id === awaiting.id;
}

function toEnv(state: TurnState, toolCallID: string, at: number): ToolEnv {
  return {
    workspaceRoot: state.workspaceRoot,
    toolCallID,
    at,
    todos: state.todos,
    mode: state.mode,
    terminalsFolder: state.terminalsFolder,
    askWebApproval: state.web.askApproval,
  };
}

function toResultInput(
  toolCallID: string,
  toolName: string,
  output: Pick<ToolOutput, "text" | "isError" | "images">,
  context: ToolContext,
): ToolResultInput {
  const content: (TextContent | ImageContent)[] = [
    { type: "text", text: output.text },
    ...output.images,
  ];
  const message: ToolResultMessage = {
    role: "toolResult",
    toolCallId: toolCallID,
    toolName,
    content,
    isError: output.isError,
    timestamp: context.at,
  };
  return { type: "tool_result", inputID: context.inputID, at: context.at, message };
}

function ignore(state: TurnState, reason: string): ToolStep {
  return { state, operationID: null, messages: [], input: null, ignored: reason, work: null };
}
