/**
 * The HTTP server: one port for HTTP/1.1 and cleartext HTTP/2 (http/listen.ts), Connect for the
 * services in routes.ts, and plain handlers for what Connect cannot express:
 *
 * - BidiAppend is also answered under `agent.v1.AgentService` (one client file uses that path),
 *   and written by bidi-append-response.ts for the request every client sends (Connect's unary
 *   pipeline cost ≈0.2 ms of time to first text per append, issue #19), with Connect's handler
 *   for the rest;
 * - RunSSE, every turn's down-link, is written by run-sse-response.ts for the request every
 *   client sends (Connect's server-streaming pipeline cost ≈1.6 ms of time to first text and a
 *   share of every open stream's heap, issue #19), with Connect's handler for the rest; its
 *   response can carry `content-type: text/event-stream` over its binary Connect envelopes, as
 *   the working IDE-facing peer does (docs/protocol.md §1.3) — a setting;
 * - start-up and session calls whose correct answer is "nothing" (identity, team, plugins,
 *   analytics sinks, network probe: startup-procedures.ts) get an empty message, which is a valid
 *   message of any type; OTLP trace uploads are accepted and dropped;
 * - anything else is Connect `unimplemented`, logged once per procedure (the IDE's
 *   managed-local `InferenceService` at warn, since it means the agent cannot work);
 * - with an access token configured, every request must present it as a bearer token.
 *
 * Why one file of about 450 lines: it is the HTTP assembly. `startServer` wires the listener,
 * Connect, the dashboard and the plain handlers in one place, so the path of a request reads top
 * to bottom; the helpers below it are small and used only here. The agent stream, the routes and
 * the start-up lists have their own files.
 */
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { AddressInfo } from "node:net";
import {
  Code,
  type ConnectError,
  type ConnectRouter,
  createConnectRouter,
} from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { LLM } from "../llm/index.ts";
import type { Runner } from "../runner/types.ts";
import type { ClusterDirectory, Store } from "../store/index.ts";
import {
  DEFAULT_BLOB_READ_TIMEOUT_MS,
  DEFAULT_BLOB_WRITE_TIMEOUT_MS,
} from "./agent-stream/checkpoint-writer.ts";
import type { AgentStreamOptions } from "./agent-stream.ts";
import { createBidiAppendApply } from "./bidi-append-apply.ts";
import { BIDI_APPEND_PATH, createBidiAppendHandler } from "./bidi-append-response.ts";
import { asClientFault, refuseOversized } from "./client-faults.ts";
import { createClusterRouting } from "./cluster.ts";
import type { PathEncryptionKeys } from "./cursor/index.ts";
import { toProtocolError } from "./cursor/index.ts";
import { createDashboard } from "./dashboard/dashboard.ts";
import type { ReadSetup } from "./dashboard/types.ts";
import { createHealth, HEALTH_PATHS } from "./health.ts";
import { createHelperCall } from "./helper-calls.ts";
import { deferEarlyReset } from "./http/defer-early-reset.ts";
import { createHostCheck } from "./http/host-check.ts";
import {
  DEFAULT_LISTEN_LIMITS,
  type Listener,
  type ListenLimits,
  listen,
  type RequestHandler,
} from "./http/listen.ts";
import type { Log } from "./log.ts";
import { createPathEncryptionKeys } from "./path-encryption-keys.ts";
import { type Authenticate, runAsAdmin, runAsUser } from "./request-user.ts";
import { createRoutes } from "./routes.ts";
import { createRunSseOpen } from "./run-sse-open.ts";
import {
  COMPRESS_MIN_BYTES,
  CONNECT_COMPRESSION,
  createRunSseHandler,
} from "./run-sse-response.ts";
import { createServedHereCheck } from "./served-here.ts";
import {
  EMPTY_REPLIES,
  INFERENCE_SERVICE_PREFIX,
  INFERENCE_SERVICE_WARNING,
  TELEMETRY_SINKS,
} from "./startup-procedures.ts";
import { createStreamRegistry } from "./stream-registry.ts";
import { createStreamResponses } from "./stream-responses.ts";
import { createTurnBlobOrigins } from "./turn-blob-origins.ts";
import type { CheckAccess } from "./user-access.ts";
import { createUserCommands } from "./user-commands.ts";
import type { WebTools } from "./web-work.ts";

export interface ServerOptions {
  readonly host: string;
  readonly port: number;
  /** `event-stream` (default) sends RunSSE as `text/event-stream`; `connect` keeps Connect's type. */
  readonly runSseContentType: "event-stream" | "connect";
  /**
   * Who writes RunSSE responses: `direct` (default) for the request every client sends
   * (run-sse-response.ts), Connect for the rest; `connect` always Connect's handler (for
   * comparing the two: tests and benchmarks).
   */
  readonly runSseResponder?: "direct" | "connect";
  /**
   * Who answers BidiAppend: `direct` (default) for the request every client sends
   * (bidi-append-response.ts), Connect for the rest; `connect` always Connect's handler (for
   * comparing the two: tests and benchmarks).
   */
  readonly bidiAppendResponder?: "direct" | "connect";
  /** Let clients use the HTTP/2 bidi `Run` (GetServerConfig `http2_config`); default false. */
  readonly offerHttp2: boolean;
  readonly stream: AgentStreamOptions;
  /** How long an ended stream is kept for a late RunSSE. */
  readonly streamRetentionMs: number;
  /** How long a stream that never gets a run request is kept. */
  readonly idleStreamMs: number;
  /** The most agent streams kept at once (each holds a turn's state and backlog). */
  readonly maxStreams: number;
  /** Connection time-outs and the connection cap (http/listen.ts). */
  readonly listen: ListenLimits;
  /** The largest request message accepted (after decompression). */
  readonly maxMessageBytes: number;
  /** How long a RunSSE request's one envelope may take to arrive whole. */
  readonly envelopeTimeoutMs: number;
  /** When set, every request must carry `authorization: Bearer <token>`. */
  readonly accessToken?: string;
  /** The model for chat titles, commit messages and branch names; default: the default model. */
  readonly helperModel?: string;
  /** How long a helper call (title, commit message, branch name) may take. */
  readonly helperTimeoutMs: number;
}

export const DEFAULT_SERVER_OPTIONS: ServerOptions = {
  host: "127.0.0.1",
  port: 8765,
  runSseContentType: "event-stream",
  offerHttp2: false,
  stream: {
    heartbeatMs: 5_000,
    reconnectGraceMs: 30_000,
    appendGapTimeoutMs: 10_000,
    maxAppendsAhead: 64,
    lateResultGraceMs: 30_000,
    blobCheckpoints: true,
    blobWriteTimeoutMs: DEFAULT_BLOB_WRITE_TIMEOUT_MS,
    blobReadTimeoutMs: DEFAULT_BLOB_READ_TIMEOUT_MS,
  },
  streamRetentionMs: 60_000,
  idleStreamMs: 120_000,
  maxStreams: 1_000,
  listen: DEFAULT_LISTEN_LIMITS,
  maxMessageBytes: 32 * 1024 * 1024,
  helperTimeoutMs: 20_000,
  envelopeTimeoutMs: 10_000,
};

export interface ServerDeps {
  readonly store: Store;
  readonly llm: LLM;
  /**
   * The runner over the same store and LLM, made by the composition root (docs/architecture.md);
   * the server shuts it down on `close`.
   */
  readonly runner: Runner;
  readonly log: Log;
  readonly now?: () => number;
  /**
   * The install's keys (path-encryption-keys.ts, kept in the data directory). Without them the
   * server makes a pair for its own lifetime.
   */
  readonly pathEncryptionKeys?: PathEncryptionKeys;
  /** The set-up the dashboard shows (docs/dashboard.md); without it the page says so. */
  readonly readSetup?: ReadSetup;
  /** The web tools (web_search, web_fetch); without them neither is offered. */
  readonly web?: WebTools;
  /**
   * Team users (docs/team.md): a bearer token that is not the server's access token is checked
   * here, on every request, and the request runs as that user (request-user.ts).
   */
  readonly authenticate?: Authenticate;
  /** Team users: who may use which stream and conversation (user-access.ts). */
  readonly access?: CheckAccess;
  /**
   * Team users: whether the request being handled may see a conversation (user-access.ts
   * `createReadCheck`), asked before a turn blob of another conversation is used
   * (turn-blob-origins.ts). Absent: every conversation without users, none with them.
   */
  readonly mayRead?: (conversationID: string) => Promise<boolean>;
  /**
   * Several instances on one database (docs/team.md): each agent stream's owner instance, so a
   * RunSSE or BidiAppend that lands here for a stream held elsewhere is forwarded (cluster.ts).
   */
  readonly cluster?: ClusterDirectory;
}

export interface Server {
  /** `http://host:port` */
  readonly url: string;
  readonly address: AddressInfo;
  /**
   * A graceful shutdown (SIGTERM, SIGINT; docs/architecture.md "Shutdown"). Stops accepting
   * connections and stops model streams without committing anything for them, so every turn
   * that has not ended stays as it is in the store and is continued when a client reconnects
   * (after the restart, or on another instance: docs/team.md). The clients of those turns are
   * therefore never told that the turn ended: their streams are held (nothing more is written,
   * not even an end) and their connections dropped, as a crash would, so they reconnect. A
   * stream whose turn had ended gets its end written first (at most `END_WRITE_LIMIT_MS`).
   * Resolves once every connection is closed and the runner's work has settled. The store is
   * the caller's to close.
   */
  close(): Promise<void>;
  /**
   * Resolves once the turn blobs remembered so far are written to the store (or their write
   * failed): before a cluster `leave()`, so that the instances taking the streams over can look
   * them up (turn-blob-origins.ts).
   */
  flushTurnBlobs(): Promise<void>;
}

/**
 * How long a shutdown waits for the ends of streams whose turns are over to be written (a client
 * that does not read must not hold it; it then finds the end after the restart, from the store).
 * The CLI gives the whole shutdown 15 s.
 */
const END_WRITE_LIMIT_MS = 2_000;

/**
 * The largest RunSSE request: its one message is a request id (a UUID), so anything near this
 * size is not a client of ours, and is refused before its bytes are read.
 */
const MAX_RUN_SSE_REQUEST_BYTES = 64 * 1024;

/** A server running in this process: it can also be handed requests directly. */
export interface LocalServer extends Server {
  /**
   * Answers a request without the access-token check: for callers in this process that decided
   * themselves that the request may be served (the IDE proxy, docs/ide.md).
   */
  readonly serveTrusted: RequestHandler;
  /** Whether `path` is a procedure this server answers itself (Connect routes and aliases). */
  servesProcedure(path: string): boolean;
}

/**
 * Empty replies the IDE proxy also answers locally (docs/ide.md): the IDE's default model must be
 * one of ours. The other empty replies (identity, dashboard, analytics) go to Cursor in IDE mode.
 */
const LOCAL_IN_IDE_MODE = [
  "/aiserver.v1.AiService/GetDefaultModel",
  "/aiserver.v1.AiService/GetDefaultModelNudgeData",
];

/** The HTTP/2 bidi `Run`, an agent stream like RunSSE. */
const RUN_PATH = "/agent.v1.AgentService/Run";

/** Paths of the same procedure under another service name. */
const ALIASES: Readonly<Record<string, string>> = {
  "/agent.v1.AgentService/BidiAppend": "/aiserver.v1.BidiService/BidiAppend",
  "/agent.v1.AgentService/GetUsableModels": "/aiserver.v1.AiService/GetUsableModels",
  "/agent.v1.AgentService/GetDefaultModelForCli": "/aiserver.v1.AiService/GetDefaultModelForCli",
};

type Request = IncomingMessage | Http2ServerRequest;
/** What every response here is used as: headers once, then a body. */
interface Response {
  writeHead(status: number, headers?: Record<string, string | string[] | number>): unknown;
  end(body: string): unknown;
}

export async function startServer(deps: ServerDeps, options: ServerOptions): Promise<LocalServer> {
  const { store, llm, log, runner } = deps;
  const now = deps.now ?? Date.now;
  // With users but no read check, a turn blob of another conversation resolves for nobody (fail
  // closed); without users, for everyone.
  const mayRead = deps.mayRead ?? (deps.authenticate === undefined ? undefined : async () => false);
  const turnBlobs = createTurnBlobOrigins({
    store,
    log,
    ...(mayRead === undefined ? {} : { mayRead }),
  });
  const streams = createStreamRegistry(
    {
      runner,
      models: llm,
      now,
      log,
      options: options.stream,
      userCommands: createUserCommands(),
      turnBlobs,
      ...(deps.web === undefined ? {} : { web: deps.web }),
    },
    {
      retentionMs: options.streamRetentionMs,
      idleMs: options.idleStreamMs,
      maxStreams: options.maxStreams,
    },
  );
  const unimplemented = new Set<string>();

  const checks = {
    ...(deps.access === undefined ? {} : { access: deps.access }),
    ...(deps.cluster === undefined ? {} : { servedHere: createServedHereCheck(deps.cluster) }),
  };
  const openRunSse = createRunSseOpen(streams, checks);
  const applyBidiAppend = createBidiAppendApply(streams, checks, log);
  const routes = createRoutes(streams, llm, now, log, {
    openRunSse,
    applyBidiAppend,
    offerHttp2: options.offerHttp2,
    pathEncryptionKeys: deps.pathEncryptionKeys ?? createPathEncryptionKeys(),
    helper: createHelperCall(llm, now, {
      model: options.helperModel,
      timeoutMs: options.helperTimeoutMs,
    }),
    ...(deps.access === undefined ? {} : { access: deps.access }),
  });
  const procedures = toProcedures(routes);
  /** The agent streams' responses, for `close` (stream-responses.ts). */
  const responses = createStreamResponses();
  const connect = connectNodeAdapter({
    routes,
    // The held hook of a RunSSE or Run response (stream-responses.ts), for the routes.
    contextValues: (request) => responses.contextValues(request),
    // Connect's defaults, named: the direct RunSSE responder negotiates from the same list.
    acceptCompression: [...CONNECT_COMPRESSION],
    compressMinBytes: COMPRESS_MIN_BYTES,
    readMaxBytes: options.maxMessageBytes,
    fallback(request, response) {
      const path = pathOf(request);
      if (TELEMETRY_SINKS.has(path) && request.method === "POST") {
        request.resume();
        response.writeHead(200, { "content-type": "application/json" });
        response.end("{}");
        return;
      }
      if (EMPTY_REPLIES.has(path) && request.method === "POST") {
        request.resume();
        const json = String(request.headers["content-type"] ?? "").includes("json");
        response.writeHead(200, {
          "content-type": json ? "application/json" : "application/proto",
        });
        response.end(json ? "{}" : "");
        return;
      }
      if (!unimplemented.has(path)) {
        unimplemented.add(path);
        if (path.startsWith(INFERENCE_SERVICE_PREFIX)) {
          log.warn({ procedure: path }, INFERENCE_SERVICE_WARNING);
        } else {
          log.info({ procedure: path }, "procedure not implemented; answering unimplemented");
        }
      }
      writeConnectError(response, toProtocolError({ type: "not_implemented", path }));
    },
  });

  const dashboard = createDashboard({
    store,
    // Only the server's own (admin) token opens the dashboard: it shows every user's
    // conversations and exact requests. With users and no admin token it stays shut
    // (docs/team.md "Users and budgets"); without either, it is the loopback user's.
    authorize: (request) =>
      options.accessToken === undefined
        ? deps.authenticate === undefined
        : isAuthorized(request, options.accessToken),
    tokenRequired: options.accessToken !== undefined || deps.authenticate !== undefined,
    hosts: [options.host],
    ...(deps.readSetup === undefined ? {} : { readSetup: deps.readSetup }),
    // Only a turn running in this process streams here; never load a conversation for it.
    readPending: async (conversationID) =>
      (await runner.inspect(conversationID, { liveOnly: true }))?.pending ?? null,
    readModels: () => {
      const health = deps.llm.health();
      return deps.llm.listModels().map((model) => ({
        name: model.name,
        fallbacks: model.fallbacks,
        maxConcurrent: model.maxConcurrent,
        health: health.find((entry) => entry.name === model.name) ?? null,
      }));
    },
    now,
  });

  const runSse = createRunSseHandler({
    open: openRunSse,
    connect,
    responder: options.runSseResponder ?? "direct",
    contentType: options.runSseContentType,
    maxEnvelopeBytes: Math.min(options.maxMessageBytes, MAX_RUN_SSE_REQUEST_BYTES),
    envelopeTimeoutMs: options.envelopeTimeoutMs,
    responses,
    log,
  });
  const bidiAppend = createBidiAppendHandler({
    apply: applyBidiAppend,
    connect,
    responder: options.bidiAppendResponder ?? "direct",
    maxMessageBytes: options.maxMessageBytes,
    log,
  });

  /** Every request that may be served goes here, after the host and token checks (or from the IDE proxy). */
  const dispatch = (request: Request, response: ServerResponse | Http2ServerResponse): void => {
    const path = pathOf(request);
    dashboard.noteClient(request);
    logRefusals(request, response, path, log);
    if (refuseOversized(request, response, options.maxMessageBytes)) {
      log.warn(
        { path, contentLength: request.headers["content-length"] },
        "request refused: body too large",
      );
      request.resume();
      return;
    }
    const alias = ALIASES[path];
    if (alias !== undefined) request.url = alias;
    if (path !== "/agent.v1.AgentService/RunSSE") {
      asClientFault(response, (detail) =>
        log.warn({ path, error: detail }, "request refused: the body is not a valid message"),
      );
      if ((alias ?? path) === BIDI_APPEND_PATH) bidiAppend(request, response);
      else {
        if (path === RUN_PATH) {
          responses.track(response);
          responses.viaConnect(request, response);
          // Its end must reach a client that has not read it yet (defer-early-reset.ts).
          if ("stream" in response) deferEarlyReset(response.stream);
        }
        connect(request, response as Parameters<typeof connect>[1]);
      }
      return;
    }
    // RunSSE needs no `asClientFault`: a bad body is refused there, and Connect answers a stream
    // with status 200 and the error in its end-of-stream message, never 500.
    runSse(request, response);
  };

  const isOwnHost = createHostCheck([options.host]);
  const health = createHealth(store);
  const routing = deps.cluster === undefined ? undefined : createClusterRouting(deps.cluster, log);
  /** `dispatch`, or the stream's owner instance when it lives elsewhere (either HTTP). */
  const route = (request: Request, response: ServerResponse | Http2ServerResponse): void => {
    if (routing === undefined) dispatch(request, response);
    else routing.serve(request, response, dispatch);
  };
  const handle = (request: Request, response: ServerResponse | Http2ServerResponse): void => {
    if (HEALTH_PATHS.has(pathOf(request))) {
      request.resume();
      health.serve(pathOf(request), response);
      return;
    }
    // Without a token, only requests naming this server by a loopback name or its own host are
    // answered (DNS rebinding; docs/dashboard.md). The IDE proxy calls `dispatch` directly.
    if (
      options.accessToken === undefined &&
      deps.authenticate === undefined &&
      !isOwnHost(request.headers)
    ) {
      request.resume();
      (response as Response).writeHead(421, { "content-type": "application/json" });
      (response as Response).end(
        JSON.stringify({
          code: "failed_precondition",
          message: "this server does not answer to that host name (use 127.0.0.1 or localhost)",
        }),
      );
      return;
    }
    // The dashboard checks the token itself: its page must load before the user has typed it.
    if (dashboard.handles(pathOf(request))) {
      dashboard.serve(request, response);
      return;
    }
    const { authenticate } = deps;
    if (options.accessToken !== undefined && isAuthorized(request, options.accessToken)) {
      // With users, the admin is said explicitly (request-user.ts), so that a check made
      // outside any request's context is not taken for the admin's (user-access.ts).
      if (deps.authenticate === undefined) route(request, response);
      else runAsAdmin(() => route(request, response));
      return;
    }
    const unauthenticated = (): void => {
      request.resume();
      writeConnectError(response, toProtocolError({ type: "unauthenticated" }));
    };
    if (authenticate === undefined) {
      if (options.accessToken === undefined) route(request, response);
      else unauthenticated();
      return;
    }
    const token = bearerOf(request);
    if (token === undefined) {
      unauthenticated();
      return;
    }
    // Looked up on every request, so a revoked token is refused at once on every instance.
    void authenticate(token).then(
      (user) => {
        if (user === null) unauthenticated();
        else runAsUser(user, () => route(request, response));
      },
      (error: unknown) => {
        log.error(
          { error: error instanceof Error ? error.message : String(error) },
          "could not check an access token",
        );
        // Our failure, not the client's: a 401 would tell it its token is bad.
        request.resume();
        writeConnectError(response, toProtocolError({ type: "token_check_failed" }));
      },
    );
  };

  const listener: Listener = await listen(handle, options.host, options.port, options.listen);
  const url = `http://${formatHost(listener.address)}:${listener.address.port}`;

  return {
    url,
    address: listener.address,
    // Routed like any request: only the owner instance serves a stream (served-here.ts).
    serveTrusted: route,
    servesProcedure: (path) => procedures.has(path),
    flushTurnBlobs: () => turnBlobs.flush(),
    async close() {
      health.drain();
      const closed = listener.close();
      // In this order, with nothing awaited in between: from here on no stream whose turn goes
      // on writes anything, and no model call commits anything.
      streams.hold();
      await runner.shutdown();
      // The ends of turns that are over reach their clients; then every connection is dropped.
      await responses.settled(END_WRITE_LIMIT_MS);
      listener.destroy();
      streams.closeAll("the server is shutting down");
      await closed;
      // The turn blobs written so far reach the store before the caller closes it.
      await turnBlobs.flush();
    },
  };
}

/** The paths `routes` answers, their aliases, and the IDE-mode default-model calls. */
function toProcedures(routes: (router: ConnectRouter) => void): ReadonlySet<string> {
  const router = createConnectRouter();
  routes(router);
  return new Set([
    ...router.handlers.map((handler) => handler.requestPath),
    ...Object.keys(ALIASES),
    ...LOCAL_IN_IDE_MODE,
  ]);
}

/**
 * What `servesProcedure` accepts, without a server: the IDE proxy of a team client sends exactly
 * these to the team server (docs/team.md "Clients"). Only the routes' paths are read; no handler
 * is built to run, so their dependencies are left out.
 */
export function listServedProcedures(): ReadonlySet<string> {
  const unused = undefined as never;
  return toProcedures(
    createRoutes(unused, unused, Date.now, unused, {
      openRunSse: unused,
      applyBidiAppend: unused,
      offerHttp2: false,
      pathEncryptionKeys: unused,
      helper: unused,
    }),
  );
}

function pathOf(request: Request): string {
  const url = request.url ?? "/";
  const query = url.indexOf("?");
  return query < 0 ? url : url.slice(0, query);
}

function bearerOf(request: Request): string | undefined {
  const header = request.headers.authorization;
  const value = Array.isArray(header) ? header[0] : header;
  return /^Bearer\s+(.+)$/i.exec(value ?? "")?.[1];
}

function isAuthorized(request: Request, token: string): boolean {
  const bearer = bearerOf(request);
  if (bearer === undefined) return false;
  const given = Buffer.from(bearer);
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * Logs the answers Connect gives a misbehaving client without calling our code: 415 (a content
 * type it does not speak) and 505 (a streaming procedure over HTTP/1.1 that needs HTTP/2).
 */
function logRefusals(request: Request, response: Response, path: string, log: Log): void {
  const writeHead = response.writeHead.bind(response);
  response.writeHead = (status, headers) => {
    if (status === 415 || status === 505) {
      log.warn(
        {
          path,
          status,
          contentType: String(request.headers["content-type"] ?? "").slice(0, 100),
          httpVersion: request.httpVersion,
        },
        status === 415
          ? "request refused: unsupported content type"
          : "request refused: unsupported HTTP version",
      );
    }
    return writeHead(status, headers);
  };
}

/** A Connect unary error: JSON body, HTTP status from the code (Connect protocol). */
function writeConnectError(response: Response, error: ConnectError): void {
  const status =
    error.code === Code.Unauthenticated
      ? 401
      : error.code === Code.Unimplemented
        ? 404
        : error.code === Code.Unavailable
          ? 503
          : 400;
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify({ code: codeName(error.code), message: error.rawMessage }));
}

function codeName(code: Code): string {
  return Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

function formatHost(address: AddressInfo): string {
  return address.family === "IPv6" ? `[${address.address}]` : address.address;
}
