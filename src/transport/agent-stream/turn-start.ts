/**
 * How a stream comes to carry a turn: a run request starts one (`start`), a resume request or a
 * restart picks up the one the conversation is in (`resume`). Both build the dialect's turn
 * state first and then hand the turn to the runner with this stream's `TurnOutput`.
 */
import { errorMessage } from "../../errors/error-message.ts";
import { withMethods } from "../../llm/index.ts";
import { toEndedTurn } from "../../loop/index.ts";
import type { Routed, Runner, TurnOutput } from "../../runner/types.ts";
import { toCompactionSettings } from "../compaction-settings.ts";
import type { AgentRunRequest } from "../cursor/gen/agent/v1/run_request_pb.js";
import {
  type ClientEvent,
  fromRunRequest,
  type ImportedHistory,
  toCheckpointMessage,
  toChosenModel,
  toConnectError,
  toEndedTurnError,
  toImportedHistory,
  toLastClientTurn,
  toLastTurnOrigin,
  toModelSelection,
  toProtocolError,
  toResumedTurnState,
  toServerNotice,
  toTurnEnded,
} from "../cursor/index.ts";
import { toImageNotice } from "../image-notice.ts";
import { toWebOffer } from "../web-work.ts";
import { carryTurn } from "./carry-turn.ts";
import type { ReconnectGrace } from "./reconnect-grace.ts";
import { toSavedRunRequest } from "./saved-run-request.ts";
import { type StreamState, send } from "./stream-state.ts";
import { withBatches } from "./tool-calls.ts";
import type { AgentStreamDeps } from "./types.ts";

/**
 * Its members are methods shared by every instance: call them on the object, never pass them on
 * (bind or wrap in an arrow).
 */
export interface TurnStart {
  /** A run request (append `seqno`): starts the turn; refused if the stream already has one. */
  start(seqno: number, event: Extract<ClientEvent, { type: "run" }>): Promise<void>;
  /**
   * Continues the conversation's turn on this stream. With a `request` and no turn yet, the turn
   * state is rebuilt from it. A client's resume request (no `restored`) binds this stream to the
   * conversation and its running turn, with the request saved, once the runner accepts it, so a
   * restart does not lose it. A stream picked up after a restart (`restored`, bound already)
   * numbers execs from `firstID` and continues only `turnID`. When there is nothing to continue,
   * the stream ends the way the conversation's last turn ended (or normally while another stream
   * carries it).
   */
  resume(
    request: AgentRunRequest | null,
    restored?: { readonly firstID: number; readonly turnID: string },
  ): Promise<void>;
  /**
   * The `summarize` action (`/summarize`) on a run request: a turn that compacts the conversation
   * (docs/compaction.md). Ends with an error when there is nothing to compact.
   */
  compact(seqno: number, request: AgentRunRequest): Promise<void>;
}

/**
 * One record per stream (issue #19, heap per open stream: this was a factory of ten closures);
 * its methods are shared by every stream (src/llm/with-methods.ts): call them on the object.
 */
export function createTurnStart(
  stream: StreamState,
  output: TurnOutput,
  grace: Pick<ReconnectGrace, "start">,
): TurnStart {
  const record: Starter = { stream, output, grace, unresolvedLogged: false };
  return withMethods(record, turnStartMethods);
}

/** A stream's turn start: what the methods and helpers below read. */
interface Starter {
  readonly stream: StreamState;
  readonly output: TurnOutput;
  /**
   * The stream's reconnect grace, kept whole and called as `this.grace.start()`: its `start` is
   * never handed on detached, so it stays right if the grace takes shared methods too (a detached
   * method would run with this record as `this` and put its timer where `clear` never looks).
   */
  readonly grace: Pick<ReconnectGrace, "start">;
  /** Whether an unresolved last-turn blob was logged (once per stream). */
  unresolvedLogged: boolean;
}

/** The methods, shared by every stream's record. */
const turnStartMethods: TurnStart & ThisType<Starter> = {
  async start(seqno, event) {
    const { stream, output } = this;
    const { requestID, deps, outbound } = stream;
    const { runner, log, now } = deps;
    if (stream.turn !== null) {
      throw toProtocolError({ type: "turn_already_started" });
    }
    const { model, options } = chooseModel(deps, event.request);
    if (model === undefined) throw toProtocolError({ type: "no_model" });
    const started = fromRunRequest(event.request, event.action, {
      at: now(),
      inputID: `${requestID}:${seqno}`,
      requestID,
      // Max mode's larger window, where the model has one, for the client's context indicator.
      contextWindow: options.maxMode === true ? model.maxModeContextWindow : model.contextWindow,
      web: toWebOffer(deps.web),
    });
    if (!started.ok) {
      // The stream ends with the error too, so a client reading RunSSE is not left waiting.
      const error = toConnectError({ kind: "bad_input", detail: started.error.message });
      stream.end(error);
      throw error;
    }
    const { input, state } = started.value;
    stream.turn = state;
    const imageNotice = toImageNotice(model, input.userMessage);
    if (imageNotice !== null) send(stream, [toServerNotice(imageNotice)]);
    stream.startedAt = now();
    stream.conversationID = state.conversationID;
    log.info(
      {
        conversation: stream.conversationID,
        request: requestID,
        model: model.name,
        mode: state.mode,
        options,
      },
      "turn started",
    );
    if (started.value.unusedContext.length > 0) {
      log.debug(
        { request: requestID, fields: started.value.unusedContext },
        "attached context the model is not given",
      );
    }
    let result: Awaited<ReturnType<Runner["submit"]>>;
    // The checkpoint's turns as history, read only when the runner asks (loop/fork.ts).
    let imported: ImportedHistory | null = null;
    try {
      const found = lastTurnOrigin(this, event.request);
      const lastTurn = found instanceof Promise ? await found : found;
      // The stream ended during the look-up (its client left: `abandon` sent a cancel the
      // runner could not apply yet, and the grace does not start on an ended stream): nothing
      // reads the turn and no reply is owed, so it is not started at all.
      if (outbound.ended) return notStarted(stream);
      const commands = deps.userCommands?.take(state.conversationID) ?? [];
      result = await runner.submit(
        state.conversationID,
        {
          ...input,
          context: [...input.context, ...commands],
          settings: withBatches(deps.options, {
            ...input.settings,
            model: model.name,
            ...(model.fallbacks.length === 0 ? {} : { fallbacks: model.fallbacks }),
            compaction: toCompactionSettings(model, (name) => deps.models.findModel(name)),
            ...(Object.keys(options).length === 0 ? {} : { modelOptions: options }),
          }),
        },
        output,
        {
          requestID,
          clientState: toSavedRunRequest(event.request),
          route: {
            lastTurnOrigin: lastTurn,
            messageID: started.value.messageID,
            imported: () => {
              imported = toImportedHistory(
                event.request.conversationState,
                event.request.preFetchedBlobs,
                now(),
              );
              return imported.turns;
            },
          },
        },
      );
    } catch (error) {
      stream.end(toConnectError({ kind: "internal", detail: errorMessage(error) }));
      throw error;
    }
    following(stream, result.routed, imported);
    // A turn nobody reads is canceled like one whose reader left.
    if (!outbound.subscribed) this.grace.start();
    if (result.type === "duplicate") {
      // A replay of a run request already applied (a client retry): nothing new starts.
      log.info(
        { conversation: stream.conversationID, request: requestID },
        "run request seen before",
      );
      stream.end();
    } else if (result.rejected !== null) {
      stream.end(
        toConnectError({
          kind: "bad_input",
          detail: `the turn was not started: ${result.rejected}`,
        }),
      );
    }
  },

  async compact(seqno, request) {
    const { stream, output } = this;
    const { requestID, deps, outbound } = stream;
    const { runner, log, now } = deps;
    if (stream.turn !== null) throw toProtocolError({ type: "turn_already_started" });
    const model = resolveModel(deps, request);
    const resumed = toResumedTurnState(request, {
      at: now(),
      inputID: `${requestID}:${seqno}`,
      requestID,
      contextWindow: model?.contextWindow ?? 0,
      web: toWebOffer(deps.web),
    });
    if (!resumed.ok) throw toConnectError({ kind: "bad_input", detail: resumed.error.message });
    stream.turn = resumed.value;
    stream.startedAt = now();
    stream.conversationID = resumed.value.conversationID;
    log.info({ conversation: stream.conversationID, request: requestID }, "summarize requested");
    const found = lastTurnOrigin(this, request);
    const lastTurn = found instanceof Promise ? await found : found;
    if (outbound.ended) return notStarted(stream);
    const result = await runner.submit(
      stream.conversationID,
      // The summarize is a turn of its own, with this request's id in the client's checkpoint.
      { type: "compact", inputID: `${requestID}:${seqno}`, at: now(), origin: requestID },
      output,
      {
        requestID,
        // Saved with the binding, so a client reconnecting after a restart resumes this turn.
        clientState: toSavedRunRequest(request),
        // A client on a branch (a rewind) summarizes the branch.
        route: {
          lastTurnOrigin: lastTurn,
          messageID: "",
        },
      },
    );
    following(stream, result.routed);
    if (!outbound.subscribed) this.grace.start();
    if (result.type === "duplicate") {
      stream.end();
    } else if (result.rejected !== null) {
      const why: Record<string, string> = {
        no_settings: "this conversation has no messages yet",
        nothing_to_compact:
          "the conversation is already as short as it gets (only its most recent messages since the last summary)",
        turn_in_progress: "a turn is running; summarize when it has finished",
      };
      stream.end(
        toConnectError({
          kind: "bad_input",
          detail: `nothing to summarize: ${why[result.rejected] ?? result.rejected}`,
        }),
      );
    }
  },

  async resume(request, restored) {
    const { stream, output } = this;
    const { requestID, deps, outbound } = stream;
    const { runner, log, now } = deps;
    // A resume request that gives this stream its turn: bound when the runner accepts it.
    const binding =
      stream.turn === null && request !== null && restored === undefined
        ? { requestID, clientState: toSavedRunRequest(request) }
        : {};
    if (stream.turn === null && request !== null) {
      const model = resolveModel(deps, request);
      const resumed = toResumedTurnState(request, {
        at: now(),
        inputID: `${requestID}:resume`,
        requestID,
        contextWindow: model?.contextWindow ?? 0,
        web: toWebOffer(deps.web),
      });
      if (!resumed.ok) throw toConnectError({ kind: "bad_input", detail: resumed.error.message });
      stream.turn = {
        ...resumed.value,
        nextID: restored?.firstID ?? 1,
        // The turn as the client's checkpoint has it, if it is the one this stream carries on
        // (carry-turn.ts, once the runner says which).
        lastClientTurn: toLastClientTurn(request.conversationState, request.preFetchedBlobs),
      };
      // A stream picked up after a restart already knows its conversation from its binding (a
      // branch, after a rewind); a resume request names the client's: its turn may run on a
      // branch of it (loop/rewind.ts).
      if (stream.conversationID === null) {
        const found = lastTurnOrigin(this, request);
        const lastTurn = found instanceof Promise ? await found : found;
        if (outbound.ended) return notStarted(stream);
        stream.conversationID = await runner.follow(
          resumed.value.conversationID,
          { lastTurnOrigin: lastTurn, messageID: "" },
          requestID,
        );
      }
    }
    if (stream.conversationID === null || stream.turn === null) return;
    let waiting: boolean;
    try {
      waiting = await runner.resume(stream.conversationID, output, {
        ...(restored === undefined ? {} : { turnID: restored.turnID }),
        ...binding,
      });
    } catch (error) {
      // The binding could not be saved: the stream ends, not left waiting.
      stream.end(toConnectError({ kind: "internal", detail: errorMessage(error) }));
      throw error;
    }
    if (!waiting) {
      // Nothing to continue: the turn is over, or another stream carries it. Close the stream
      // the way the turn ended (the same error its own stream got: its record keeps how,
      // loop/turn-record.ts), or normally when it has not ended. A stream picked up after a
      // restart is one of the turn's own: it gets a checkpoint naming the turn by the client's
      // id for it, with the steps its saved request's checkpoint held (a resume stream's: the
      // turn up to the resume, carry-turn.ts; the turn's first stream's holds none: its last
      // checkpoint before the restart is read back from the client first, when recorded). A
      // resume request's stream gets none: the client keeps the checkpoint it has.
      const ended = await endedTurn(runner, stream.conversationID, restored?.turnID);
      const origin = ended?.record?.origin;
      if (origin !== undefined) {
        carryTurn(stream, origin, undefined, { readBack: restored !== undefined });
      }
      send(
        stream,
        restored === undefined
          ? [toTurnEnded(stream.turn)]
          : [toCheckpointMessage(stream.turn), toTurnEnded(stream.turn)],
      );
      stream.end(ended === null ? undefined : (toEndedTurnError(ended.end) ?? undefined));
    } else if (binding.requestID !== undefined) {
      log.info(
        { conversation: stream.conversationID, request: requestID },
        "resume: this stream carries the running turn",
      );
    }
  },
};

/**
 * The request id of the last turn of `request`'s checkpoint (checkpoint-origin.ts); a blob-form
 * last turn the request did not carry is looked up in the turn blobs this server wrote
 * (turn-blob-origins.ts: memory, else one store read). One found neither way is logged at info
 * once per stream: a blob this server did not write (or no longer keeps), or one the request
 * may not see. Synchronous (the turn is submitted without a pause, as before) unless the store
 * is asked.
 */
function lastTurnOrigin(
  starter: Starter,
  request: AgentRunRequest,
): string | null | Promise<string | null> {
  const missing: { blob?: string } = {};
  const origin = toLastTurnOrigin(request.conversationState, request.preFetchedBlobs, (blob) => {
    missing.blob = blob;
  });
  const blob = missing.blob;
  if (blob === undefined) return origin;
  return findLastTurnOrigin(starter, request, blob, origin);
}

async function findLastTurnOrigin(
  starter: Starter,
  request: AgentRunRequest,
  blob: string,
  origin: string | null,
): Promise<string | null> {
  const { requestID, deps } = starter.stream;
  const conversationID = request.conversationId ?? "";
  const found = (await deps.turnBlobs?.find(blob, conversationID)) ?? null;
  if (found !== null) return found;
  if (!starter.unresolvedLogged) {
    starter.unresolvedLogged = true;
    deps.log.info(
      {
        conversation: request.conversationId,
        request: requestID,
        blob,
        prefetched: request.preFetchedBlobs.length,
      },
      "the checkpoint's last turn is a blob neither sent back nor recorded here; no rewind detection for this start",
    );
  }
  return origin;
}

/** The model the client asked for, or the first configured one. */
function resolveModel(deps: AgentStreamDeps, request: AgentRunRequest) {
  return chooseModel(deps, request).model;
}

/**
 * The model the client asked for (or the first configured one) and the options it chose in the
 * model picker (thinking, effort, max mode), read from the run request (model-options.ts).
 */
function chooseModel(deps: AgentStreamDeps, request: AgentRunRequest) {
  const selection = toModelSelection(request);
  const isConfigured = (name: string) => deps.models.findModel(name) !== undefined;
  const chosen = selection === null ? null : toChosenModel(selection, isConfigured);
  const exact = chosen === null ? undefined : deps.models.findModel(chosen.model);
  const model = exact ?? deps.models.listModels()[0];
  if (exact === undefined && model !== undefined) {
    deps.log.warn(
      { asked: selection?.model ?? "", using: model.name },
      "unknown model requested; using the default model",
    );
  }
  return { model, options: chosen?.options ?? {} };
}

/**
 * The stream follows its turn to the conversation the runner routed it to (a branch, after a
 * rewind: loop/rewind.ts), so cancels, subagents and reconnects reach it there.
 */
function following(
  stream: StreamState,
  routed: Routed | undefined,
  imported?: ImportedHistory | null,
): void {
  if (routed === undefined) return;
  const { requestID } = stream;
  const { log } = stream.deps;
  if (routed.rewind !== undefined) {
    const { from, fromTurn, afterTurn, dropped } = routed.rewind;
    log.info(
      {
        conversation: stream.conversationID,
        request: requestID,
        from,
        to: routed.conversationID,
        fromTurn,
        toTurn: afterTurn,
        droppedMessages: dropped,
      },
      "rewind applied",
    );
  } else if (routed.fork !== undefined) {
    // A new conversation began with a copy of the one that ran the client's last turn (a
    // fork or duplicate of a chat in the IDE: loop/fork.ts).
    const { from, afterTurn, messages } = routed.fork;
    log.info(
      {
        conversation: routed.conversationID,
        request: requestID,
        from,
        turn: afterTurn,
        messages,
      },
      "fork applied",
    );
  } else if (routed.imported !== undefined) {
    // A new conversation whose client shows turns no conversation here ran (a chat started on
    // Cursor's backend, a wiped database): they became its history, best effort.
    log.info(
      {
        conversation: routed.conversationID,
        request: requestID,
        turns: routed.imported.turns,
        messages: routed.imported.messages,
        skipped: imported?.skipped ?? 0,
        dropped: imported?.dropped ?? 0,
      },
      "history imported",
    );
  } else if (routed.noFork !== undefined) {
    // A new conversation whose client shows turns this server could not copy: the model
    // starts without them (docs/protocol.md "Rewinds").
    log.info(
      {
        conversation: routed.conversationID,
        request: requestID,
        reason: routed.noFork,
        ...(imported === null || imported === undefined ? {} : { skipped: imported.skipped }),
      },
      "fork not applied",
    );
  } else if (routed.reason === "unknown_origin" || routed.reason === "no_record") {
    // The client went back to a turn this server has no record of (saved before records
    // existed, older than the records kept, or never seen): the turn continues the conversation.
    log.info(
      { conversation: stream.conversationID, request: requestID, reason: routed.reason },
      "rewind not applied",
    );
  }
  stream.conversationID = routed.conversationID;
}

/** The conversation's last turn when it is over (and is `turnID`, when given); null otherwise. */
async function endedTurn(runner: Runner, conversationID: string, turnID: string | undefined) {
  const state = await runner.inspect(conversationID);
  return state === null ? null : toEndedTurn(state.committed, turnID);
}

/** A turn start dropped because its stream ended while the start awaited the turn blob look-up. */
function notStarted(stream: StreamState): void {
  stream.deps.log.info(
    { conversation: stream.conversationID, request: stream.requestID },
    "the stream ended while its turn start looked up the last turn; not started",
  );
}
