/**
 * One agent turn as the IDE plays it (docs/protocol.md §3): the run request goes up at append
 * seqno 0 while the downlink opens (neither waits for the other); every server message is
 * recorded in order and answered (execs run for real, interaction queries answered, blobs
 * stored, checkpoints kept); every further client message goes up in order, each awaited
 * before the next. The turn ends when the server ends the stream; `done` then resolves with
 * the end-of-stream error, if any. Everything is bounded by the turn's timeout.
 *
 * Why one file of about 500 lines: one turn as the IDE plays it, a single loop over the server's
 * messages with the answer to each kind beside it.
 */
import { create, isMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import {
  type AgentClientMessage,
  AgentClientMessageSchema,
  type AgentServerMessage,
} from "../cursor/gen/agent/v1/agent_stream_pb.js";
import type { ConversationStateStructure } from "../cursor/gen/agent/v1/conversation_state_pb.js";
import type { InteractionQuery } from "../cursor/gen/agent/v1/interaction_query_pb.js";
import type { KvServerMessage } from "../cursor/gen/agent/v1/kv_pb.js";
import type { AgentRunRequest } from "../cursor/gen/agent/v1/run_request_pb.js";
import type { BackgroundShells } from "./background-shells.ts";
import { toBlobKey } from "./blob-clone.ts";
import type { Downlink, TurnChannel } from "./channels.ts";
import type { TestMcpServer } from "./exec-mcp.ts";
import { createExecRunner, type ExecOverride } from "./exec-runner.ts";
import { type QueryAnswerer, toDefaultAnswer } from "./interaction-answers.ts";
import { type TurnView, toKind, toTurnView } from "./turn-view.ts";
import { createWaiters } from "./waiters.ts";

/** A client message the server accepted (HTTP/1.1: its BidiAppend answered 200). */
export interface SentMessage {
  /** The append seqno (HTTP/2: the message's position in the request stream). */
  readonly seqno: number;
  /** A short name, e.g. `runRequest`, `exec:readResult`, `shell:stdout`, `streamClose`. */
  readonly kind: string;
  readonly message: AgentClientMessage;
}

export interface AppendFailure {
  readonly seqno: number;
  readonly kind: string;
  readonly error: ConnectError;
}

export interface TurnResult {
  /** Every server message, in order, across all downlink connections. */
  readonly messages: readonly AgentServerMessage[];
  /** The end-of-stream error (e.g. `Code.Canceled` after a cancel); absent on success. */
  readonly error?: ConnectError;
  readonly appendErrors: readonly AppendFailure[];
  readonly view: TurnView;
}

/** The turn did not end within its timeout; `done` rejects with it. */
export class TurnTimeoutError extends Error {
  override readonly name = "TurnTimeoutError";
}

export interface WaitOptions {
  /** Default: until the turn ends or times out. */
  readonly timeoutMs?: number;
  /** Only messages at this index or later count. Default 0. */
  readonly from?: number;
}

export type ClientMessageInit = MessageInitShape<typeof AgentClientMessageSchema>;

export interface Turn {
  readonly requestId: string;
  readonly transport: "runsse" | "run";
  readonly runRequest: AgentRunRequest;
  /** Server messages so far, in order (live). */
  readonly messages: readonly AgentServerMessage[];
  /** Client messages the server accepted, in order (live). */
  readonly sent: readonly SentMessage[];
  readonly appendErrors: readonly AppendFailure[];
  /** RunSSE connections opened so far (HTTP/2: 1). */
  readonly connections: number;
  /**
   * The content type of each RunSSE response as the server sent it (`application/connect+proto`
   * or `text/event-stream`; both are read as Connect streaming). HTTP/2: empty.
   */
  readonly runSseContentTypes: readonly string[];
  /** The latest `conversation_checkpoint_update`. */
  readonly checkpoint: ConversationStateStructure | undefined;
  readonly ended: boolean;
  /** Resolves when the server ends the stream; rejects on timeout or `close()`. */
  readonly done: Promise<TurnResult>;
  view(): TurnView;
  /** The first server message (from `from`) matching `predicate`; now or when it arrives. */
  waitFor(
    predicate: (message: AgentServerMessage, index: number) => boolean,
    options?: WaitOptions,
  ): Promise<AgentServerMessage>;
  /** The first accepted client message matching `predicate`. */
  waitForSent(
    predicate: (sent: SentMessage) => boolean,
    options?: WaitOptions,
  ): Promise<SentMessage>;
  /** Queues a client message at the next seqno; resolves with it once accepted. */
  send(message: AgentClientMessage | ClientMessageInit): Promise<number>;
  /** `conversation_action.cancel_action{reason}`. */
  cancel(reason?: string): Promise<void>;
  /** `client_heartbeat{}`. */
  heartbeat(): Promise<void>;
  /** Takes the next seqno without sending (to send out of order with `appendAt`). */
  reserveSeqno(): number;
  /**
   * HTTP/1.1: one BidiAppend at an explicit seqno, now, outside the ordered queue (duplicates,
   * gaps, out-of-order). Rejects with the server's error.
   */
  appendAt(seqno: number, message: AgentClientMessage | ClientMessageInit): Promise<void>;
  /**
   * HTTP/1.1: closes the RunSSE connection, now or right after the first later message that
   * matches `when`; resolves once it is closed. The turn goes on; execs keep running.
   */
  dropRunSse(when?: (message: AgentServerMessage) => boolean): Promise<void>;
  /** HTTP/1.1: opens a new RunSSE connection with the same request id. */
  reconnectRunSse(): void;
  /**
   * Resolves when a RunSSE connection fails without an end of stream (the server died); the
   * turn goes on and `reconnectRunSse()` may follow.
   */
  runSseLost(): Promise<ConnectError>;
  /** Aborts everything in flight; `done` rejects unless the turn already ended. */
  close(reason?: string): Promise<void>;
}

/**
 * How the client answers one blob write: `store` (the IDE's way: stored, `set_blob_result{}`),
 * `ignore` (never answered), or `{ error }` (not stored, `set_blob_result{error}`). A write whose
 * id is not the SHA-256 of its data is refused with an error whatever this says, as the IDE's
 * content-addressed store would.
 */
export type BlobWriteAnswer = "store" | "ignore" | { readonly error: string };
export type BlobWriteAnswerer = (id: Uint8Array, data: Uint8Array) => BlobWriteAnswer;

export interface TurnOptions {
  readonly requestId: string;
  readonly runRequest: AgentRunRequest;
  readonly channel: TurnChannel;
  readonly workspace: string;
  readonly timeoutMs: number;
  readonly streamCloseBeforeResult: boolean;
  readonly answerQuery?: QueryAnswerer;
  readonly onExec?: ExecOverride;
  /**
   * Sees every server message as it arrives; a promise it returns holds the reading of the
   * stream until it settles (a slow client).
   */
  readonly onMessage?: (message: AgentServerMessage) => Promise<void> | void;
  /** The client's blob store (hex SHA-256 → bytes), shared by its turns. */
  readonly blobs: Map<string, Uint8Array>;
  /** How a `set_blob_args` is answered (default: stored and confirmed); see `BlobWriteAnswer`. */
  readonly answerBlobWrite?: BlobWriteAnswerer;
  /** The client's background shells (exec 16, 23, 30 and BACKGROUND time-outs). */
  readonly background?: BackgroundShells;
  /** The client's MCP servers (resources and state, exec 17, 18, 36). */
  readonly mcpServers?: readonly TestMcpServer[];
  readonly onCheckpoint: (checkpoint: ConversationStateStructure) => void;
  /** Content types of this turn's RunSSE responses so far, as the server sent them. */
  readonly runSseContentTypes: () => readonly string[];
}

export function createTurn(options: TurnOptions): Turn {
  const { channel, requestId, blobs } = options;
  const messages: AgentServerMessage[] = [];
  const sent: SentMessage[] = [];
  const appendErrors: AppendFailure[] = [];
  const waiters = createWaiters();
  const seenExecs = new Set<string>();
  const seenQueries = new Set<number>();
  const seenKv = new Set<number>();
  const dropTriggers: Array<{
    readonly when: (message: AgentServerMessage) => boolean;
    readonly fire: () => void;
    readonly fail: (error: Error) => void;
  }> = [];
  let checkpoint: ConversationStateStructure | undefined;
  let nextSeqno = 0;
  let tail: Promise<unknown> = Promise.resolve();
  let accepting = true;
  let ended = false;
  let settled = false;
  let connections = 0;
  let downlink: Downlink | null = null;
  const lostWaiters: ((error: ConnectError) => void)[] = [];
  let settle: { resolve: (r: TurnResult) => void; reject: (e: Error) => void } | null = null;
  const done = new Promise<TurnResult>((resolve, reject) => {
    settle = { resolve, reject };
  });
  done.catch(() => {});

  const deliver = async (seqno: number, message: AgentClientMessage): Promise<void> => {
    const kind = toClientKind(message);
    try {
      await channel.deliver(message, seqno);
    } catch (error) {
      appendErrors.push({ seqno, kind, error: ConnectError.from(error) });
      waiters.changed();
      throw ConnectError.from(error);
    }
    sent.push({ seqno, kind, message });
    waiters.changed();
  };

  const enqueue = (message: AgentClientMessage): Promise<number> => {
    const seqno = nextSeqno;
    nextSeqno += 1;
    const result = tail.then(() => deliver(seqno, message)).then(() => seqno);
    tail = result.catch(() => {});
    return result;
  };

  /** Automatic replies stop when the stream ended; their failures are in `appendErrors`. */
  const reply = (message: AgentClientMessage): void => {
    if (accepting) enqueue(message).catch(() => {});
  };

  const execs = createExecRunner({
    workspace: options.workspace,
    streamCloseBeforeResult: options.streamCloseBeforeResult,
    onExec: options.onExec,
    send: reply,
    ...(options.background === undefined ? {} : { background: options.background }),
    ...(options.mcpServers === undefined ? {} : { mcpServers: options.mcpServers }),
  });

  const answer = async (query: InteractionQuery): Promise<void> => {
    const chosen = await options.answerQuery?.(query);
    const result = chosen === undefined ? toDefaultAnswer(query) : chosen;
    if (result === null) return;
    reply(
      create(AgentClientMessageSchema, {
        message: { case: "interactionResponse", value: { id: query.id, result } },
      }),
    );
  };

  const kv = (message: KvServerMessage): void => {
    const branch = message.message;
    if (branch.case === "setBlobArgs") {
      const { blobId, blobData } = branch.value;
      const key = Buffer.from(blobId).toString("hex");
      const answer =
        toBlobKey(blobData) === key
          ? (options.answerBlobWrite?.(blobId, blobData) ?? "store")
          : { error: "blob id is not the SHA-256 of its data" };
      if (answer === "ignore") return;
      // The IDE's store writes asynchronously and answers once the write is done: a blob is
      // there only after this turn of the event loop, so a checkpoint sent right behind its
      // blob writes, without waiting for the answers, does not find it (blob-clone.ts).
      setImmediate(() => {
        if (answer === "store") blobs.set(key, blobData);
        reply(
          create(AgentClientMessageSchema, {
            message: {
              case: "kvClientMessage",
              value: {
                id: message.id,
                message: {
                  case: "setBlobResult",
                  value: answer === "store" ? {} : { error: { message: answer.error } },
                },
              },
            },
          }),
        );
      });
    } else if (branch.case === "getBlobArgs") {
      const data = blobs.get(Buffer.from(branch.value.blobId).toString("hex"));
      reply(
        create(AgentClientMessageSchema, {
          message: {
            case: "kvClientMessage",
            value: {
              id: message.id,
              message: {
                case: "getBlobResult",
                value:
                  data === undefined
                    ? { error: { message: "blob not found" } }
                    : { blobData: data },
              },
            },
          },
        }),
      );
    }
  };

  const onMessage = (message: AgentServerMessage): Promise<void> | void => {
    if (ended) return undefined;
    messages.push(message);
    const held = options.onMessage?.(message);
    const branch = message.message;
    switch (branch.case) {
      case "execServerMessage": {
        const key = `${branch.value.id}/${branch.value.execId}`;
        if (!seenExecs.has(key)) {
          seenExecs.add(key);
          void execs.run(branch.value);
        }
        break;
      }
      case "execServerControlMessage":
        if (branch.value.message.case === "abort") execs.abort(branch.value.message.value.id);
        break;
      case "interactionQuery":
        if (!seenQueries.has(branch.value.id)) {
          seenQueries.add(branch.value.id);
          void answer(branch.value).catch(() => {});
        }
        break;
      case "kvServerMessage":
        if (!seenKv.has(branch.value.id)) {
          seenKv.add(branch.value.id);
          kv(branch.value);
        }
        break;
      case "conversationCheckpointUpdate":
        checkpoint = branch.value;
        options.onCheckpoint(branch.value);
        break;
      default:
        break;
    }
    for (const trigger of [...dropTriggers]) {
      if (trigger.when(message)) {
        dropTriggers.splice(dropTriggers.indexOf(trigger), 1);
        trigger.fire();
      }
    }
    waiters.changed();
    return held;
  };

  const describe = (): string => {
    const kinds = messages.map(toKind);
    const shown = kinds.length > 30 ? ["…", ...kinds.slice(-30)] : kinds;
    return `turn ${requestId}: ${messages.length} server messages [${shown.join(", ")}], ${sent.length} client messages accepted, ${appendErrors.length} refused`;
  };

  const finish = async (error: ConnectError | undefined): Promise<void> => {
    if (ended) return;
    ended = true;
    accepting = false;
    await execs.stop();
    await tail;
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    waiters.end((what) => new Error(`the stream ended before ${what}; ${describe()}`));
    for (const trigger of dropTriggers.splice(0)) {
      trigger.fail(new Error(`the stream ended before the drop condition matched; ${describe()}`));
    }
    settle?.resolve({
      messages,
      ...(error === undefined ? {} : { error }),
      appendErrors,
      view: toTurnView(messages),
    });
  };

  /** Stops everything now (timeout, close): `done` rejects with `error`. */
  const abort = async (error: Error): Promise<void> => {
    if (settled) return;
    settled = true;
    ended = true;
    accepting = false;
    clearTimeout(timer);
    channel.close();
    waiters.end((what) => new Error(`${error.message} (while waiting for ${what})`));
    for (const trigger of dropTriggers.splice(0)) trigger.fail(error);
    settle?.reject(error);
    await execs.stop();
  };

  const connect = (): void => {
    connections += 1;
    const current = channel.openDownlink(onMessage);
    downlink = current;
    waiters.changed();
    void current.ended.then((end) => {
      if (downlink === current) downlink = null;
      if (end.type === "ended") void finish(end.error);
      if (end.type === "lost") for (const notify of lostWaiters.splice(0)) notify(end.error);
      waiters.changed();
    });
  };

  const timer = setTimeout(() => {
    void abort(
      new TurnTimeoutError(`the turn did not end within ${options.timeoutMs} ms; ${describe()}`),
    );
  }, options.timeoutMs);

  const toMessage = (message: AgentClientMessage | ClientMessageInit): AgentClientMessage =>
    isMessage(message, AgentClientMessageSchema)
      ? message
      : create(AgentClientMessageSchema, message);

  const requireRunSse = (what: string): void => {
    if (channel.transport !== "runsse") throw new Error(`${what} needs the HTTP/1.1 transport`);
  };

  // The IDE fires both at once: neither the append nor the downlink waits for the other.
  enqueue(
    create(AgentClientMessageSchema, {
      message: { case: "runRequest", value: options.runRequest },
    }),
  ).catch(() => {});
  connect();

  return {
    requestId,
    transport: channel.transport,
    runRequest: options.runRequest,
    messages,
    sent,
    appendErrors,
    get connections() {
      return connections;
    },
    get runSseContentTypes() {
      return options.runSseContentTypes();
    },
    get checkpoint() {
      return checkpoint;
    },
    get ended() {
      return ended;
    },
    done,
    view: () => toTurnView(messages),
    waitFor(predicate, wait = {}) {
      const from = wait.from ?? 0;
      return waiters.until(
        () => messages.find((message, index) => index >= from && predicate(message, index)),
        `a server message matching ${predicate.toString().slice(0, 120)}`,
        wait.timeoutMs ?? options.timeoutMs,
      );
    },
    waitForSent(predicate, wait = {}) {
      const from = wait.from ?? 0;
      return waiters.until(
        () => sent.find((entry, index) => index >= from && predicate(entry)),
        `a sent client message matching ${predicate.toString().slice(0, 120)}`,
        wait.timeoutMs ?? options.timeoutMs,
      );
    },
    send: (message) => enqueue(toMessage(message)),
    async cancel(reason = "user canceled") {
      await enqueue(
        create(AgentClientMessageSchema, {
          message: {
            case: "conversationAction",
            value: { action: { case: "cancelAction", value: { reason } } },
          },
        }),
      );
    },
    async heartbeat() {
      await enqueue(
        create(AgentClientMessageSchema, { message: { case: "clientHeartbeat", value: {} } }),
      );
    },
    reserveSeqno() {
      const seqno = nextSeqno;
      nextSeqno += 1;
      return seqno;
    },
    appendAt(seqno, message) {
      requireRunSse("appendAt");
      return deliver(seqno, toMessage(message));
    },
    dropRunSse(when) {
      requireRunSse("dropRunSse");
      if (when === undefined) {
        const current = downlink;
        if (current === null) return Promise.reject(new Error("no RunSSE connection is open"));
        current.drop();
        return current.ended.then(() => undefined);
      }
      if (ended) return Promise.reject(new Error("the turn has ended"));
      const dropped = new Promise<void>((resolve, reject) => {
        dropTriggers.push({
          when,
          fail: reject,
          fire: () => {
            const current = downlink;
            if (current === null) return resolve();
            current.drop();
            void current.ended.then(() => resolve());
          },
        });
      });
      dropped.catch(() => {});
      return dropped;
    },
    reconnectRunSse() {
      requireRunSse("reconnectRunSse");
      if (ended) throw new Error("the turn has ended");
      if (downlink !== null) throw new Error("a RunSSE connection is still open");
      connect();
    },
    runSseLost: () => new Promise((resolve) => lostWaiters.push(resolve)),
    close: (reason = "the test client closed the turn") => abort(new Error(reason)),
  };
}

/** A short name for a client message, for logs and `waitForSent`. */
export function toClientKind(message: AgentClientMessage): string {
  const branch = message.message;
  switch (branch.case) {
    case "execClientMessage": {
      const result = branch.value.message;
      if (result.case === "shellStream") return `shell:${result.value.event.case ?? "?"}`;
      return `exec:${result.case ?? "?"}`;
    }
    case "execClientControlMessage":
      return branch.value.message.case ?? "execControl";
    case "conversationAction":
      return branch.value.action.case ?? "conversationAction";
    case "kvClientMessage":
      return `kv:${branch.value.message.case ?? "?"}`;
    default:
      return branch.case ?? "unknown";
  }
}
