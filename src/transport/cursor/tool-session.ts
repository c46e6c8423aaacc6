/**
 * Runs one tool call of the loop (`call_client`) against the client: picks the catalogue tool,
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
}

export function startToolCall(
  state: TurnState,
  command: CallClientCommand,
  context: ToolContext,
  options: StartOptions = { recovered: false },
): ToolStep {
  if (state.open !== null)
    return ignore(state, `tool call ${state.open.toolCallID} is still running`);
  const call = command.toolCall;
  const env = toEnv(state, call.id, context.at);
  const tool = findTool(call.name, state.mode, state.mcpTools, state.web);
  const withoutTool = (text: string): ToolStep => ({
    state,
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
    return apply(state, tool, open, progress, context, [started]);
  }
  const recovered = { resultCase: toResultCase(progress.request) };
  if (tool.repeatable) {
    const step = apply(state, tool, open, progress, context, [started]);
    const sent = step.state.open;
    return sent === null
      ? step
      : { ...step, state: { ...step.state, open: { ...sent, recovered } } };
  }
  const waiting: TurnState = {
    ...state,
    open: {
      ...open,
      stage: progress.stage,
      data: progress.data,
      awaiting: { type: "earlier" },
      recovered,
    },
  };
  return {
    state: waiting,
    messages: [started, toCheckpointMessage(waiting)],
    input: null,
    work: null,
    ignored: null,
  };
}

/** What the model sees for a call whose outcome stayed unknown after a restart. */
export const UNKNOWN_OUTCOME =
  "The outcome of this tool call is unknown: the server restarted while the client was running it, and its result never arrived. It may or may not have taken effect. Check (for example, read the file or list the directory) before retrying.";

/**
 * Ends a recovered call that is still waiting for a late reply to an earlier process's exec
 * (`awaiting.type === "earlier"`): the model gets an error result saying its outcome is unknown.
 * Ignored for any other call.
 */
export function expireToolCall(state: TurnState, context: ToolContext): ToolStep {
  const open = state.open;
  if (open === null || open.awaiting.type !== "earlier") {
    return ignore(state, "no recovered tool call waits for a late result");
  }
  const tool = findTool(open.toolName, state.mode, state.mcpTools);
  if (tool === null) return ignore(state, `tool ${open.toolName} is no longer offered`);
  const env = toEnv(state, open.toolCallID, context.at);
  const failed = tool.failed(open.args, "the server restarted while it ran", env);
  return finish(state, open, { ...failed, text: UNKNOWN_OUTCOME, isError: true }, context, []);
}

/** Applies a client reply (or control message) to the running tool call. */
export function continueToolCall(
  state: TurnState,
  event: ClientEvent,
  context: ToolContext,
): ToolStep {
  const open = state.open;
  if (open === null) return ignore(state, `no tool call is running (${event.type})`);
  const tool = findTool(open.toolName, state.mode, state.mcpTools, state.web);
  if (tool === null) return ignore(state, `tool ${open.toolName} is no longer offered`);
  const env = toEnv(state, open.toolCallID, context.at);
  const awaiting = open.awaiting;
  switch (event.type) {
    case "exec_result": {
      const late = isLateReply(open, event);
      if (!late && (awaiting.type !== "exec" || !isSameExec(awaiting, event.id, event.execID))) {
        return ignore(state, `result for exec ${event.id} "${event.execID}", not the running one`);
      }
      const reply: ClientReply = { type: "exec", result: event.result };
      return apply(
        state,
        tool,
        open,
        tool.resume(open.args, open.stage, open.data, reply, env),
        context,
        [],
      );
    }
    case "interaction_response": {
      if (awaiting.type !== "query" || awaiting.id !== event.id) {
        return ignore(state, `response to query ${event.id}, not the running one`);
      }
      const reply: ClientReply = { type: "query", result: event.result };
      return apply(
        state,
        tool,
        open,
        tool.resume(open.args, open.stage, open.data, reply, env),
        context,
        [],
      );
    }
    case "exec_throw": {
      if (awaiting.type !== "exec" || awaiting.id !== event.id) {
        return ignore(state, `throw for exec ${event.id}, not the running one`);
      }
      const error = event.error.trim() === "" ? "unknown error" : event.error;
      return finish(state, open, tool.failed(open.args, error, env), context, []);
    }
    case "exec_stream_close":
      // Not terminal: for one-shot execs it may even arrive before the result.
      return ignore(state, "stream_close is not terminal");
    case "exec_heartbeat":
      return ignore(state, "exec heartbeat");
    default:
      return ignore(state, `${event.type} is not a tool reply`);
  }
}

/** Applies the result of the server's own work (`ToolStep.work` number `id`) to the running call. */
export function finishServerWork(
  state: TurnState,
  id: number,
  result: ServerWorkResult,
  context: ToolContext,
): ToolStep {
  const open = state.open;
  if (open === null) return ignore(state, "no tool call is running (server work)");
  if (open.awaiting.type !== "server" || open.awaiting.id !== id) {
    return ignore(state, `result of server work ${id}, not the running one`);
  }
  const tool = findTool(open.toolName, state.mode, state.mcpTools, state.web);
  if (tool === null) return ignore(state, `tool ${open.toolName} is no longer offered`);
  const env = toEnv(state, open.toolCallID, context.at);
  const reply: ClientReply = { type: "server", result };
  return apply(
    state,
    tool,
    open,
    tool.resume(open.args, open.stage, open.data, reply, env),
    context,
    [],
  );
}

/**
 * Stops the running tool call (cancel): asks the client to abort the exec, closes the call in
 * the UI as failed and records it as a step. The loop itself records the call as not run.
 */
export function abortToolCall(
  state: TurnState,
  at: number,
  reason: string,
): { state: TurnState; messages: AgentServerMessage[] } {
  const open = state.open;
  if (open === null) return { state, messages: [] };
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
  if (tool === null) return { state: { ...state, open: null }, messages };
  const output = tool.failed(open.args, reason, toEnv(state, open.toolCallID, at));
  const toolCall = toUiToolCall(output.ui, open, at);
  messages.push(
    toUpdateMessage({
      case: "toolCallCompleted",
      value: { callId: open.toolCallID, toolCall, modelCallId: open.modelCallID },
    }),
  );
  const step = create(ConversationStepSchema, { message: { case: "toolCall", value: toolCall } });
  return { state: { ...state, open: null, steps: [...state.steps, step] }, messages };
}

function apply(
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
      const next: TurnState = {
        ...state,
        nextID: id + 1,
        open: { ...open, stage: progress.stage, data: progress.data, awaiting, recovered: null },
      };
      const isFirst = state.open === null;
      const checkpoint = isFirst ? [toCheckpointMessage(next)] : [];
      if (progress.request.type === "server") {
        return {
          state: next,
          messages: [...before, ...checkpoint],
          input: null,
          ignored: null,
          work: { id, work: progress.request.work },
        };
      }
      return {
        state: next,
        messages: [...before, ...checkpoint, toRequestMessage(progress.request, awaiting)],
        input: null,
        ignored: null,
        work: null,
      };
    }
    case "wait":
      if (state.open === null) {
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
        state: { ...state, open: { ...open, data: progress.data } },
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
    ...state,
    open: null,
    steps: [...state.steps, step],
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
  return { state, messages: [], input: null, ignored: reason, work: null };
}
