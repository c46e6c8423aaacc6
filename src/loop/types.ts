/**
 * The vocabulary of the pure loop (docs/design.md §4): inputs, state, commands and the transition.
 * Everything here is plain, readonly, JSON-serialisable data: no classes, closures or handles.
 *
 * Why one file of about 460 lines: it is the loop's whole vocabulary, the union every `switch` in
 * transition.ts is exhaustive over; split, a reader would assemble the state from several files.
 */
import type {
  AssistantMessage,
  FailureKind,
  Message,
  ModelOptions,
  RequestMessages,
  ResponseEvent,
  TextContent,
  ThinkingContent,
  Tool,
  ToolCall,
  ToolResultMessage,
  Usage,
  UserMessage,
} from "../llm/types.ts";

// ---------------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------------

/**
 * A piece of per-turn context the model must see (environment, workspace, rules, selected files,
 * …). The text is rendered by whoever builds the input; the loop only decides whether it changed
 * since the model last saw the same `key`, and if so appends it (docs/design.md §4.1: context is a
 * new message, never an edit).
 */
export interface ContextSupplement {
  readonly key: string;
  readonly text: string;
}

/**
 * What a turn runs with. Built outside the loop (the loop knows no client protocol) and kept in
 * state so that requests after a tool result use the same prompt, tools and model.
 */
export interface TurnSettings {
  /** The configured model name the runner resolves to a provider. */
  readonly model: string;
  /**
   * The models a call may move to when `model` fails before its first token, in order
   * (model-route.ts). Absent: none.
   */
  readonly fallbacks?: readonly string[];
  /** Byte-stable per agent mode, so the provider's cached prefix survives across turns. */
  readonly systemPrompt: string;
  readonly tools: readonly Tool[];
  /** How the conversation is compacted when it outgrows the model's window; absent: never automatically. */
  readonly compaction?: CompactionSettings;
  /**
   * Names of the tools without effects (reads, searches): consecutive calls to them are sent to
   * the client together (tool-batch.ts). Absent: every call runs alone. Not part of the request.
   */
  readonly readOnlyTools?: readonly string[];
  /**
   * Names of tools with effects whose consecutive calls still run together (tool-batch.ts): the
   * subagent tool, whose calls each work on a task the model split off on purpose. Absent: none.
   * Not part of the request.
   */
  readonly concurrentTools?: readonly string[];
  /**
   * Only the tools in `tools` may run: a call naming any other tool is answered by the loop with
   * an error result and never reaches the client (subagent.ts: a read-only subagent cannot write,
   * whatever the model asks for). Absent: the client side decides what a name means.
   */
  readonly onlyOfferedTools?: true;
  /**
   * The client's per-request model options (thinking, effort, max mode): the model call carries
   * them to the LLM layer. Absent: the model's configured defaults.
   */
  readonly modelOptions?: ModelOptions;
}

/**
 * When and how to compact (docs/compaction.md). Built outside the loop from the model's
 * configuration; all sizes are tokens.
 */
export interface CompactionSettings {
  /** Compact before a model call on an estimate (and after a context-length error). */
  readonly auto: boolean;
  /** The model's context window. */
  readonly contextWindow: number;
  /** Tokens kept free for the response (the model's output limit). */
  readonly outputReserve: number;
  /** Compact when the estimated input exceeds this fraction of `contextWindow - outputReserve`. */
  readonly threshold: number;
  /** The configured model name the summary call goes to. */
  readonly summaryModel: string;
  /** The input the summary model can take (its window less its output); default: this model's. */
  readonly summaryInputBudget?: number;
  /** How many of the last messages stay verbatim after the summary (at least; never a split tool exchange). */
  readonly tailMessages: number;
  /** Characters per token of the tokenizer-free estimate, calibrated per provider kind. */
  readonly charsPerToken: number;
}

/** Fields every external input carries: its idempotency key and the time it arrived. */
interface ExternalInput {
  /** Stable id chosen outside the loop (e.g. request id + append seqno); used for de-duplication. */
  readonly inputID: string;
  /** Arrival time, epoch milliseconds. The loop never reads a clock. */
  readonly at: number;
}

/** Begin a turn: a user message, its context and the settings to run it with. */
export interface StartInput extends ExternalInput {
  readonly type: "start";
  readonly userMessage: UserMessage;
  readonly context: readonly ContextSupplement[];
  readonly settings: TurnSettings;
  /** Set on the first turn of a subagent's conversation: the tool call it runs for (subagent.ts). */
  readonly parent?: ParentLink;
  /** The client's id of this turn (Cursor: the run request's id), kept in `turnStarts` (rewind.ts). */
  readonly origin?: string;
  /** The client's id of the user message (Cursor: the bubble id), kept in `turnStarts`. */
  readonly messageID?: string;
}

/**
 * The tool call of another conversation a subagent's conversation runs for (subagent.ts). Kept in
 * the child's committed state, so the link survives restarts without a schema change.
 */
export interface ParentLink {
  readonly conversationID: string;
  readonly operationID: string;
  readonly toolCallID: string;
  /** The subagent type's name (`explore`, `general`, or a custom subagent's name). */
  readonly subagentType: string;
}

/** Begin a turn with a user message, reusing the previous turn's settings. */
export interface UserMessageInput extends ExternalInput {
  readonly type: "user_message";
  readonly message: UserMessage;
}

/** One event of the model call `callID`, exactly as the LLM layer produced it. */
export interface LLMEventInput {
  readonly type: "llm_event";
  readonly callID: string;
  readonly event: ResponseEvent;
  /** With an `error` event: why the call failed. Absent: `other` (no failover). */
  readonly failure?: FailureKind;
  /**
   * Set by the runner on an `error` event the LLM layer classified as the provider's
   * context-length error (`isContextOverflow`): the loop may compact and retry once.
   */
  readonly contextOverflow?: boolean;
}

/** The result of a tool call, matched to the call by `message.toolCallId`. */
export interface ToolResultInput extends ExternalInput {
  readonly type: "tool_result";
  readonly message: ToolResultMessage;
  /**
   * The settings the rest of the turn runs with, when the tool changed them (a mode switch
   * changes the system prompt and the tools). History is untouched: the next request is still
   * an extension of the last one.
   */
  readonly settings?: TurnSettings;
}

/** Stop the current turn. */
export interface CancelInput extends ExternalInput {
  readonly type: "cancel";
  readonly reason: string;
}

/** Compact the conversation now (the client's `summarize` action); runs as a turn of its own. */
export interface CompactInput extends ExternalInput {
  readonly type: "compact";
  /** The client's id of this turn, kept in `turnStarts` (rewind.ts). */
  readonly origin?: string;
}

export type Input =
  | StartInput
  | UserMessageInput
  | LLMEventInput
  | ToolResultInput
  | CancelInput
  | CompactInput;

// ---------------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------------

export type Status = "ready" | "waiting_llm" | "waiting_client" | "final" | "failed" | "canceled";

/** A model call of the current turn. */
export interface LLMCall {
  readonly callID: string;
  /** 0-based index of this call within its turn. */
  readonly step: number;
  /** The model the call goes to, when it is not the turn's model (sticky or failed over). */
  readonly model?: string;
  /** Models that already failed before their first token for this request (failover). */
  readonly tried?: readonly string[];
  /** Present on a summary call: it compacts the history before `summary.upTo`. */
  readonly summary?: SummaryCall;
  /** True on a model call started right after a compaction: a context-length error then fails the turn. */
  readonly afterCompaction?: boolean;
}

/**
 * The cheaper step at a compaction point (docs/compaction.md): from this record on, requests no
 * longer re-send the bodies of large tool results before `upTo` (a short note stands in). No model
 * call; history is unchanged. It applies until the next summary compaction.
 */
export interface Elision {
  readonly upTo: number;
  /** The history's length when it was appended (reports before it counted the full bodies). */
  readonly historyLength: number;
  /** How many summary compactions existed when it was appended; it applies while that holds. */
  readonly afterCompactions: number;
}

/**
 * The conversation's sticky model (model-route.ts): the model that last produced tokens for it,
 * while the user asks for `requested`. Present only when it differs from `requested`.
 */
export interface ModelRoute {
  readonly requested: string;
  readonly model: string;
}

/** Why a compaction was started. */
export type CompactionTrigger = "threshold" | "overflow" | "request";

export interface SummaryCall {
  /** The compaction will cover `messages[0 .. upTo)`; the messages from `upTo` stay verbatim. */
  readonly upTo: number;
  readonly trigger: CompactionTrigger;
}

/**
 * An appended compaction record: requests after it send `[summary] + messages[upTo ..]`. The
 * history itself is never edited; records are only appended, and only once the summary call
 * completed (a failed one leaves none).
 */
export interface Compaction {
  /** The summary call that wrote it. */
  readonly callID: string;
  readonly upTo: number;
  readonly trigger: CompactionTrigger;
  readonly summary: string;
  /** When the summary call ended (its message's timestamp). */
  readonly at: number;
  /**
   * The history's length when the record was appended: usage reported by answers before it
   * counted the uncompacted request, so the estimate does not use it.
   */
  readonly historyLength: number;
}

/**
 * The tool calls of the assistant message being answered, in content order. Results are appended
 * strictly in this order; a result that arrives early waits in `early` (not in history).
 */
export interface WaitingClient {
  readonly calls: readonly ToolCall[];
  /** How many of `calls` already have their result appended to history. */
  readonly answered: number;
  /** Results received for calls after the next one to append, keyed by position in `calls`. */
  readonly early: readonly (ToolResultMessage | null)[];
  /** The operation id of every call, same order as `calls`. */
  readonly operationIDs: readonly string[];
}

/** Hashes of the history (see history-hash.ts), maintained incrementally on every append. */
export interface HistoryHashes {
  /** chain[n] over all messages; equals `messagesHash` of the next request. */
  readonly chainHash: string;
  /** sha256 of the canonical bytes of the last message ("" when there is none). */
  readonly lastMessageHash: string;
}

/** The last failure of a model call, kept for diagnosis. Never part of history. */
export interface Failure {
  readonly callID: string;
  readonly reason: "error" | "aborted" | "invalid_response";
  readonly message: string;
}

/** What the model has seen of each context key: sha256 of the text last appended. */
export interface SeenContext {
  readonly key: string;
  readonly hash: string;
}

/**
 * Where a turn began (rewind.ts): the client's ids for it and the history's length before its
 * first message, so a client that goes back to the end of an earlier turn can be given a branch
 * with exactly the history it shows.
 */
export interface TurnStartRecord {
  /** The turn's number (1-based, as `turnCount`). */
  readonly turn: number;
  /** `messages.length` before the turn appended anything. */
  readonly at: number;
  /** The client's id for the turn (Cursor: the run request's id); absent when it gave none. */
  readonly origin?: string;
  /** The client's id of the turn's user message (Cursor: the bubble id); absent when none. */
  readonly messageID?: string;
  /**
   * How the turn ended (turn-record.ts), set by the step that ends it. Only the record of the turn
   * that ended last keeps it (the state is written at every commit; only the conversation's last
   * turn is ever asked for its end: a client stream that comes back to it late). Absent while the
   * turn runs, and in states saved before outcomes were kept.
   */
  readonly end?: TurnEndRecord;
}

/**
 * A turn's outcome as its first client stream was told it (turn-record.ts), so that a stream that
 * comes back to the turn after it ended (a reconnect after a restart, a resume) ends the same way.
 */
export type TurnEndRecord =
  | { readonly type: "final" }
  /** `message`: the failed command's error text (the LLM layer's, free of secrets); `provider`: whose. */
  | { readonly type: "failed"; readonly message?: string; readonly provider?: string }
  | { readonly type: "canceled"; readonly reason: string };

/** The committed part of a conversation: what the store persists. */
export interface ConversationState {
  readonly conversationID: string;
  readonly status: Status;
  /** Number of turns started so far. */
  readonly turnCount: number;
  /** Id of the current (or last) turn; "" before the first. */
  readonly turnID: string;
  readonly settings: TurnSettings | null;
  /** The complete, append-only history. */
  readonly messages: readonly Message[];
  readonly hashes: HistoryHashes;
  /** Model calls started in the current turn. */
  readonly stepCount: number;
  /** The current (or last) model call. */
  readonly call: LLMCall | null;
  readonly waiting: WaitingClient | null;
  readonly context: readonly SeenContext[];
  /** Compaction records, oldest first; the last one shapes the requests. Absent in states saved before compactions existed. */
  readonly compactions?: readonly Compaction[];
  /** Elision records, oldest first (compaction.ts); absent when there were none. */
  readonly elisions?: readonly Elision[];
  readonly failure: Failure | null;
  /** inputID of the last input that changed this state ("" when none). */
  readonly lastCommitID: string;
  /** Absent while the conversation runs on the model it asks for (model-route.ts). */
  readonly route?: ModelRoute;
  /** Present on a subagent's conversation: the tool call it runs for (subagent.ts). */
  readonly parent?: ParentLink;
  /**
   * Where the last turns began, oldest first, at most `MAX_TURN_STARTS` (rewind.ts). Absent in
   * states saved before rewinds existed: a rewind into turns without a record is not done.
   */
  readonly turnStarts?: readonly TurnStartRecord[];
  /**
   * How many of the first messages this conversation's own turns did not produce: copied from
   * another conversation (a rewind's branch, a fork: rewind.ts `toBranchState`) or imported from
   * the client (fork.ts `toImportState`). History like any other; the dashboard counts them as
   * history, never as this conversation's model calls, tokens or cost (store/summaries.ts).
   * Absent: none (and in every state saved before copies were marked).
   */
  readonly copied?: number;
  /**
   * The conversation whose provider prompt-cache key this one's model calls use (llm.ts
   * `toPromptCacheKey`), when not its own: a copy (a rewind's branch, a fork) keeps its source's,
   * and a copy of a copy the first source's, so the copy's first request, which begins with the
   * source's history byte for byte, goes where the source's requests went (OpenAI routes by
   * `prompt_cache_key` and prefix). Absent: its own id — every state saved before this field, so
   * no existing conversation's key changes.
   */
  readonly cacheKeyFrom?: string;
}

/** A content block being streamed. */
export type PendingBlock =
  | { readonly type: "text"; readonly text: string; readonly open: boolean }
  | { readonly type: "thinking"; readonly thinking: string; readonly open: boolean }
  | {
      readonly type: "toolCall";
      readonly id: string;
      readonly name: string;
      /** The raw argument text, concatenated from the deltas. */
      readonly argumentsText: string;
      readonly open: boolean;
    };

/**
 * The response of the current model call while it streams. In memory only: it is never
 * committed, and on a restart it is dropped and the call retried (docs/design.md §4.3).
 */
export interface PendingResponse {
  readonly callID: string;
  /** Blocks by `contentIndex`; `null` where no block was opened. */
  readonly blocks: readonly (PendingBlock | null)[];
  readonly usage: Usage | null;
}

export interface RuntimeState {
  readonly committed: ConversationState;
  readonly pending: PendingResponse | null;
}

// ---------------------------------------------------------------------------------------------
// Commands and the transition
// ---------------------------------------------------------------------------------------------

/** Keep reading the current model stream. */
export interface ContinueLLMCommand {
  readonly type: "continue_llm";
}

/** Open a model stream with this exact request. */
export interface CallLLMCommand {
  readonly type: "call_llm";
  readonly callID: string;
  readonly model: string;
  /** The client's options for the model (thinking, effort, max mode), when it chose any. */
  readonly modelOptions?: ModelOptions;
  readonly request: RequestMessages;
  /** chain hash of `request.messages` (history-hash.ts). */
  readonly messagesHash: string;
  readonly messageCount: number;
  readonly lastMessageHash: string;
  /**
   * Present when a failure of this call before its first token would move the request to another
   * model (a candidate not yet tried): the runner then retries the model less before giving up.
   */
  readonly fallbackLeft?: true;
  /**
   * Present when this call repeats the previous one's request on another model because that
   * one failed before its first token: the model left and why (a `FailureKind` and the error).
   */
  readonly failover?: {
    readonly from: string;
    readonly failedCallID: string;
    readonly kind: FailureKind;
    readonly message: string;
  };
}

/** Ask the client to run one tool call. */
export interface CallClientCommand {
  readonly type: "call_client";
  readonly operationID: string;
  readonly toolCall: ToolCall;
}

/**
 * Ask the client to run several read-only tool calls at once (tool-batch.ts). Each call is its
 * own operation, saved, sent and answered on its own; results are appended in `calls` order.
 */
export interface CallClientsCommand {
  readonly type: "call_clients";
  /** Two or more calls, in the assistant message's content order. */
  readonly calls: readonly CallClientCommand[];
}

/** Nothing to do until the next external input. */
export interface WaitInputCommand {
  readonly type: "wait_input";
}

/** The turn ended with this assistant message. */
export interface FinalCommand {
  readonly type: "final";
  readonly message: AssistantMessage;
}

/** The turn failed; `message` describes the failure and is not part of history. */
export interface FailedCommand {
  readonly type: "failed";
  readonly message: AssistantMessage;
}

/** The turn was canceled. */
export interface CanceledCommand {
  readonly type: "canceled";
  readonly reason: string;
}

export type Command =
  | ContinueLLMCommand
  | CallLLMCommand
  | CallClientCommand
  | CallClientsCommand
  | WaitInputCommand
  | FinalCommand
  | FailedCommand
  | CanceledCommand;

/**
 * Why an input was not applied. A rejected input leaves the state exactly as it was; the
 * transition reports it instead of throwing.
 */
export type RejectionReason =
  /** start or user_message while a turn runs. */
  | "turn_in_progress"
  /** user_message before any turn set the settings. */
  | "no_settings"
  /** An event of a model call other than the one being read. */
  | "other_call"
  /** An event of a model call that already ended (e.g. a second `done`). */
  | "call_finished"
  /** An event out of the stream grammar (a delta before `start`, a second `start`, …). */
  | "out_of_order"
  /** A tool result while no tool call is outstanding. */
  | "not_waiting_for_tool"
  /** A tool result whose id matches no outstanding tool call. */
  | "unknown_tool_call"
  /** A second result for a tool call. */
  | "duplicate_tool_result"
  /** A cancel while no turn runs. */
  | "not_running"
  /** A compact request with nothing (new) to compact. */
  | "nothing_to_compact";

export interface Rejection {
  readonly reason: RejectionReason;
  readonly detail: string;
}

/**
 * The result of one step. `state.committed` is a new object exactly when the committed state
 * changed (the runner commits then); `emit` holds native events for the client, in order.
 */
export interface Transition {
  readonly state: RuntimeState;
  readonly emit: readonly ResponseEvent[];
  readonly command: Command;
  readonly rejected: Rejection | null;
}

export type {
  AssistantMessage,
  FailureKind,
  Message,
  RequestMessages,
  ResponseEvent,
  TextContent,
  ThinkingContent,
  Tool,
  ToolCall,
  ToolResultMessage,
  Usage,
  UserMessage,
};
