/**
 * One Cursor agent stream: one request id, one turn. It ties the three halves together:
 *
 * - client → server: appends (BidiAppend, or the messages of an HTTP/2 `Run`) are applied in
 *   `append_seqno` order (append-sequencer.ts) and translated by the dialect into runner calls or
 *   tool-call progress;
 * - runner → client: the stream is the runner's `TurnOutput` for the turn; everything it sends
 *   goes through one ordered outbound backlog (outbound-stream.ts), which RunSSE subscribers read;
 * - the dialect's per-turn protocol state (`TurnState`) lives here, as one plain value replaced on
 *   every step.
 *
 * A RunSSE that drops does not cancel the turn: the stream waits `reconnectGraceMs` for a new
 * subscriber before it cancels (docs/design.md §10).
 */
import { randomInt } from "node:crypto";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import type { LLM } from "../llm/index.ts";
import type { ConversationState, ToolResultMessage } from "../loop/index.ts";
import type { Runner, TurnOutput } from "../runner/types.ts";
import { createAppendSequencer, SequenceGapError } from "./append-sequencer.ts";
import {
  type AgentRunRequest,
  AgentRunRequestSchema,
} from "./cursor/gen/agent/v1/run_request_pb.js";
import {
  type AgentClientMessage,
  type AgentServerMessage,
  type ClientEvent,
  continueToolCall,
  expireToolCall,
  finishServerWork,
  fromClientMessage,
  fromModeSettings,
  fromResponseEvent,
  fromRunRequest,
  type Mode,
  redactSecrets,
  type ServerWork,
  SUMMARIZE_NOT_SUPPORTED,
  startToolCall,
  type TurnState,
  toAgentMode,
  toCheckpointMessage,
  toConnectError,
  toForceBackground,
  toHeartbeatMessage,
  toModelSelection,
  toModeSettings,
  toNotSupportedError,
  toProtocolError,
  toResumedTurnState,
  toServerNotice,
  toTurnEnd,
  toTurnEnded,
} from "./cursor/index.ts";
import { toImageNotice } from "./image-notice.ts";
import type { Log } from "./log.ts";
import { createOutboundStream, type OutboundStream } from "./outbound-stream.ts";
import type { UserCommands } from "./user-commands.ts";
import { runServerWork, toWebOffer, type WebTools } from "./web-work.ts";

export interface AgentStreamOptions {
  readonly heartbeatMs: number;
  /** How long a dropped RunSSE may take to come back before the turn is canceled. */
  readonly reconnectGraceMs: number;
  /** How long an early append waits for the ones before it. */
  readonly appendGapTimeoutMs: number;
  /** How far ahead of the next expected seqno an append may be. */
  readonly maxAppendsAhead: number;
  /**
   * After a restart, how long a tool call with effects whose outcome is unknown waits for the
   * client's late result before the model is told the outcome is unknown (it is never re-run).
   */
  readonly lateResultGraceMs: number;
}

export interface AgentStreamDeps {
  readonly runner: Runner;
  readonly models: Pick<LLM, "listModels" | "findModel">;
  readonly now: () => number;
  readonly log: Log;
  readonly options: AgentStreamOptions;
  /** The web tools (web_search, web_fetch) the server runs itself; none when absent. */
  readonly web?: WebTools;
  /** Called once the stream has ended and no subscriber is attached (for cleanup). */
  readonly onSettled?: (stream: AgentStream) => void;
  /** Shell commands users ran themselves, handed to the conversation's next turn. */
  readonly userCommands?: UserCommands;
}

export interface AgentStream {
  readonly requestID: string;
  readonly outbound: OutboundStream<AgentServerMessage>;
  readonly conversationID: string | null;
  /** Applies one client message that arrived with `seqno`; rejects with a `ConnectError`. */
  append(seqno: number, message: AgentClientMessage): Promise<void>;
  /** The server messages, from where the previous subscriber left off; see outbound-stream.ts. */
  subscribe(signal: AbortSignal): AsyncGenerator<AgentServerMessage, void, undefined>;
  /**
   * Picks up the turn of a stream opened before a restart: rebuilds the protocol state from the
   * saved run request and lets the runner continue what the conversation waits for, if that is
   * still this stream's turn (`turnID`); otherwise the stream just ends.
   */
  restore(conversationID: string, turnID: string, runRequest: Uint8Array): Promise<void>;
  /**
   * The client will not come back for this stream (it reset an HTTP/2 `Run`, or a request of the
   * stream failed for good): the turn is canceled and the stream ends with `error`.
   */
  abandon(error: ConnectError): Promise<void>;
  /** Ends the stream now (server shutdown): the client sees a `canceled` end. */
  close(reason: string): void;
}

/** Client events that only make sense on a stream that carries a turn. */
const NEEDS_TURN: ReadonlySet<ClientEvent["type"]> = new Set([
  "cancel",
  "exec_result",
  "exec_stream_close",
  "exec_throw",
  "exec_heartbeat",
  "interaction_response",
]);

export function createAgentStream(requestID: string, deps: AgentStreamDeps): AgentStream {
  const { runner, log, now, options } = deps;
  const outbound = createOutboundStream<AgentServerMessage>({
    heartbeatMs: options.heartbeatMs,
    heartbeat: toHeartbeatMessage,
  });
  const sequencer = createAppendSequencer({
    gapTimeoutMs: options.appendGapTimeoutMs,
    maxAhead: options.maxAppendsAhead,
  });
  let conversationID: string | null = null;
  let turn: TurnState | null = null;
  let tool: {
    readonly operationID: string;
    resolve(result: ToolResultMessage): void;
    reject(error: Error): void;
  } | null = null;
  /** The web tool work running for the open tool call, if any. */
  let work: AbortController | null = null;
  let graceTimer: NodeJS.Timeout | null = null;
  /** Ends the wait for a late result of a recovered tool call (see `runTool`). */
  let lateTimer: NodeJS.Timeout | null = null;
  let startedAt: number | null = null;
  /** The mode when the running tool call started: a switch_mode call may change it. */
  let modeAtToolStart: Mode | null = null;
  const loggedUnsupported = new Set<string>();

  const send = (messages: readonly AgentServerMessage[]): void => {
    if (outbound.ended) return;
    for (const message of messages) outbound.push(message);
  };

  const settle = (): void => {
    if (outbound.ended && !outbound.subscribed) deps.onSettled?.(stream);
  };

  const endStream = (error?: ConnectError): void => {
    work?.abort();
    work = null;
    if (outbound.ended) return;
    outbound.end(error);
    sequencer.close("the stream has ended");
    if (graceTimer !== null) clearTimeout(graceTimer);
    graceTimer = null;
    if (lateTimer !== null) clearTimeout(lateTimer);
    lateTimer = null;
    settle();
  };

  const output: TurnOutput = {
    publish(events, state) {
      if (turn === null) return;
      const callID = state.committed.call?.callID ?? "";
      for (const event of events) {
        const next = fromResponseEvent(turn, event, { at: now(), callID });
        turn = next.state;
        send(next.messages);
      }
    },
    runTool(command, state, attempt) {
      if (turn === null) return Promise.reject(new Error("the stream has no turn"));
      // After a restart the turn state comes from the run request; a mode switched to since is
      // in the committed settings.
      const committed = state.settings === null ? null : fromModeSettings(state.settings);
      if (committed !== null && committed !== turn.mode) {
        turn = { ...turn, mode: committed, agentMode: toAgentMode(committed) };
      }
      const context = { at: now(), inputID: `result:${command.operationID}` };
      const step = startToolCall(turn, command, context, { recovered: attempt.outcomeUnknown });
      if (step.ignored !== null) return Promise.reject(new Error(step.ignored));
      modeAtToolStart = turn.mode;
      turn = step.state;
      send(step.messages);
      if (step.input !== null) return Promise.resolve(step.input.message);
      if (attempt.outcomeUnknown) {
        const waiting = turn.open?.awaiting.type === "earlier";
        log.warn(
          {
            request: requestID,
            conversation: conversationID,
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
        tool = { operationID: command.operationID, resolve, reject };
        if (step.work !== null) startWork(step.work);
      });
    },
    settingsAfterTool(settings) {
      const before = modeAtToolStart;
      modeAtToolStart = null;
      if (turn === null || before === null || turn.mode === before) return undefined;
      return toModeSettings(settings, turn.mode, turn.mcpTools, turn.web);
    },
    end(outcome, state: ConversationState) {
      if (turn !== null) {
        const ended = toTurnEnd(turn, outcome, { at: now() });
        turn = ended.state;
        send(ended.messages);
        endStream(ended.error ?? undefined);
      } else {
        endStream();
      }
      tool?.reject(new Error(`the turn ended (${outcome.type})`));
      tool = null;
      const usage = turn?.usage;
      log.info(
        {
          conversation: state.conversationID,
          request: requestID,
          model: state.settings?.model,
          outcome: outcome.type,
          inputTokens: usage?.input ?? 0,
          outputTokens: usage?.output ?? 0,
          cacheReadTokens: usage?.cacheRead ?? 0,
          cacheWriteTokens: usage?.cacheWrite ?? 0,
          durationMs: startedAt === null ? undefined : now() - startedAt,
          ...(outcome.type === "failed"
            ? { error: redactSecrets(outcome.message.errorMessage ?? "unknown") }
            : {}),
        },
        "turn ended",
      );
    },
  };

  /** The model the client asked for, or the first configured one. */
  const resolveModel = (request: AgentRunRequest) => {
    const asked = toModelSelection(request)?.model ?? "";
    const exact = deps.models.findModel(asked) ?? deps.models.findModel(asked.split(":")[0] ?? "");
    const chosen = exact ?? deps.models.listModels()[0];
    if (exact === undefined && chosen !== undefined) {
      log.warn({ asked, using: chosen.name }, "unknown model requested; using the default model");
    }
    return chosen;
  };

  const startTurn = async (
    seqno: number,
    event: Extract<ClientEvent, { type: "run" }>,
  ): Promise<void> => {
    if (turn !== null) {
      throw toProtocolError({ type: "turn_already_started" });
    }
    const model = resolveModel(event.request);
    if (model === undefined) throw toProtocolError({ type: "no_model" });
    const started = fromRunRequest(event.request, event.action, {
      at: now(),
      inputID: `${requestID}:${seqno}`,
      requestID,
      contextWindow: model.contextWindow,
      web: toWebOffer(deps.web),
    });
    if (!started.ok) {
      // The stream ends with the error too, so a client reading RunSSE is not left waiting.
      const error = toConnectError({ kind: "bad_input", detail: started.error.message });
      endStream(error);
      throw error;
    }
    const { input, state } = started.value;
    turn = state;
    const imageNotice = toImageNotice(model, input.userMessage);
    if (imageNotice !== null) send([toServerNotice(imageNotice)]);
    startedAt = now();
    conversationID = state.conversationID;
    log.info(
      { conversation: conversationID, request: requestID, model: model.name, mode: state.mode },
      "turn started",
    );
    if (started.value.unusedContext.length > 0) {
      log.debug(
        { request: requestID, fields: started.value.unusedContext },
        "attached context the model is not given",
      );
    }
    let result: Awaited<ReturnType<Runner["submit"]>>;
    try {
      const commands = deps.userCommands?.take(state.conversationID) ?? [];
      result = await runner.submit(
        state.conversationID,
        {
          ...input,
          context: [...input.context, ...commands],
          settings: {
            ...input.settings,
            model: model.name,
            ...(model.fallbacks.length === 0 ? {} : { fallbacks: model.fallbacks }),
          },
        },
        output,
        {
          requestID,
          clientState: Buffer.from(toBinary(AgentRunRequestSchema, event.request)).toString(
            "base64",
          ),
        },
      );
    } catch (error) {
      endStream(toConnectError({ kind: "internal", detail: describe(error) }));
      throw error;
    }
    // A turn nobody reads is canceled like one whose reader left.
    if (!outbound.subscribed) startGrace();
    if (result.type === "duplicate") {
      // A replay of a run request already applied (a client retry): nothing new starts.
      log.info({ conversation: conversationID, request: requestID }, "run request seen before");
      endStream();
    } else if (result.rejected !== null) {
      endStream(
        toConnectError({
          kind: "bad_input",
          detail: `the turn was not started: ${result.rejected}`,
        }),
      );
    }
  };

  const resumeTurn = async (
    request: AgentRunRequest | null,
    firstID = 1,
    turnID?: string,
  ): Promise<void> => {
    if (turn === null && request !== null) {
      const model = resolveModel(request);
      const resumed = toResumedTurnState(request, {
        at: now(),
        inputID: `${requestID}:resume`,
        requestID,
        contextWindow: model?.contextWindow ?? 0,
        web: toWebOffer(deps.web),
      });
      if (!resumed.ok) throw toConnectError({ kind: "bad_input", detail: resumed.error.message });
      turn = { ...resumed.value, nextID: firstID };
      conversationID = resumed.value.conversationID;
    }
    if (conversationID === null || turn === null) return;
    const waiting = await runner.resume(
      conversationID,
      output,
      turnID === undefined ? {} : { turnID },
    );
    if (!waiting) {
      // Nothing to continue: the turn already ended. Close the stream the way a turn ends.
      send([toCheckpointMessage(turn), toTurnEnded(turn)]);
      endStream();
    }
  };

  const applyToolEvent = (seqno: number, event: ClientEvent): void => {
    if (turn === null) return;
    const step = continueToolCall(turn, event, { at: now(), inputID: `${requestID}:${seqno}` });
    if (step.ignored !== null) {
      log.debug(
        { request: requestID, event: event.type, why: step.ignored },
        "client event ignored",
      );
      return;
    }
    turn = step.state;
    send(step.messages);
    if (step.work !== null) startWork(step.work);
    // A late reply arrived for a recovered call: its outcome is known now.
    clearLateTimer();
    finishTool(step.input?.message ?? null);
  };

  const finishTool = (message: ToolResultMessage | null): void => {
    if (message !== null && tool !== null) {
      const finished = tool;
      tool = null;
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
      if (controller.signal.aborted || turn === null || tool === null) return;
      const operationID = tool.operationID;
      const step = finishServerWork(turn, item.id, result, {
        at: now(),
        inputID: `result:${operationID}`,
      });
      if (step.ignored !== null) {
        log.debug({ request: requestID, why: step.ignored }, "web tool result ignored");
        return;
      }
      turn = step.state;
      send(step.messages);
      if (step.work !== null) startWork(step.work);
      finishTool(step.input?.message ?? null);
    });
  };

  const clearLateTimer = (): void => {
    if (lateTimer !== null) clearTimeout(lateTimer);
    lateTimer = null;
  };

  const startLateTimer = (operationID: string): void => {
    clearLateTimer();
    lateTimer = setTimeout(() => {
      lateTimer = null;
      if (turn === null || tool?.operationID !== operationID) return;
      const step = expireToolCall(turn, { at: now(), inputID: `result:${operationID}` });
      if (step.ignored !== null) return;
      turn = step.state;
      send(step.messages);
      log.warn(
        { request: requestID, conversation: conversationID, operation: operationID },
        "no late result arrived: the model is told the tool's outcome is unknown",
      );
      finishTool(step.input?.message ?? null);
    }, options.lateResultGraceMs);
    lateTimer.unref?.();
  };

  /**
   * An action this server does not serve must not leave the client waiting: a stream that
   * carries no turn ends at once with an error the client shows; a running turn goes on.
   */
  const refuseAction = (action: string): void => {
    const running = turn !== null && !outbound.ended;
    log.warn(
      { request: requestID, conversation: conversationID, action },
      running
        ? "conversation action not served; the running turn goes on"
        : "conversation action not served; ending the stream with an error",
    );
    if (running) return;
    endStream(
      toConnectError({
        kind: "bad_input",
        detail: `${action} is not supported by cursor-byok yet`,
      }),
    );
  };

  const applyClientMessage = async (seqno: number, message: AgentClientMessage): Promise<void> => {
    const event = fromClientMessage(message);
    if (turn === null && NEEDS_TURN.has(event.type)) {
      throw toProtocolError({ type: "no_turn", requestID, event: event.type });
    }
    switch (event.type) {
      case "run":
        return startTurn(seqno, event);
      case "resume":
        return resumeTurn(event.request);
      case "cancel":
        if (conversationID === null) return;
        await runner.submit(
          conversationID,
          {
            type: "cancel",
            inputID: `${requestID}:${seqno}`,
            at: now(),
            reason: event.reason || "canceled",
          },
          output,
        );
        return;
      case "exec_result":
      case "exec_stream_close":
      case "exec_throw":
      case "exec_heartbeat":
      case "interaction_response":
        applyToolEvent(seqno, event);
        return;
      case "summarize":
        refuseSummarize();
        return;
      case "shell_command":
        recordUserCommand(event);
        return;
      case "background_shell":
        forceBackground(event.toolCallID);
        return;
      case "prewarm":
      case "heartbeat":
      case "kv_result":
        return;
      case "unserved_action":
        return refuseAction(event.action);
      case "unsupported":
        if (!loggedUnsupported.has(event.what)) {
          loggedUnsupported.add(event.what);
          log.info(
            { request: requestID, what: event.what },
            "client message not supported; ignored",
          );
        }
        return;
    }
  };

  const stream: AgentStream = {
    requestID,
    outbound,
    get conversationID() {
      return conversationID;
    },
    append(seqno, message) {
      return sequencer.run(
        seqno,
        () => applyClientMessage(seqno, message),
        (error) => {
          const detail = error instanceof SequenceGapError ? error.message : String(error);
          return toProtocolError({ type: "append_out_of_order", detail });
        },
      );
    },
    async *subscribe(signal) {
      if (graceTimer !== null) clearTimeout(graceTimer);
      graceTimer = null;
      try {
        yield* outbound.subscribe(signal);
      } finally {
        if (!outbound.ended && !outbound.subscribed) startGrace();
        settle();
      }
    },
    async restore(conversation, turnID, runRequestBytes) {
      let request: AgentRunRequest;
      try {
        request = fromBinary(AgentRunRequestSchema, runRequestBytes);
      } catch {
        throw toProtocolError({ type: "saved_request_unreadable" });
      }
      conversationID = conversation;
      // The client's earlier appends and exec ids belonged to the previous process: take its next
      // seqno as it comes, and number new execs far from the ones it may still remember.
      sequencer.resync();
      await resumeTurn(request, randomInt(2 ** 30, 2 ** 31), turnID);
      if (!outbound.subscribed) startGrace();
    },
    async abandon(error) {
      tool?.reject(new Error(error.message));
      tool = null;
      if (conversationID !== null && !outbound.ended) {
        await cancelTurn("the client closed the stream").catch(() => {});
      }
      endStream(error);
    },
    close(reason) {
      tool?.reject(new Error(reason));
      tool = null;
      endStream(toProtocolError({ type: "stream_closed", reason }));
    },
  };

  /**
   * `/summarize` needs compaction, which is not built: a stream opened for it ends at once with an
   * error the client shows. Sent on a stream whose turn is running, it leaves that turn alone.
   */
  function refuseSummarize(): void {
    log.info({ request: requestID, conversation: conversationID }, "summarize is not supported");
    if (turn === null) endStream(toNotSupportedError(SUMMARIZE_NOT_SUPPORTED));
  }

  /** "Move to background" on the running command of a tool call (cursor/background-shell.ts). */
  function forceBackground(toolCallID: string): void {
    if (turn === null) return;
    const step = toForceBackground(turn, toolCallID);
    if (step.type === "ignored") {
      log.debug({ request: requestID, why: step.why }, "background_shell action ignored");
      return;
    }
    turn = step.state;
    send(step.messages);
  }

  /**
   * A command the user ran themselves becomes context for the conversation's next turn. Sent as a
   * run request, it opens no turn: its stream ends at once; on a stream carrying a turn, that
   * turn goes on.
   */
  function recordUserCommand(event: Extract<ClientEvent, { type: "shell_command" }>): void {
    const conversation = event.request?.conversationId ?? conversationID;
    if (conversation !== null && conversation !== "" && event.command.trim() !== "") {
      deps.userCommands?.record(conversation, { command: event.command, execID: event.execID });
      log.info(
        { request: requestID, conversation },
        "user shell command recorded for the next turn",
      );
    } else {
      log.info(
        { request: requestID },
        "user shell command without a conversation or command; ignored",
      );
    }
    if (turn === null) endStream();
  }

  /** Cancels this stream's turn (the runner ignores it if the stream no longer carries it). */
  function cancelTurn(reason: string): Promise<unknown> {
    if (conversationID === null) return Promise.resolve();
    return runner.submit(
      conversationID,
      { type: "cancel", inputID: `${requestID}:gone`, at: now(), reason },
      output,
    );
  }

  function startGrace(): void {
    if (graceTimer !== null || outbound.ended) return;
    graceTimer = setTimeout(() => {
      graceTimer = null;
      if (outbound.subscribed || outbound.ended) return;
      log.info(
        { request: requestID, conversation: conversationID },
        "client gone; canceling the turn",
      );
      if (conversationID === null) {
        endStream(toProtocolError({ type: "client_went_away" }));
        return;
      }
      void cancelTurn("the client went away")
        .catch((error: unknown) =>
          log.error({ request: requestID, error: describe(error) }, "cancel failed"),
        )
        .finally(() => endStream(toProtocolError({ type: "client_went_away" })));
    }, options.reconnectGraceMs);
    graceTimer.unref?.();
  }

  return stream;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
