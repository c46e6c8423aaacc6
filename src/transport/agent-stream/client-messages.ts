/**
 * What one client message does to the stream, once the append sequencer says it is its turn: the
 * dialect reads it as a `ClientEvent`, and each kind goes to its part: a run or resume request to
 * turn-start.ts, tool-call replies to tool-calls.ts, a cancel to the runner; actions this server
 * does not serve are refused without leaving the client waiting.
 */
import type { TurnOutput } from "../../runner/types.ts";
import {
  type AgentClientMessage,
  type ClientEvent,
  fromClientMessage,
  toConnectError,
  toForceBackground,
  toProtocolError,
} from "../cursor/index.ts";
import { type StreamState, send } from "./stream-state.ts";
import type { ToolCalls } from "./tool-calls.ts";
import type { TurnStart } from "./turn-start.ts";

/** Client events that only make sense on a stream that carries a turn. */
const NEEDS_TURN: ReadonlySet<ClientEvent["type"]> = new Set([
  "cancel",
  "exec_result",
  "exec_stream_close",
  "exec_throw",
  "exec_heartbeat",
  "interaction_response",
]);

export type ApplyClientMessage = (seqno: number, message: AgentClientMessage) => Promise<void>;

export function createClientMessages(
  stream: StreamState,
  parts: { readonly turns: TurnStart; readonly tools: ToolCalls; readonly output: TurnOutput },
): ApplyClientMessage {
  const { requestID, deps } = stream;
  const { log, now } = deps;
  const { turns, tools, output } = parts;
  /**
   * Kinds of unsupported messages already logged; made at the first (issue #19: one function and
   * no helper closures or Set per open stream).
   */
  let loggedUnsupported: Set<string> | undefined;

  return async (seqno, message) => {
    const event = fromClientMessage(message);
    if (stream.turn === null && NEEDS_TURN.has(event.type)) {
      throw toProtocolError({ type: "no_turn", requestID, event: event.type });
    }
    switch (event.type) {
      case "run":
        return turns.start(seqno, event);
      case "resume":
        return turns.resume(event.request);
      case "cancel":
        if (stream.conversationID === null) return;
        await deps.runner.submit(
          stream.conversationID,
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
        tools.applyClientEvent(seqno, event);
        return;
      case "summarize":
        return summarize(stream, turns, seqno, event);
      case "shell_command":
        recordUserCommand(stream, event);
        return;
      case "background_shell":
        forceBackground(stream, event.toolCallID);
        return;
      case "cancel_subagent": {
        const stopped = await tools.cancelSubagent(event.subagentID, "canceled by the user");
        log.info(
          { request: requestID, conversation: stream.conversationID, subagent: event.subagentID },
          stopped ? "subagent canceled by the user" : "cancel_subagent for no running subagent",
        );
        return;
      }
      case "kv_result":
        stream.checkpoints.result(event.id, event.result);
        return;
      case "prewarm":
      case "heartbeat":
        return;
      case "unserved_action":
        return refuseAction(stream, event.action);
      case "unsupported":
        loggedUnsupported ??= new Set();
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
}

/**
 * An action this server does not serve must not leave the client waiting: a stream that carries
 * no turn ends at once with an error the client shows; a running turn goes on.
 */
function refuseAction(stream: StreamState, action: string): void {
  const running = stream.turn !== null && !stream.outbound.ended;
  stream.deps.log.warn(
    { request: stream.requestID, conversation: stream.conversationID, action },
    running
      ? "conversation action not served; the running turn goes on"
      : "conversation action not served; ending the stream with an error",
  );
  if (running) return;
  stream.end(
    toConnectError({
      kind: "bad_input",
      detail: `${action} is not supported by cursor-byok yet`,
    }),
  );
}

/**
 * `/summarize`: on a run request, a turn that compacts the conversation (turn-start.ts). Sent on
 * a stream whose turn is running, it leaves that turn alone (the turn compacts by itself when it
 * needs to).
 */
async function summarize(
  stream: StreamState,
  turns: TurnStart,
  seqno: number,
  event: Extract<ClientEvent, { type: "summarize" }>,
): Promise<void> {
  if (stream.turn !== null || event.request === null) {
    stream.deps.log.info({ request: stream.requestID }, "summarize during a turn; ignored");
    return;
  }
  await turns.compact(seqno, event.request);
}

/** "Move to background" on the running command of a tool call (cursor/background-shell.ts). */
function forceBackground(stream: StreamState, toolCallID: string): void {
  if (stream.turn === null) return;
  const step = toForceBackground(stream.turn, toolCallID);
  if (step.type === "ignored") {
    stream.deps.log.debug(
      { request: stream.requestID, why: step.why },
      "background_shell action ignored",
    );
    return;
  }
  stream.turn = step.state;
  send(stream, step.messages);
}

/**
 * A command the user ran themselves becomes context for the conversation's next turn. Sent as a
 * run request, it opens no turn: its stream ends at once; on a stream carrying a turn, that turn
 * goes on.
 */
function recordUserCommand(
  stream: StreamState,
  event: Extract<ClientEvent, { type: "shell_command" }>,
): void {
  const { requestID, deps } = stream;
  const conversation = event.request?.conversationId ?? stream.conversationID;
  if (conversation !== null && conversation !== "" && event.command.trim() !== "") {
    deps.userCommands?.record(conversation, { command: event.command, execID: event.execID });
    deps.log.info(
      { request: requestID, conversation },
      "user shell command recorded for the next turn",
    );
  } else {
    deps.log.info(
      { request: requestID },
      "user shell command without a conversation or command; ignored",
    );
  }
  if (stream.turn === null) stream.end();
}
