/**
 * A run request → the loop's `start` input and the turn's protocol state. It builds what the
 * loop needs and nothing more: the user message (text and images), the context supplements
 * (context.ts), and the settings — the byte-stable system prompt of the mode (prompt.ts) and
 * the tool definitions (catalogue + the client's MCP tools). Credentials the client may attach
 * to model descriptors are never read. Protocol ids stay here and in the turn state.
 */
import { create, fromBinary } from "@bufbuild/protobuf";
import { SUBAGENT_TOOL } from "../../loop/subagent.ts";
import type { ContextSupplement, StartInput, TurnSettings } from "../../loop/types.ts";
import { toBlobStore } from "./blobs.ts";
import type { RunAction } from "./client-message.ts";
import { ofSubagentContext, toContextSupplements, toSubagentContext } from "./context.ts";
import { findUnusedContext } from "./context-attached.ts";
import { type Decoded, toDecoded, toDecodeError } from "./decode-error.ts";
import { deepFreeze } from "./deep-freeze.ts";
import { detachBytes } from "./detach-bytes.ts";
import { AgentMode, type TodoItem, TodoItemSchema } from "./gen/agent/v1/common_pb.js";
import { ConversationStateStructureSchema } from "./gen/agent/v1/conversation_state_pb.js";
import {
  CustomSubagentPermissionMode,
  type RequestContext,
} from "./gen/agent/v1/request_context_pb.js";
import type { AgentRunRequest } from "./gen/agent/v1/run_request_pb.js";
import {
  type UserMessage as CursorUserMessage,
  UserMessageSchema,
} from "./gen/agent/v1/user_message_pb.js";
import { fromAgentMode, MODES, type Mode } from "./mode.ts";
import { toSystemPrompt } from "./prompt/index.ts";
import { toReferencedBytes } from "./referenced-bytes.ts";
import { toConcurrentToolNames, toMcpToolRefs, toToolDefinitions } from "./tools/catalogue.ts";
import type { McpToolRef } from "./tools/mcp.ts";
import { NO_WEB, type WebOffer } from "./tools/server-work.ts";
import { type TurnState, ZERO_USAGE } from "./turn-state.ts";
import { toUserMessage } from "./user-message.ts";

/** The model the client asked for; the runner resolves it to a provider. */
export interface ModelSelection {
  /** `requested_model.model_id`, else `model_details.model_id`; may carry a variant suffix. */
  readonly model: string;
  readonly maxMode: boolean;
  /** Model parameters such as a thinking effort (`{ id, value }` as the client sent them). */
  readonly parameters: readonly { readonly id: string; readonly value: string }[];
  readonly isVariantString: boolean;
}

export interface RunOptions {
  /** Arrival time, epoch ms. */
  readonly at: number;
  /** Idempotency key of the start input (request id + append seqno). */
  readonly inputID: string;
  /** The request id of the stream this turn runs on. */
  readonly requestID: string;
  /** The context window of the model the runner resolved (for the usage indicator). */
  readonly contextWindow: number;
  /**
   * The web tools the server can run (its configuration); the turn offers each unless the
   * client's request context turns it off (`web_search_enabled` / `web_fetch_enabled` false).
   */
  readonly web?: WebOffer;
}

export interface TurnStart {
  readonly input: StartInput;
  readonly state: TurnState;
  /** The client's id of the user message; a replayed request carries the same one. */
  readonly messageID: string;
  /** `harness` of the run request (`cursor-ide` from the IDE; absent from the CLI). */
  readonly harness: string;
  /** Attached context no supplement renders (context-attached.ts), for a debug log. */
  readonly unusedContext: readonly string[];
}

export function toModelSelection(request: AgentRunRequest): ModelSelection | null {
  const requested = request.requestedModel;
  const model = requested?.modelId || request.modelDetails?.modelId || "";
  if (model === "") return null;
  return {
    model,
    maxMode: requested?.maxMode ?? request.modelDetails?.maxMode ?? false,
    parameters: (requested?.parameters ?? []).map(({ id, value }) => ({ id, value })),
    isVariantString: requested?.isVariantStringRepresentation ?? false,
  };
}

/**
 * The settings of `mode`: its fixed system prompt and tool definitions. Everything else is kept
 * (the model, its fallbacks, its compaction, the client's model options), so a mid-turn mode switch
 * (switch_mode) changes only what the mode decides.
 */
export function toModeSettings(
  settings: Pick<TurnSettings, "model"> & Partial<TurnSettings>,
  mode: Mode,
  mcpTools: readonly McpToolRef[],
  web: WebOffer = NO_WEB,
): TurnSettings {
  const tools = toToolDefinitions(mode, mcpTools, web);
  const { concurrentTools: _before, ...kept } = settings;
  return {
    ...kept,
    systemPrompt: toSystemPrompt(mode),
    tools,
    readOnlyTools: toConcurrentToolNames(mode, mcpTools, web),
    // Several subagents asked for in one response run at once (src/loop/tool-batch.ts).
    ...(tools.some((tool) => tool.name === SUBAGENT_TOOL)
      ? { concurrentTools: [SUBAGENT_TOOL] }
      : {}),
  };
}

/**
 * The mode whose settings `settings` are, read back from its system prompt (one fixed text per
 * mode); null for settings no mode gives. The loop's committed settings are the truth after a
 * restart, when the turn state is rebuilt from a run request sent before a mode switch.
 */
export function fromModeSettings(settings: { readonly systemPrompt: string }): Mode | null {
  return MODES.find((mode) => toSystemPrompt(mode) === settings.systemPrompt) ?? null;
}

export function fromRunRequest(
  request: AgentRunRequest,
  action: RunAction,
  options: RunOptions,
): Decoded<TurnStart> {
  const conversationID = request.conversationId ?? "";
  if (conversationID === "")
    return toDecodeError("bad_field", "the run request has no conversation_id");
  const model = toModelSelection(request);
  if (model === null) return toDecodeError("bad_field", "the run request names no model");
  const turn = toTurnAction(request, action);
  if (turn === null)
    return toDecodeError("bad_field", `the run request's ${action} action carries no user message`);
  const blobs = toBlobStore(request.preFetchedBlobs);
  const converted = toUserMessage(turn.userMessage, blobs, options.at, turn.prepend);
  if (!converted.ok) return converted;
  const userMessage = converted.value;
  const hasContent =
    typeof userMessage.content === "string"
      ? userMessage.content !== ""
      : userMessage.content.length > 0;
  if (!hasContent) return toDecodeError("bad_field", "the user message is empty");

  const context = toContextSupplements({
    requestContext: turn.requestContext,
    selectedContext: turn.userMessage.selectedContext,
    customInstructions: request.customSystemPrompt,
    excludeWorkspace: request.excludeWorkspaceContext ?? false,
    blobs,
    hookContexts: turn.userMessage.hookAdditionalContexts,
  });
  const state = toTurnState(request, conversationID, turn, options, ofSubagentContext(context));
  const input: StartInput = {
    type: "start",
    inputID: options.inputID,
    at: options.at,
    userMessage,
    context,
    settings: toModeSettings({ model: model.model }, state.mode, state.mcpTools, state.web),
    // The client's ids of the turn and its message, recorded for rewinds (loop/rewind.ts).
    origin: options.requestID,
    ...(turn.userMessage.messageId === "" ? {} : { messageID: turn.userMessage.messageId }),
  };
  return toDecoded({
    input,
    state,
    messageID: turn.userMessage.messageId,
    harness: request.harness ?? "",
    unusedContext: findUnusedContext(turn.userMessage.selectedContext),
  });
}

/**
 * The turn state for a stream that continues an interrupted turn instead of starting one: a run
 * request whose action is `resume_action`, or the saved run request of a stream picked up again
 * after a restart. No loop input comes of it; the runner resumes what the conversation waits for.
 */
export function toResumedTurnState(
  request: AgentRunRequest,
  options: RunOptions,
): Decoded<TurnState> {
  const conversationID = request.conversationId ?? "";
  if (conversationID === "")
    return toDecodeError("bad_field", "the run request has no conversation_id");
  const branch = request.action?.action;
  const saved = (["user_message", "start_plan", "execute_plan"] as const)
    .map((action) => toTurnAction(request, action))
    .find((turn) => turn !== null);
  const resumed: TurnAction = saved ?? {
    userMessage: create(UserMessageSchema, {}),
    prepend: [],
    requestContext: branch?.case === "resumeAction" ? branch.value.requestContext : undefined,
    agentMode: AgentMode.UNSPECIFIED,
  };
  return toDecoded(toTurnState(request, conversationID, resumed, options));
}

/**
 * `subagentContext`: the turn's subagent context when the caller has rendered the context already
 * (`ofSubagentContext`); made here otherwise.
 */
function toTurnState(
  request: AgentRunRequest,
  conversationID: string,
  turn: TurnAction,
  options: RunOptions,
  subagentContext?: ContextSupplement[],
): TurnState {
  // The turn keeps these two for the life of the stream: their bytes (the earlier turns, images,
  // unknown fields) are copied out of the request body, which is released (detach-bytes.ts).
  const { previous, userMessage } = detachBytes({
    previous: request.conversationState ?? NO_CHECKPOINT,
    userMessage: turn.userMessage,
  });
  const agentMode =
    turn.agentMode !== AgentMode.UNSPECIFIED ? turn.agentMode : (previous.mode ?? AgentMode.AGENT);
  const mode = fromAgentMode(agentMode);
  const mcpTools = orNone(
    toMcpToolRefs(
      [...(request.mcpTools?.mcpTools ?? []), ...(turn.requestContext?.tools ?? [])],
      request.mcpFileSystemOptions?.mcpDescriptors ?? [],
    ),
  );
  const env = turn.requestContext?.env;
  const workspaceRoot =
    env?.workspacePaths[0] ||
    env?.processWorkingDirectory ||
    request.mcpFileSystemOptions?.workspaceProjectDir ||
    "";
  const web = options.web ?? NO_WEB;
  return {
    conversationID,
    requestID: options.requestID,
    mode,
    agentMode,
    workspaceRoot,
    terminalsFolder: env?.terminalsFolder ?? "",
    mcpTools,
    web: {
      ...web,
      search: web.search && turn.requestContext?.webSearchEnabled !== false,
      fetch: web.fetch && turn.requestContext?.webFetchEnabled !== false,
    },
    contextWindow: options.contextWindow,
    nextID: 1,
    open: NONE,
    modelCallID: "",
    streaming: NONE,
    thinking: null,
    thinkingDurations: NONE,
    usage: ZERO_USAGE,
    contextTokens: previous.tokenDetails?.usedTokens ?? 0,
    userMessage,
    steps: NONE,
    previous,
    ...withReferenced(toReferencedBytes(request.conversationState, request.preFetchedBlobs)),
    todos: orNone(toTodos(previous.todos)),
    subagentContext: toExact(
      subagentContext ??
        toSubagentContext({
          requestContext: turn.requestContext,
          customInstructions: request.customSystemPrompt,
          excludeWorkspace: request.excludeWorkspaceContext ?? false,
        }),
    ),
    customSubagents: orNone(
      (turn.requestContext?.customSubagents ?? []).map((custom) => ({
        name: custom.name,
        description: custom.description,
        prompt: custom.prompt,
        tools: [...custom.tools],
        model: custom.model,
        readOnly: custom.permissionMode === CustomSubagentPermissionMode.READONLY,
      })),
    ),
  };
}

/*
 * A turn state lives as long as its stream (issue #19, heap per open stream): what most turns
 * start with is shared, not made per stream. A turn state is replaced, never changed in place
 * (its lists are readonly; checkpoint.ts and carried-turn.ts copy `previous` before setting a
 * field), and these are frozen, so a write to one throws instead of reaching every stream.
 */

/** The checkpoint of a run request that sent none (a conversation's first turn): empty. */
const NO_CHECKPOINT = deepFreeze(create(ConversationStateStructureSchema));

/** The empty list every turn state's empty lists are. */
const NONE: readonly never[] = Object.freeze([]);

function orNone<T>(list: readonly T[]): readonly T[] {
  return list.length === 0 ? NONE : list;
}

/**
 * `list` in an array of its own length: a list built by `push` or `filter` keeps room for ≈16
 * more entries (≈130 B), for as long as the turn state keeps it.
 */
function toExact<T>(list: readonly T[]): readonly T[] {
  return list.length === 0 ? NONE : list.slice();
}

interface TurnAction {
  readonly userMessage: CursorUserMessage;
  readonly prepend: readonly CursorUserMessage[];
  readonly requestContext: RequestContext | undefined;
  readonly agentMode: AgentMode;
}

function toTurnAction(request: AgentRunRequest, action: RunAction): TurnAction | null {
  const branch = request.action?.action;
  if (action === "user_message" && branch?.case === "userMessageAction") {
    const value = branch.value;
    if (value.userMessage === undefined) return null;
    return {
      userMessage: value.userMessage,
      prepend: value.prependUserMessages,
      requestContext: value.requestContext,
      agentMode: value.userMessage.mode,
    };
  }
  if (action === "start_plan" && branch?.case === "startPlanAction") {
    const value = branch.value;
    if (value.userMessage === undefined) return null;
    return {
      userMessage: value.userMessage,
      prepend: [],
      requestContext: value.requestContext,
      agentMode: AgentMode.PLAN,
    };
  }
  if (action === "execute_plan" && branch?.case === "executePlanAction") {
    const value = branch.value;
    const content = value.planFileContent || value.plan?.plan || "";
    const path = value.planFilePath || value.planFileUri || "";
    const text =
      content !== ""
        ? `Implement the following plan.\n\n${content}`
        : path !== ""
          ? `Implement the plan in ${path}.`
          : "";
    if (text === "") return null;
    const userMessage = create(UserMessageSchema, {
      text,
      messageId: value.kickoffMessageId ?? "",
      mode: value.executionMode !== AgentMode.UNSPECIFIED ? value.executionMode : AgentMode.AGENT,
    });
    return {
      userMessage,
      prepend: [],
      requestContext: value.requestContext,
      agentMode: userMessage.mode,
    };
  }
  return null;
}

function withReferenced(referenced: number[] | undefined): { previousReferenced?: number[] } {
  return referenced === undefined ? {} : { previousReferenced: referenced };
}

/** The todo list of the previous checkpoint; entries that do not decode are dropped. */
function toTodos(entries: readonly Uint8Array[]): TodoItem[] {
  const todos: TodoItem[] = [];
  for (const entry of entries) {
    try {
      todos.push(fromBinary(TodoItemSchema, entry));
    } catch {
      // An entry another server wrote in another shape: not ours to interpret.
    }
  }
  return todos;
}
