/**
 * What `cursor-byok agent --team`'s loopback relay answers (docs/team.md "Clients"). The relay
 * sends the user's team token with every call it relays, so it must not relay for just anyone:
 *
 * - only requests naming it by a loopback name (`localhost`, `127.0.0.1`, `[::1]`) are answered:
 *   a web page whose host name an attacker points at 127.0.0.1 (DNS rebinding) sends its own
 *   host name, and is refused with 421, as the local server refuses it (http/host-check.ts);
 * - only the procedures a cursor-byok server answers are relayed (`relayed`: the served
 *   procedures and the start-up calls it answers empty); telemetry is answered here and never
 *   leaves the machine; anything else is answered `not_implemented` here, as the team server
 *   would, so no other path ever reaches the team server with the token.
 */
import type { ServerResponse } from "node:http";
import { toProtocolError } from "../cursor/index.ts";
import { createHostCheck } from "../http/host-check.ts";
import type { RequestHandler } from "../http/listen.ts";
import { TELEMETRY_SINKS } from "../startup-procedures.ts";
import { answerError } from "./team-relay.ts";

export function guardLocalRelay(
  relay: RequestHandler,
  relayed: ReadonlySet<string>,
): RequestHandler {
  const isLoopback = createHostCheck([]);
  return (request, response) => {
    const writer = response as ServerResponse;
    if (!isLoopback(request.headers)) {
      request.resume();
      writer.writeHead(421, { "content-type": "application/json" });
      writer.end(
        JSON.stringify({
          code: "failed_precondition",
          message: "this relay does not answer to that host name (use 127.0.0.1 or localhost)",
        }),
      );
      return;
    }
    const path = (request.url ?? "/").split("?")[0] ?? "/";
    if (relayed.has(path)) {
      relay(request, response);
      return;
    }
    if (TELEMETRY_SINKS.has(path) && request.method === "POST") {
      request.resume();
      writer.writeHead(200, { "content-type": "application/json" });
      writer.end("{}");
      return;
    }
    answerError(request, response, toProtocolError({ type: "not_implemented", path }));
  };
}
