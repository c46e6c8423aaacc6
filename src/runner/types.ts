/**
 * The runner's vocabulary: what it needs from a client protocol session (`TurnOutput`) and what it
 * offers (`Runner`). The runner is protocol-neutral; the Cursor session implements `TurnOutput`.
 */
import type { LLM } from "../llm/index.ts";
import type { Usage } from "../llm/types.ts";
import type {
  CallClientCommand,
  CanceledCommand,
  CancelInput,
  CompactInput,
  ContinueReason,
  ConversationState,
  FailedCommand,
  FinalCommand,
  ImportedTurn,
  NoForkReason,
  ResponseEvent,
  RuntimeState,
  StartInput,
  ToolResultMessage,
  TurnSettings,
  UserMessageInput,
} from "../loop/index.ts";
import type { OperationAttempt, Store } from "../store/index.ts";

/** How a turn ended. */
export type TurnOutcome = FinalCommand | FailedCommand | CanceledCommand;

/**
 * The client side of the turn in progress. The runner calls it from inside the conversation's
 * serial queue, so calls arrive in order and never overlap (except `runTool`'s promise, which
 * settles later).
 *
 * Its members are methods shared by every instance: call them on the object, never pass them on
 * (bind or wrap in an arrow).
 */
export interface TurnOutput {
  /** Native events the loop emitted, in order; `state` is the state after them. */
  publish(events: readonly ResponseEvent[], state: RuntimeState): void;
  /**
   * Runs one tool call on the client (or on the server, for server-side tools) and resolves with
   * the result for the model. A tool failure is a result with `isError`; the promise rejects
   * only when the operation cannot complete at all (the client went away, the turn was
   * canceled), and the runner then leaves the operation to be re-run or canceled.
   *
   * `attempt.outcomeUnknown`: an earlier process (or attempt) sent this call and saved no result,
   * so it may have run. The output must then never run a tool with effects again; see
   * `OperationAttempt` and the README's crash guarantee.
   */
  runTool(
    command: CallClientCommand,
    state: ConversationState,
    attempt: OperationAttempt,
  ): Promise<ToolResultMessage>;
  /**
   * After a tool call completed: the settings the rest of the turn runs with, when the call
   * changed them (switch_mode); `undefined` when they stay. Optional.
   */
  settingsAfterTool?(settings: TurnSettings): TurnSettings | undefined;
  /**
   * The usage of a model call whose events are not published: a summary (compaction) call,
   * which shows nothing to the client but spends tokens of the turn. Optional.
   */
  countUsage?(usage: Usage): void;
  /**
   * The store's record of a tool call this output was asked to run is settled (its result saved,
   * or the run given up): a restart now reuses that result rather than asking the call again.
   * Called once per call the runner ran through `runOnce` for this output, outside the
   * conversation's queue, whether `runTool` ran or a saved record was reused, and also when
   * `runOnce` rejected (transport/agent-stream/tool-calls.ts releases its checkpoint hold).
   * Optional.
   */
  toolSaved?(operationID: string): void;
  /** The turn ended; nothing more is published for it. */
  end(outcome: TurnOutcome, state: ConversationState): void;
  /**
   * `Runner.resume` attached this output to the conversation's running turn, which it did not
   * start: `state` is the committed state, whose last turn record names the turn the way the
   * client does (loop/turn-record.ts `toTurnRecord`). Called before anything of the turn is
   * published or asked on this output. `from`: on a takeover, the output the turn is taken from
   * (released right after), whose own record of the turn this output may carry on. Optional.
   */
  resumed?(state: ConversationState, from?: TurnOutput): void;
  /**
   * Whether nobody reads this output now (its client went away and it waits for a reconnect, or
   * nobody ever came). A resume from another output takes over a turn whose output is detached
   * (loop/turn-ownership.ts `mayResume`). Optional: an output without it always has a reader.
   */
  isDetached?(): boolean;
  /**
   * Another output took the turn over (a resume): this one ends without ending the turn. Its
   * waits for tool calls fail (the runner asks those calls again on the new output, with the
   * store's exactly-once rules), nothing more is published to it, and it never cancels the turn
   * afterwards. Called from inside the conversation's queue; required of an output with
   * `isDetached`.
   */
  release?(reason: string): void;
}

/** Inputs from outside: the runner creates model events and tool results itself. */
export type ExternalInput = StartInput | UserMessageInput | CancelInput | CompactInput;

export interface ResumeOptions {
  /** Resume only this turn. */
  readonly turnID?: string;
  /**
   * A client stream id new to this conversation (not one picked up after a restart): bound to
   * the conversation and its current turn before anything is continued, with `clientState`, so
   * that after a restart the stream is picked up like one that started its turn
   * (`findStream`). It releases what the conversation's other streams saved (store/README.md).
   * When the turn moved on meanwhile (another process committed), nothing is attached: false.
   */
  readonly requestID?: string;
  /** Saved with the binding, as `SubmitOptions.clientState`. */
  readonly clientState?: Uint8Array;
}

export interface SubmitOptions {
  /** Persistently binds a client stream id (e.g. Cursor's request id) to the conversation. */
  readonly requestID?: string;
  /**
   * Saved with the binding (with the turn the input started), for picking the stream up again
   * after a restart: opaque bytes of the client protocol.
   */
  readonly clientState?: Uint8Array;
  /**
   * false: a `start` or `user_message` while a turn runs is refused by the loop
   * (`turn_in_progress`) instead of first canceling that turn (a subagent asked to continue while
   * it still runs). Default true.
   */
  readonly supersede?: boolean;
  /**
   * For a `start` or `compact` of a client's conversation: where the client stands, so that a
   * client that went back to an earlier turn gets a branch (loop/rewind.ts, route-start.ts) and a
   * client on a branch reaches it. Absent: the input goes to the conversation named.
   */
  readonly route?: RouteHint;
}

/** Where the client stands (loop/rewind.ts `RewindHint` without the turn's own id: `requestID`). */
export interface RouteHint {
  /**
   * The client's id of the last turn it shows (Cursor: its checkpoint's last turn's request id);
   * null: it shows none; "": it shows turns, but the last one's id could not be read.
   */
  readonly lastTurnOrigin: string | null;
  /** The client's id of the new user message ("" when none). */
  readonly messageID: string;
  /**
   * The client's turns in history form (Cursor: its checkpoint's turns), oldest first: read only
   * for a new conversation whose client's last turn no conversation here ran, to become its
   * history (loop/fork.ts, import). Absent: nothing is imported.
   */
  readonly imported?: () => readonly ImportedTurn[];
}

/** A rewind the runner applied: the branch's turns are the source's up to `afterTurn`. */
export interface RewindReport {
  /** The conversation the branch copies (the client's, or an earlier branch of it). */
  readonly from: string;
  /** The source's last turn when the branch was made. */
  readonly fromTurn: number;
  readonly afterTurn: number;
  /** Messages of the source the branch does not have. */
  readonly dropped: number;
  /** The source had a turn running (it is canceled: the client left it). */
  readonly running: boolean;
}

/** A fork the runner applied: the new conversation's history is the source's up to `afterTurn`. */
export interface ForkReport {
  /** The conversation copied (the one that ran the client's last turn). */
  readonly from: string;
  readonly afterTurn: number;
  /** Messages copied. */
  readonly messages: number;
}

/** Where a routed input went. */
export interface Routed {
  readonly conversationID: string;
  /** Why it was no rewind. */
  readonly reason?: ContinueReason;
  readonly rewind?: RewindReport;
  /** The conversation was new and began with a copy of another's history (loop/fork.ts). */
  readonly fork?: ForkReport;
  /** The conversation was new and began with the client's own turns (no conversation here ran them). */
  readonly imported?: { readonly turns: number; readonly messages: number };
  /** The conversation was new, the client showed turns, and nothing was copied: why. */
  readonly noFork?: NoForkReason;
}

export type SubmitResult =
  /**
   * Applied (possibly rejected by the loop, see `rejected`; `other_stream` when a cancel came from
   * a stream that does not carry the turn).
   */
  | ({ readonly type: "applied"; readonly rejected: string | null } & RoutedResult)
  /** This input was applied before; nothing was done again. */
  | ({ readonly type: "duplicate" } & RoutedResult);

/** With `SubmitOptions.route`: where the input went, and why. */
interface RoutedResult {
  readonly routed?: Routed;
}

export interface Runner {
  /**
   * Applies an external input to the conversation and everything it leads to, with `output` as
   * the client side of the turn. A `start` or `user_message` while a turn runs first cancels that
   * turn ("superseded by a new message"). Resolves once the input is committed and its command
   * dispatched (not when the turn ends).
   */
  submit(
    conversationID: string,
    input: ExternalInput,
    output: TurnOutput,
    options?: SubmitOptions,
  ): Promise<SubmitResult>;
  /**
   * Attaches `output` to the conversation and continues what it waits for: a model call is
   * repeated with its saved request, a tool call is asked for again. Used when a client
   * reconnects, e.g. after a restart. Resolves false, attaching nothing, when nothing waits,
   * when `turnID` is given and is not the current turn, or when another output that has a reader
   * carries the turn. Another output nobody reads (`TurnOutput.isDetached`) is taken over: it is
   * released (`TurnOutput.release`), and the tool calls it was asked for are asked again on
   * `output` (an operation already sent is run with `outcomeUnknown`, as after a restart).
   */
  resume(conversationID: string, output: TurnOutput, options?: ResumeOptions): Promise<boolean>;
  /**
   * The conversation and turn a client stream id was bound to when it started a turn (see
   * `SubmitOptions`), with the client state saved then; null when unknown.
   */
  findStream(
    requestID: string,
  ): Promise<{ conversationID: string; turnID: string; clientState: Uint8Array | null } | null>;
  /**
   * The conversation a client's request about its conversation `conversationID` concerns: a
   * branch of it when the client is on one (loop/rewind.ts), else `conversationID`. Starts and
   * makes nothing (a resume asks where the turn runs).
   */
  follow(conversationID: string, hint: RouteHint, requestID: string): Promise<string>;
  /** Detaches `output` if it is still the conversation's output. */
  detach(conversationID: string, output: TurnOutput): void;
  /**
   * The conversation's current state (in memory, or loaded), or null when unknown. With
   * `liveOnly`, only a conversation held in memory is looked at (null otherwise, without a
   * store read): what the dashboard's `/pending` needs, polled every second.
   */
  inspect(
    conversationID: string,
    options?: { readonly liveOnly?: boolean },
  ): Promise<RuntimeState | null>;
  /**
   * Stops every model stream without committing anything for them (their calls stay unfinished
   * and are retried on the next start), and waits for queued work to settle.
   */
  shutdown(): Promise<void>;
}

/** A failover (loop/model-route.ts): the call that failed and the model its request moves to. */
export interface ModelSwitch {
  readonly conversationID: string;
  readonly turnID: string;
  readonly callID: string;
  readonly failedCallID: string;
  readonly from: string;
  readonly to: string;
  readonly kind: string;
  readonly reason: string;
}

export interface RunnerOptions {
  readonly store: Store;
  readonly llm: Pick<LLM, "stream">;
  /** Epoch milliseconds; for the times on inputs the runner creates. */
  readonly now?: () => number;
  /** Receives what the runner could not hand to anyone (a failed commit, a lost stream). */
  readonly onError?: (error: unknown, context: { conversationID: string; what: string }) => void;
  /**
   * A model call failed before its first token and its request moves to a fallback model
   * (loop/model-route.ts); for the log. The reason is the failed call's error message, which the
   * LLM layer has already cleared of secrets.
   */
  readonly onModelSwitch?: (info: ModelSwitch) => void;
  /**
   * The most a step waits for the request of the call it plans before it is committed without
   * it (model-call.ts `PREPARE_WAIT_MS`, the default). Either outcome is correct; tests that check
   * one of the two paths set it long, so that the path does not depend on the machine's speed.
   */
  readonly prepareWaitMs?: number;
  /**
   * Whether the request being handled may see `conversationID`'s history (team mode: its root
   * conversation is the requesting user's, or the request is the admin's; user-access.ts
   * `createReadCheck`). Asked before a fork copies another conversation's history (loop/fork.ts),
   * inside the request's async context. Default: yes (a server without users).
   */
  readonly mayCopy?: (conversationID: string) => Promise<boolean>;
}
