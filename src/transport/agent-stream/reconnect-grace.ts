/**
 * A RunSSE that drops does not cancel the turn: the stream waits `reconnectGraceMs` for a new
 * subscriber, and only then cancels the turn and ends (docs/design.md §10). A turn nobody ever
 * subscribed to is canceled the same way.
 */

import { errorMessage } from "../../errors/error-message.ts";
import { toProtocolError } from "../cursor/index.ts";
import { createOneShotTimer, type OneShotTimer } from "./one-shot-timer.ts";
import type { StreamState } from "./stream-state.ts";

export interface ReconnectGrace {
  /** Starts waiting for a subscriber, unless already waiting or the stream has ended. */
  start(): void;
  /** A subscriber came (or the stream ended): stop waiting. */
  clear(): void;
}

export function createReconnectGrace(
  stream: StreamState,
  cancelTurn: (reason: string) => Promise<unknown>,
): ReconnectGrace {
  const { requestID, deps, outbound } = stream;
  const { log } = deps;
  /** Made when a subscriber first goes: most streams keep theirs (issue #19). */
  let timer: OneShotTimer | undefined;
  return {
    start() {
      if (timer?.armed === true || outbound.ended) return;
      timer ??= createOneShotTimer();
      log.debug(
        { request: requestID, conversation: stream.conversationID },
        "nobody reads the stream; waiting for a reconnect",
      );
      timer.arm(deps.options.reconnectGraceMs, () => {
        // A held stream (a shutdown, docs/architecture.md "Shutdown") keeps its turn as it is, for
        // the client to continue after the restart: a grace that runs out meanwhile cancels nothing.
        if (outbound.subscribed || outbound.ended || outbound.held) return;
        log.info(
          { request: requestID, conversation: stream.conversationID },
          "client gone; canceling the turn",
        );
        if (stream.conversationID === null) {
          stream.end(toProtocolError({ type: "client_went_away" }), "now");
          return;
        }
        void cancelTurn("the client went away")
          .catch((error: unknown) =>
            log.error({ request: requestID, error: errorMessage(error) }, "cancel failed"),
          )
          .finally(() => stream.end(toProtocolError({ type: "client_went_away" }), "now"));
      });
    },
    clear() {
      timer?.clear();
    },
  };
}
