/**
 * The runner's `TurnOutput` for this stream's turn: the loop's events become Cursor messages
 * through the dialect, tool calls go to tool-calls.ts, and the turn's end closes the stream and
 * logs the turn's usage.
 */

import { withMethods } from "../../llm/index.ts";
import { type ConversationState, toTurnRecord } from "../../loop/index.ts";
import type { TurnOutput } from "../../runner/types.ts";
import {
  addUsage,
  fromResponseEvent,
  redactSecrets,
  type SummaryView,
  toSummaryUpdates,
  toSummaryView,
  toTurnEnd,
} from "../cursor/index.ts";
import { carryTurn } from "./carry-turn.ts";
import { type StreamState, send } from "./stream-state.ts";
import type { ToolCalls } from "./tool-calls.ts";

/**
 * One stream's output: a plain record, whose prototype is `outputMethods`, shared by every stream
 * (issue #19: no closures per open stream).
 */
interface Output {
  readonly stream: StreamState;
  readonly tools: ToolCalls;
  /** What the client has been shown of compactions (cursor/summary-updates.ts). */
  summaries: SummaryView | null;
  /** The committed state `summaries` was brought up to: a delta leaves it as it was. */
  summarized: ConversationState | null;
}

export function createTurnOutput(stream: StreamState, tools: ToolCalls): TurnOutput {
  const output: Output = {
    stream,
    tools,
    summaries: null,
    summarized: null,
  };
  return withMethods(output, outputMethods);
}

/** The runner's calls, shared by every stream's output (`this` is the stream's record). */
const outputMethods: TurnOutput & ThisType<Output> = {
  publish(events, state) {
    const stream = this.stream;
    if (stream.turn === null) return;
    // The updates are a function of the committed state, nothing new for the same one (#19).
    if (state.committed !== this.summarized) {
      const view = this.summaries ?? toSummaryView(state.committed);
      const shown = toSummaryUpdates(view, state.committed);
      this.summaries = shown.view;
      this.summarized = state.committed;
      send(stream, shown.messages);
    }
    const callID = state.committed.call?.callID ?? "";
    const now = stream.deps.now;
    for (const event of events) {
      const next = fromResponseEvent(stream.turn, event, { at: now(), callID });
      stream.turn = next.state;
      send(stream, next.messages);
    }
  },
  countUsage(usage) {
    const stream = this.stream;
    // A summary call's tokens count for the turn (turn_ended, the log) like any call's.
    if (stream.turn !== null)
      stream.turn = { ...stream.turn, usage: addUsage(stream.turn.usage, usage) };
  },
  resumed(state, from) {
    // A stream that picks a turn up (a resume request, a reconnect after a restart) names it in
    // its checkpoints as the client knows it: by the request id that started it (loop/rewind.ts
    // routes by that id), not by this stream's.
    // Its checkpoints then hold the turn once: the client's checkpoint has its start
    // (carry-turn.ts).
    const origin = toTurnRecord(state)?.origin;
    // On a takeover, the stream it takes the turn from (in this process) has the turn whole.
    const handing = from === undefined ? undefined : streamOf(from);
    if (origin !== undefined) carryTurn(this.stream, origin, handing);
  },
  runTool(command, state, attempt) {
    return this.tools.run(command, state, attempt);
  },
  toolSaved(operationID) {
    // Its step may go out in a checkpoint now (tool-calls.ts `holdFor`).
    this.stream.checkpoints.unholdCheckpoints(operationID);
  },
  settingsAfterTool(settings) {
    return this.tools.settingsAfterTool(settings);
  },
  isDetached() {
    // Nobody reads the stream (its RunSSE dropped and it waits out its grace, or none came yet):
    // a resume on another stream takes the turn over (loop/turn-ownership.ts).
    const outbound = this.stream.outbound;
    return !outbound.subscribed && !outbound.held && !outbound.ended;
  },
  end(outcome, state: ConversationState) {
    const { stream, tools } = this;
    const { requestID, deps } = stream;
    const { log, now } = deps;
    tools.closeSubagentCalls(`the turn ended (${outcome.type})`);
    if (stream.turn !== null) {
      const ended = toTurnEnd(stream.turn, outcome, { at: now() });
      stream.turn = ended.state;
      send(stream, ended.messages);
      stream.end(ended.error ?? undefined);
    } else {
      stream.end();
    }
    tools.rejectOpen(`the turn ended (${outcome.type})`);
    const usage = stream.turn?.usage;
    log.info(
      {
        conversation: state.conversationID,
        request: requestID,
        model: state.settings?.model,
        // The model the turn's last call went to, when routing moved it (loop/model-route.ts).
        ...(state.call?.model === undefined ? {} : { calledModel: state.call.model }),
        outcome: outcome.type,
        inputTokens: usage?.input ?? 0,
        outputTokens: usage?.output ?? 0,
        cacheReadTokens: usage?.cacheRead ?? 0,
        cacheWriteTokens: usage?.cacheWrite ?? 0,
        durationMs: stream.startedAt === null ? undefined : now() - stream.startedAt,
        ...(outcome.type === "failed"
          ? { error: redactSecrets(outcome.message.errorMessage ?? "unknown") }
          : {}),
      },
      "turn ended",
    );
  },
};

/** The stream of an output made here (a takeover's new output reads the old one's turn state). */
function streamOf(output: TurnOutput): StreamState | undefined {
  return Object.getPrototypeOf(output) === outputMethods
    ? (output as unknown as Output).stream
    : undefined;
}
