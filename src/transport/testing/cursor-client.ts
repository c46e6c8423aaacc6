/**
 * A protocol-faithful test client: plays the Cursor IDE (or `cursor-agent`) against a server over
 * real HTTP, with the library the IDE uses (`@connectrpc/connect`, binary Connect protocol).
 * HTTP/1.1 uses RunSSE + BidiAppend, HTTP/2 the bidi Run (cleartext, prior knowledge). The
 * client keeps what the IDE keeps between turns: the blob store and the last checkpoint of
 * each conversation. See README.md.
 */
import { randomUUID } from "node:crypto";
import { Agent } from "node:http";
import type { SecureClientSessionOptions } from "node:http2";
import { join } from "node:path";
import { isMessage } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import type { UniversalClientFn } from "@connectrpc/connect/protocol";
import { createTransport as createConnectProtocolTransport } from "@connectrpc/connect/protocol-connect";
import {
  compressionBrotli,
  compressionGzip,
  createNodeHttpClient,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { type AgentServerMessage, AgentService } from "../cursor/gen/agent/v1/agent_stream_pb.js";
import type { ConversationStateStructure } from "../cursor/gen/agent/v1/conversation_state_pb.js";
import {
  type AgentRunRequest,
  AgentRunRequestSchema,
} from "../cursor/gen/agent/v1/run_request_pb.js";
import { AiService } from "../cursor/gen/aiserver/v1/ai_service_pb.js";
import { BidiService } from "../cursor/gen/aiserver/v1/bidi_pb.js";
import { type BackgroundShells, createBackgroundShells } from "./background-shells.ts";
import { type AppendForm, createRunChannel, createRunSseChannel } from "./channels.ts";
import type { TestMcpServer } from "./exec-mcp.ts";
import type { ExecOverride } from "./exec-runner.ts";
import type { QueryAnswerer } from "./interaction-answers.ts";
import { createRunRequest, type RunRequestInit } from "./run-request.ts";
import { type BlobWriteAnswerer, createTurn, type Turn } from "./turn.ts";

export interface CursorClientOptions {
  /** e.g. `http://127.0.0.1:4317`. */
  readonly baseUrl: string;
  /** 1.1: RunSSE + BidiAppend; 2: bidi Run over cleartext HTTP/2. */
  readonly httpVersion: "1.1" | "2";
  /** Over HTTP/2, RunSSE + BidiAppend instead of the bidi Run (as over HTTP/1.1). */
  readonly runSseOverHttp2?: boolean;
  /** Absolute path of the directory execs run in (a temp dir in tests). */
  readonly workspace: string;
  /** Sent on every call (e.g. `authorization`); `x-request-id` is added per turn. */
  readonly headers?: Readonly<Record<string, string>>;
  /** BidiAppend payload: lowercase hex in `data` (default) or raw bytes in `data_binary`. */
  readonly appendForm?: AppendForm;
  /** Gzip every request body (`content-encoding: gzip` on unary calls). Default false. */
  readonly gzip?: boolean;
  /** Send `stream_close` before the result of a non-streamed exec. Default false (after). */
  readonly streamCloseBeforeResult?: boolean;
  /** Answers interaction queries; default: first option / approve (interaction-answers.ts). */
  readonly answerQuery?: QueryAnswerer;
  /** Scripts exec results instead of running them (return undefined to run for real). */
  readonly onExec?: ExecOverride;
  /** Default time limit of a turn. Default 10 000 ms. */
  readonly timeoutMs?: number;
  /** HTTP/1.1: the connection pool (e.g. one that goes through a proxy). */
  readonly agent?: Agent;
  /** HTTP/2: options of the session (e.g. `createConnection` over a proxy tunnel). */
  readonly http2Session?: SecureClientSessionOptions;
  /**
   * Where background shells write `<shell id>.txt` (sent as `env.terminals_folder`). Default:
   * `.cursor-terminals` in the workspace, created on first use.
   */
  readonly terminalsFolder?: string;
  /**
   * MCP servers the client has: their resources and state answer execs 17, 18 and 36, and
   * their tools are sent with each run request (`mcp_tools`). Default none.
   */
  readonly mcpServers?: readonly TestMcpServer[];
  /**
   * Sees every server message of every turn as it arrives (e.g. to time the gaps between). A
   * promise it returns holds the reading of that turn's stream until it settles: the transport
   * reads nothing more meanwhile, as a client slower than the server (e.g. rendering).
   */
  readonly onMessage?: (message: AgentServerMessage) => Promise<void> | void;
  /** How blob writes are answered; default: stored and confirmed (turn.ts `BlobWriteAnswer`). */
  readonly answerBlobWrite?: BlobWriteAnswerer;
  /**
   * Whether `runRequest` sends the blobs its checkpoint references as `pre_fetched_blobs`
   * (whether the real IDE does is unverified, docs/protocol.md "Rewinds"). Default true.
   */
  readonly prefetchBlobs?: boolean;
}

/** `RunRequestInit` with the client's defaults: its workspace, and its last checkpoint. */
export type TurnInit = Omit<RunRequestInit, "workspace" | "checkpoint" | "blobs"> & {
  readonly workspace?: string;
  /** Default: the last checkpoint this client received for the conversation; null: none. */
  readonly checkpoint?: ConversationStateStructure | null;
};

export interface StartTurnOptions {
  /** Default: a fresh UUID. */
  readonly requestId?: string;
  readonly timeoutMs?: number;
}

export interface CursorClient {
  readonly workspace: string;
  /** A Connect client for the start-up RPCs (`GetServerConfig`, `AvailableModels`, …). */
  readonly ai: Client<typeof AiService>;
  /** Blobs the server stored with `set_blob_args` (hex SHA-256 id → bytes). */
  readonly blobs: ReadonlyMap<string, Uint8Array>;
  /** Shells running in the background (spawned, or moved there), alive across turns. */
  readonly backgroundShells: BackgroundShells;
  /** The last checkpoint received for a conversation. */
  checkpoint(conversationId: string): ConversationStateStructure | undefined;
  /** The run request for `init`, with the client's workspace, checkpoint and blobs. */
  runRequest(init: TurnInit): AgentRunRequest;
  /** Starts a turn: a built run request, or `TurnInit` (see `runRequest`). */
  startTurn(request: AgentRunRequest | TurnInit, options?: StartTurnOptions): Turn;
  /** Closes every open turn (their `done` rejects), kills shells, closes connections. */
  close(): Promise<void>;
}

const NO_BLOBS: ReadonlyMap<string, Uint8Array> = new Map();

export function createCursorClient(options: CursorClientOptions): CursorClient {
  const headers = options.headers ?? {};
  const withHeaders: Interceptor = (next) => (request) => {
    for (const [name, value] of Object.entries(headers)) request.header.set(name, value);
    return next(request);
  };
  const runSseTypes = new Map<string, string[]>();
  const { transport, release } = createTransport(options, withHeaders, (requestId, type) => {
    runSseTypes.set(requestId, [...(runSseTypes.get(requestId) ?? []), type]);
  });
  const agentClient: Client<typeof AgentService> = createClient(AgentService, transport);
  const bidiClient: Client<typeof BidiService> = createClient(BidiService, transport);
  const blobs = new Map<string, Uint8Array>();
  const backgroundShells = createBackgroundShells(
    options.terminalsFolder ?? join(options.workspace, ".cursor-terminals"),
  );
  const checkpoints = new Map<string, ConversationStateStructure>();
  const turns = new Set<Turn>();

  const runRequest = (init: TurnInit): AgentRunRequest => {
    const checkpoint =
      init.checkpoint === null
        ? undefined
        : (init.checkpoint ?? checkpoints.get(init.conversationId));
    return createRunRequest({
      terminalsFolder: backgroundShells.folder,
      ...(options.mcpServers === undefined
        ? {}
        : {
            mcpTools: options.mcpServers.flatMap((server) =>
              server.tools.map((tool) => ({ server: server.identifier, tool })),
            ),
          }),
      ...init,
      workspace: init.workspace ?? options.workspace,
      checkpoint,
      blobs: options.prefetchBlobs === false ? NO_BLOBS : blobs,
    });
  };

  return {
    workspace: options.workspace,
    ai: createClient(AiService, transport),
    blobs,
    backgroundShells,
    checkpoint: (conversationId) => checkpoints.get(conversationId),
    runRequest,
    startTurn(request, turnOptions = {}) {
      const built = isMessage(request, AgentRunRequestSchema) ? request : runRequest(request);
      const requestId = turnOptions.requestId ?? randomUUID();
      const channel =
        options.httpVersion === "1.1" || options.runSseOverHttp2 === true
          ? createRunSseChannel({
              agent: agentClient,
              bidi: bidiClient,
              requestId,
              form: options.appendForm ?? "hex",
            })
          : createRunChannel({ agent: agentClient, requestId });
      const turn = createTurn({
        requestId,
        runRequest: built,
        channel,
        workspace: options.workspace,
        timeoutMs: turnOptions.timeoutMs ?? options.timeoutMs ?? 10_000,
        streamCloseBeforeResult: options.streamCloseBeforeResult ?? false,
        answerQuery: options.answerQuery,
        onExec: options.onExec,
        background: backgroundShells,
        ...(options.mcpServers === undefined ? {} : { mcpServers: options.mcpServers }),
        ...(options.onMessage === undefined ? {} : { onMessage: options.onMessage }),
        ...(options.answerBlobWrite === undefined
          ? {}
          : { answerBlobWrite: options.answerBlobWrite }),
        blobs,
        runSseContentTypes: () => runSseTypes.get(requestId) ?? [],
        onCheckpoint: (checkpoint) => {
          if (built.conversationId !== undefined) checkpoints.set(built.conversationId, checkpoint);
        },
      });
      turns.add(turn);
      void turn.done.then(
        () => turns.delete(turn),
        () => turns.delete(turn),
      );
      return turn;
    },
    async close() {
      await Promise.all([...turns].map((turn) => turn.close("the test client was closed")));
      await backgroundShells.closeAll();
      release();
    },
  };
}

const RUN_SSE_PATH = "/agent.v1.AgentService/RunSSE";
const MAX_BYTES = 0xffffffff;

/**
 * The Connect transport (binary, as the IDE's) and its connection pool (an HTTP/1.1 agent or an
 * HTTP/2 session). A RunSSE response typed `text/event-stream` (binary Connect envelopes all the
 * same, the form docs/protocol.md §1.3 reports the IDE accepting) is read as Connect
 * streaming; `onRunSseType` gets each RunSSE response's content type as the server sent it.
 */
function createTransport(
  options: CursorClientOptions,
  interceptor: Interceptor,
  onRunSseType: (requestId: string, contentType: string) => void,
): { transport: Transport; release: () => void } {
  let base: UniversalClientFn;
  let release: () => void;
  if (options.httpVersion === "1.1") {
    const agent = options.agent ?? new Agent({ keepAlive: true });
    base = createNodeHttpClient({ httpVersion: "1.1", nodeOptions: { agent } });
    release = () => agent.destroy();
  } else {
    const sessionManager = new Http2SessionManager(
      options.baseUrl,
      undefined,
      options.http2Session,
    );
    base = createNodeHttpClient({ httpVersion: "2", sessionProvider: () => sessionManager });
    release = () => sessionManager.abort();
  }
  const httpClient: UniversalClientFn = async (request) => {
    const response = await base(request);
    if (new URL(request.url).pathname.endsWith(RUN_SSE_PATH)) {
      const contentType = response.header.get("content-type") ?? "";
      onRunSseType(request.header.get("x-request-id") ?? "", contentType);
      if (/^text\/event-stream\b/i.test(contentType)) {
        response.header.set("content-type", "application/connect+proto");
      }
    }
    return response;
  };
  const gzip = options.gzip === true;
  const transport = createConnectProtocolTransport({
    httpClient,
    baseUrl: options.baseUrl,
    useBinaryFormat: true,
    interceptors: [interceptor],
    acceptCompression: [compressionGzip, compressionBrotli],
    sendCompression: gzip ? compressionGzip : null,
    compressMinBytes: gzip ? 0 : 1024,
    readMaxBytes: MAX_BYTES,
    writeMaxBytes: MAX_BYTES,
  });
  return { transport, release };
}
