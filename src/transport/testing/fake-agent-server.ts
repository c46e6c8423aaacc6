/**
 * A small scripted stand-in for our server, to test the test client over real sockets on
 * 127.0.0.1. HTTP/1.1: RunSSE through the Connect router, BidiAppend read raw and decoded with
 * the dialect's `fromBidiAppendBody` (so the wire form — hex or data_binary, gzip, an absent
 * seqno 0 — is what is checked). HTTP/2: the bidi Run through the Connect router.
 *
 * One session per request id. Client messages are taken in seqno order (duplicates dropped,
 * gaps waited for). Server messages go to a backlog; a RunSSE connection resumes after the
 * last message a previous connection finished writing. The script starts when the run request
 * arrives. The first BidiAppend is answered only once a RunSSE connection has arrived, so a
 * client that does not open both at once hangs (and its test fails).
 */
import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { create, fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { fromBidiAppendBody } from "../cursor/bidi-append.ts";
import {
  type AgentClientMessage,
  type AgentServerMessage,
  AgentServerMessageSchema,
  AgentService,
} from "../cursor/gen/agent/v1/agent_stream_pb.js";
import type { AgentRunRequest } from "../cursor/gen/agent/v1/run_request_pb.js";
import { AiService } from "../cursor/gen/aiserver/v1/ai_service_pb.js";
import { BidiAppendRequestSchema } from "../cursor/gen/aiserver/v1/bidi_pb.js";
import { createWaiters } from "./waiters.ts";

const APPEND_PATH = "/aiserver.v1.BidiService/BidiAppend";
const RUN_SSE_PATH = "/agent.v1.AgentService/RunSSE";
const WAIT_MS = 5000;

export interface FakeAppend {
  readonly seqno: number;
  /** Whether field 3 (`append_seqno`) was on the wire. */
  readonly seqnoOnWire: boolean;
  readonly form: "hex" | "binary";
  readonly contentEncoding: string | undefined;
  readonly headers: http.IncomingHttpHeaders;
  readonly message: AgentClientMessage;
}

export type ServerMessageInit = MessageInitShape<typeof AgentServerMessageSchema>;

export interface FakeSession {
  readonly requestId: string;
  /** BidiAppends in arrival order (HTTP/1.1). */
  readonly appends: readonly FakeAppend[];
  /** Client messages in seqno order, each once. */
  readonly received: readonly AgentClientMessage[];
  /** Appends whose seqno was already taken. */
  readonly duplicates: number;
  /** Server messages pushed so far. */
  readonly outbox: readonly AgentServerMessage[];
  /** Downlink connections so far. */
  readonly connections: number;
  /** Request headers of each downlink connection. */
  readonly downlinkHeaders: readonly Headers[];
  readonly runRequest: AgentRunRequest | undefined;
  send(message: AgentServerMessage | ServerMessageInit): void;
  /** Ends the stream after the backlog, with `error` in the end-of-stream frame. */
  end(error?: ConnectError): void;
  /** The next received client message matching `predicate` (others are skipped). */
  next(predicate?: (message: AgentClientMessage) => boolean): Promise<AgentClientMessage>;
  /** Resolves when at least `count` downlink connections were opened. */
  waitForConnections(count: number): Promise<void>;
  /** Resolves when no downlink connection is open (the server noticed a drop). */
  waitForDetached(): Promise<void>;
  /** Resolves when the client appended at least `count` messages (arrival order). */
  waitForAppends(count: number): Promise<void>;
}

export type FakeScript = (session: FakeSession) => Promise<void>;

export interface FakeAgentServer {
  readonly baseUrl: string;
  readonly sessions: ReadonlyMap<string, FakeSession>;
  /** The first session that received a run request. */
  session(): Promise<FakeSession>;
  /** Errors thrown by scripts (a script that throws also ends its stream with `internal`). */
  readonly scriptErrors: readonly unknown[];
  close(): Promise<void>;
}

interface SessionInternals extends FakeSession {
  receive(seqno: number, message: AgentClientMessage): void;
  recordAppend(append: FakeAppend): void;
  stream(signal: AbortSignal, headers: Headers): AsyncGenerator<AgentServerMessage>;
  readonly downlinkSeen: Promise<void>;
}

export async function createFakeAgentServer(options: {
  readonly httpVersion: "1.1" | "2";
  readonly script: FakeScript;
  /** `event-stream` answers RunSSE as `text/event-stream` (Connect envelopes all the same). */
  readonly runSseContentType?: "connect" | "event-stream";
}): Promise<FakeAgentServer> {
  const sessions = new Map<string, SessionInternals>();
  const scriptErrors: unknown[] = [];
  const serverWaiters = createWaiters();
  let runCount = 0;

  const sessionFor = (requestId: string): SessionInternals => {
    let session = sessions.get(requestId);
    if (session === undefined) {
      session = createSession(requestId, (started) => {
        serverWaiters.changed();
        options.script(started).catch((error: unknown) => {
          scriptErrors.push(error);
          started.end(new ConnectError(`fake script failed: ${String(error)}`, Code.Internal));
        });
      });
      sessions.set(requestId, session);
    }
    return session;
  };

  const routes = (router: ConnectRouter): void => {
    router.service(AgentService, {
      async *runSSE(request, context) {
        yield* sessionFor(request.requestId).stream(context.signal, context.requestHeader);
      },
      async *run(requests, context) {
        runCount += 1;
        const session = sessionFor(`run-${runCount}`);
        void (async () => {
          let seqno = 0;
          for await (const message of requests) {
            session.receive(seqno, message);
            seqno += 1;
          }
        })().catch(() => {});
        yield* session.stream(context.signal, context.requestHeader);
      },
    });
    router.service(AiService, { getServerConfig: () => ({ configVersion: "fake" }) });
  };
  const adapter = connectNodeAdapter({ routes });

  const onAppend = async (
    request: http.IncomingMessage,
    response: http.ServerResponse,
  ): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = new Uint8Array(Buffer.concat(chunks));
    const contentEncoding = request.headers["content-encoding"];
    const decoded = fromBidiAppendBody({ body, contentEncoding, format: "binary" });
    if (!decoded.ok) {
      response.writeHead(400, { "content-type": "application/json" });
      response.end(JSON.stringify({ code: "invalid_argument", message: decoded.error.message }));
      return;
    }
    const raw = contentEncoding === "gzip" ? new Uint8Array(gunzipSync(body)) : body;
    const wire = fromBinary(BidiAppendRequestSchema, raw);
    const session = sessionFor(decoded.value.requestID);
    session.recordAppend({
      seqno: decoded.value.appendSeqno,
      seqnoOnWire: hasField(raw, 3),
      form: wire.dataBinary.length > 0 ? "binary" : "hex",
      contentEncoding,
      headers: request.headers,
      message: decoded.value.message,
    });
    if (decoded.value.appendSeqno === 0) await session.downlinkSeen;
    session.receive(decoded.value.appendSeqno, decoded.value.message);
    response.writeHead(200, { "content-type": "application/proto" });
    response.end();
  };

  const handler = (request: http.IncomingMessage, response: http.ServerResponse): void => {
    if (request.url === APPEND_PATH) {
      onAppend(request, response).catch(() => response.destroy());
      return;
    }
    if (request.url === RUN_SSE_PATH && options.runSseContentType === "event-stream") {
      const writeHead = response.writeHead.bind(response) as (
        status: number,
        headers: http.OutgoingHttpHeaders,
      ) => http.ServerResponse;
      response.writeHead = ((status: number, headers: http.OutgoingHttpHeaders = {}) =>
        writeHead(status, { ...headers, "content-type": "text/event-stream" })) as never;
    }
    adapter(request, response);
  };

  const h2Sessions = new Set<http2.ServerHttp2Session>();
  const server =
    options.httpVersion === "1.1"
      ? http.createServer(handler)
      : http2
          .createServer(
            adapter as (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
          )
          .on("session", (session) => {
            h2Sessions.add(session);
            session.once("close", () => h2Sessions.delete(session));
          });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    sessions,
    scriptErrors,
    session: () =>
      serverWaiters.until(
        () => [...sessions.values()].find((session) => session.runRequest !== undefined),
        "a session with a run request",
        WAIT_MS,
      ),
    close: () =>
      new Promise<void>((resolve) => {
        for (const session of sessions.values()) session.end();
        for (const session of h2Sessions) session.destroy();
        if (server instanceof http.Server) server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function createSession(
  requestId: string,
  onStart: (session: SessionInternals) => void,
): SessionInternals {
  const waiters = createWaiters();
  const appends: FakeAppend[] = [];
  const received: AgentClientMessage[] = [];
  const pending = new Map<number, AgentClientMessage>();
  const outbox: AgentServerMessage[] = [];
  const downlinkHeaders: Headers[] = [];
  let expected = 0;
  let duplicates = 0;
  let cursor = 0;
  let delivered = 0;
  let connections = 0;
  let attached = 0;
  let ended = false;
  let endError: ConnectError | undefined;
  let runRequest: AgentRunRequest | undefined;
  let wake = new Set<() => void>();
  let sawDownlink: () => void = () => {};
  const downlinkSeen = new Promise<void>((resolve) => {
    sawDownlink = resolve;
  });

  const changed = (): void => {
    const wakers = wake;
    wake = new Set();
    for (const resume of wakers) resume();
    waiters.changed();
  };

  const session: SessionInternals = {
    requestId,
    appends,
    received,
    outbox,
    downlinkHeaders,
    downlinkSeen,
    get duplicates() {
      return duplicates;
    },
    get connections() {
      return connections;
    },
    get runRequest() {
      return runRequest;
    },
    send(message) {
      if (ended) throw new Error("the fake stream has ended");
      outbox.push(
        create(AgentServerMessageSchema, message as ServerMessageInit) as AgentServerMessage,
      );
      changed();
    },
    end(error) {
      if (ended) return;
      ended = true;
      endError = error;
      changed();
    },
    next(predicate = () => true) {
      return waiters.until(
        () => {
          while (cursor < received.length) {
            const message = received[cursor] as AgentClientMessage;
            cursor += 1;
            if (predicate(message)) return message;
          }
          return undefined;
        },
        `a client message matching ${predicate.toString().slice(0, 100)}`,
        WAIT_MS,
      );
    },
    waitForConnections: (count) =>
      waiters
        .until(() => (connections >= count ? true : undefined), `${count} connections`, WAIT_MS)
        .then(() => undefined),
    waitForDetached: () =>
      waiters
        .until(() => (attached === 0 ? true : undefined), "no open downlink", WAIT_MS)
        .then(() => undefined),
    waitForAppends: (count) =>
      waiters
        .until(() => (appends.length >= count ? true : undefined), `${count} appends`, WAIT_MS)
        .then(() => undefined),
    recordAppend(append) {
      appends.push(append);
      changed();
    },
    receive(seqno, message) {
      if (seqno < expected || pending.has(seqno)) {
        duplicates += 1;
        changed();
        return;
      }
      pending.set(seqno, message);
      while (pending.has(expected)) {
        const next = pending.get(expected) as AgentClientMessage;
        pending.delete(expected);
        expected += 1;
        received.push(next);
        if (runRequest === undefined && next.message.case === "runRequest") {
          runRequest = next.message.value;
          onStart(session);
        }
      }
      changed();
    },
    async *stream(signal, headers) {
      connections += 1;
      downlinkHeaders.push(headers);
      attached += 1;
      sawDownlink();
      changed();
      try {
        yield* follow(signal);
      } finally {
        attached -= 1;
        changed();
      }
    },
  };

  async function* follow(signal: AbortSignal): AsyncGenerator<AgentServerMessage> {
    let index = delivered;
    while (!signal.aborted) {
      if (index < outbox.length) {
        yield outbox[index] as AgentServerMessage;
        index += 1;
        delivered = Math.max(delivered, index);
        continue;
      }
      if (ended) {
        if (endError !== undefined) throw endError;
        return;
      }
      await new Promise<void>((resolve) => {
        const resume = (): void => {
          signal.removeEventListener("abort", resume);
          resolve();
        };
        wake.add(resume);
        signal.addEventListener("abort", resume, { once: true });
      });
    }
  }
  return session;
}

/** Whether a top-level field is present in serialized protobuf bytes. */
function hasField(bytes: Uint8Array, fieldNo: number): boolean {
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const [no, wireType] = reader.tag();
    if (no === fieldNo) return true;
    reader.skip(wireType);
  }
  return false;
}
