/**
 * Several instances behind a plain load balancer (docs/team.md "Several instances"): the RunSSE
 * and the BidiAppends of one agent stream may reach different instances, over HTTP/1.1 or
 * HTTP/2, but the stream lives in one process, its owner. Each such request is routed by its
 * `x-request-id` (equal to the body's request id, cursor-protocol.md §1.4; the handler refuses
 * one that differs, and claims the body's id itself when there is none, served-here.ts, so only
 * the stream's owner ever serves it): the instance claims
 * the stream in the shared directory (store/postgres-cluster.ts) and serves it, or forwards the
 * request over HTTP/1.1 to the owner and relays the answer (the RunSSE stream included) back.
 *
 * Why forwarding and not LISTEN/NOTIFY: an append must reach the owner's agent stream with its
 * answer (accepted, refused, out of order) coming back to the client, and a RunSSE reconnect must
 * read the owner's backlog; forwarding the HTTP request keeps both exactly as with one instance,
 * adds one loopback/LAN hop, and needs no second protocol.
 *
 * When the owner cannot be reached: a refused connection alone does not prove it dead (an
 * instance advertising a wrong address refuses connections while it serves its streams), so the
 * forwarder waits for the directory's verdict on its heartbeat. Renewed: it is alive and
 * misconfigured, so nothing is taken over, an error naming `server.advertiseUrl` is logged and
 * the client gets `instance_unreachable`. Expired: this instance takes the stream over (the
 * existing resume rules pick it up from the store: the stream's saved run request, the
 * conversation's committed state, a model call replayed with its saved bytes). Any other failure
 * (a hung host) answers `unavailable` until the lease expires and a claim succeeds.
 *
 * The forwarding marker, version 2 (`x-cursor-byok-forwarded-to`), names the instance the
 * request is meant for (its random per-process id, known only to the instances through the
 * database). The receiver serves it without routing it again only when the marker names
 * itself, so a request never travels twice; any other marker — a client forging one to skip
 * routing, or an `advertiseUrl` that reaches a different instance than the one that advertised
 * it — is refused with 421, which the forwarder treats as a misconfiguration, not a gone owner.
 *
 * Rolling upgrades: earlier versions mark with `x-cursor-byok-forwarded` (the sender's own id,
 * or before that any value). That form is never trusted — a client can send it too — so a
 * request carrying it is routed exactly like an unmarked one: claimed, served here if the stream
 * is ours, else forwarded with a version-2 marker. It grants nothing a plain request would not,
 * so a forged one cannot make two instances serve a stream, and it cannot loop: the onward hop
 * carries a version-2 marker, which is served or refused where it lands.
 */
import { request as httpRequest, type ServerResponse } from "node:http";
import type { ClusterDirectory } from "../store/index.ts";
import { toProtocolError } from "./cursor/index.ts";
import type { Log } from "./log.ts";
import {
  type ProxiedRequest as Request,
  type ProxiedResponse as Response,
  toForwardedHeaders,
} from "./proxy/forward.ts";

/** The paths of one agent stream's calls (RunSSE, BidiAppend and its alias), on either HTTP. */
const ROUTED_PATHS: ReadonlySet<string> = new Set([
  "/agent.v1.AgentService/RunSSE",
  "/aiserver.v1.BidiService/BidiAppend",
  "/agent.v1.AgentService/BidiAppend",
]);

/** The version-2 marker: its value is the id of the instance the request is forwarded to. */
export const FORWARDED_TO_HEADER = "x-cursor-byok-forwarded-to";
/** Earlier versions' marker: never trusted, routed like an unmarked request (see above). */
export const LEGACY_FORWARDED_HEADER = "x-cursor-byok-forwarded";

/**
 * The id a stream request is routed by: its `x-request-id` header, when it has one that can be
 * an id (non-empty, at most 128 characters). The handler checks that it equals the body's id.
 */
export function toRoutedRequestID(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  return value === undefined || value === "" || value.length > 128 ? undefined : value;
}

/** How long connecting to the owner may take before it counts as unreachable. */
const CONNECT_LIMIT_MS = 3_000;

export interface ClusterRouting {
  /** Serves `request` here (`local`) or at its stream's owner. */
  serve(
    request: Request,
    response: Response,
    local: (request: Request, response: Response) => void,
  ): void;
}

export function createClusterRouting(directory: ClusterDirectory, log: Log): ClusterRouting {
  const route = async (
    request: Request,
    response: Response,
    local: (request: Request, response: Response) => void,
    requestID: string,
  ): Promise<void> => {
    const owner = await directory.claim(requestID);
    if (owner.type === "mine") {
      local(request, response);
      return;
    }
    const outcome = await forward(request, response, owner.url, owner.instanceID);
    if (outcome === "relayed") return;
    if (outcome === "misdirected") {
      // The body went to the wrong instance: it cannot be served here, and the owner may be
      // alive, so it is neither taken over nor expired.
      log.error(
        { request: requestID, owner: owner.instanceID, url: owner.url },
        "the address an instance advertises reaches another instance: set server.advertiseUrl " +
          "of every instance to the address the others reach it at (docs/team.md)",
      );
      unavailable(request, response);
      return;
    }
    if (outcome === "refused" && (await directory.awaitVerdict(owner.instanceID)) === "alive") {
      // Alive (its heartbeat goes on) but refusing connections at the address it advertises:
      // taking its stream over would make two instances serve it.
      log.error(
        { request: requestID, owner: owner.instanceID, url: owner.url },
        "an instance is alive but refuses connections at the address it advertises: set " +
          "server.advertiseUrl of that instance to the address the others reach it at (docs/team.md)",
      );
      unavailable(request, response);
      return;
    }
    const again = await directory.claim(requestID);
    if (again.type === "mine") {
      log.info(
        { request: requestID, from: owner.instanceID },
        "took over a stream whose instance is gone",
      );
      local(request, response);
      return;
    }
    unavailable(request, response);
  };

  return {
    serve(request, response, local) {
      const path = (request.url ?? "/").split("?")[0] ?? "/";
      const marker = request.headers[FORWARDED_TO_HEADER];
      if (marker !== undefined) {
        if (marker === directory.instanceID) {
          local(request, response);
          return;
        }
        log.warn(
          { path },
          "refused a request marked as forwarded to another instance (a forged marker, or an " +
            "instance whose server.advertiseUrl reaches this one)",
        );
        misdirected(request, response);
        return;
      }
      // An earlier version's marker (LEGACY_FORWARDED_HEADER) is not looked at: such a request
      // is routed like any other.
      // Without a routable header the request is served here, and the handler claims the id it
      // serves itself (served-here.ts): it refuses unless this instance holds that stream.
      const requestID = toRoutedRequestID(request.headers["x-request-id"]);
      if (!ROUTED_PATHS.has(path) || requestID === undefined) {
        local(request, response);
        return;
      }
      void route(request, response, local, requestID).catch((error: unknown) => {
        log.error(
          { request: requestID, error: error instanceof Error ? error.message : String(error) },
          "could not route a stream request",
        );
        if (!response.headersSent) unavailable(request, response);
        else response.destroy();
      });
    },
  };
}

/**
 * Relays `request` to `ownerID` at `baseUrl` and its answer back. The request body is not read
 * until the owner accepted the connection, so a refused or failed connection leaves it for a
 * local serve. A 421 answer (the instance there is not `ownerID`) is not relayed: `misdirected`.
 */
function forward(
  request: Request,
  response: Response,
  baseUrl: string,
  ownerID: string,
): Promise<"relayed" | "refused" | "unreachable" | "misdirected"> {
  return new Promise((resolve) => {
    const target = new URL(request.url ?? "/", baseUrl);
    let connected = false;
    // End-to-end headers only (an HTTP/2 request's pseudo-headers and hop-by-hop headers are
    // not HTTP/1.1 request headers); no marker of the client's goes on.
    const headers = toForwardedHeaders(request.headers);
    delete headers[LEGACY_FORWARDED_HEADER];
    const outgoing = httpRequest(target, {
      method: request.method,
      headers: { ...headers, host: target.host, [FORWARDED_TO_HEADER]: ownerID },
    });
    const timer = setTimeout(() => {
      if (!connected)
        outgoing.destroy(Object.assign(new Error("connect timeout"), { code: "ETIMEDOUT" }));
    }, CONNECT_LIMIT_MS);
    outgoing.on("socket", (socket) => {
      const onConnect = () => {
        connected = true;
        clearTimeout(timer);
        request.pipe(outgoing);
      };
      if (socket.connecting) socket.once("connect", onConnect);
      else onConnect();
    });
    outgoing.on("response", (answer) => {
      if (answer.statusCode === 421) {
        answer.resume();
        resolve("misdirected");
        return;
      }
      // Hop-by-hop headers of the HTTP/1.1 answer are not the client's (HTTP/2 forbids them).
      (response as ServerResponse).writeHead(
        answer.statusCode ?? 502,
        toForwardedHeaders(answer.headers),
      );
      answer.pipe(response as NodeJS.WritableStream);
      // The upstream died mid-answer: end the client's connection the same way, so it sees a
      // lost stream (and reconnects) instead of waiting on a relay that will never finish.
      answer.on("error", () => response.destroy());
      answer.on("close", () => {
        if (!answer.complete) response.destroy();
      });
      resolve("relayed");
    });
    outgoing.on("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (!connected) {
        resolve(error.code === "ECONNREFUSED" ? "refused" : "unreachable");
        return;
      }
      // The owner died while serving: the client sees its connection end, as if it had been
      // connected to the owner, and reconnects (the body is partly sent: it cannot be served here).
      response.destroy();
      resolve("relayed");
    });
    // The client went away: stop relaying.
    response.on("close", () => outgoing.destroy());
  });
}

/** A marker naming another instance: HTTP 421 Misdirected Request. */
function misdirected(request: Request, response: Response): void {
  request.resume();
  const error = toProtocolError({ type: "misdirected" });
  (response as ServerResponse).writeHead(421, { "content-type": "application/json" });
  response.end(JSON.stringify({ code: "failed_precondition", message: error.rawMessage }));
}

function unavailable(request: Request, response: Response): void {
  request.resume();
  const error = toProtocolError({ type: "instance_unreachable" });
  (response as ServerResponse).writeHead(503, { "content-type": "application/json" });
  response.end(JSON.stringify({ code: "unavailable", message: error.rawMessage }));
}
