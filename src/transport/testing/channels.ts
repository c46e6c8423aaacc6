/**
 * The two ways the IDE carries one agent stream (docs/protocol.md §1.1–1.4):
 * - HTTP/1.1: server messages come down `AgentService/RunSSE` (one connection at a time, can
 *   be dropped and reopened with the same request id); every client message goes up as its own
 *   unary `BidiService/BidiAppend` with `append_seqno` (0 is absent on the wire, as in proto3)
 *   and the message as lowercase hex in `data` or raw in `data_binary`.
 * - HTTP/2: one bidi `AgentService/Run`; client messages are the request stream.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { type Client, ConnectError } from "@connectrpc/connect";
import {
  type AgentClientMessage,
  AgentClientMessageSchema,
  type AgentServerMessage,
  type AgentService,
} from "../cursor/gen/agent/v1/agent_stream_pb.js";
import { BidiAppendRequestSchema, type BidiService } from "../cursor/gen/aiserver/v1/bidi_pb.js";
import { createMessageQueue } from "./message-queue.ts";

export type AppendForm = "hex" | "binary";

/** How one downlink connection ended: by the server (end of stream, maybe an error) or by us. */
export type DownlinkEnd =
  | { readonly type: "ended"; readonly error?: ConnectError }
  | { readonly type: "dropped" }
  /** The connection failed without an end of stream (e.g. the server process died). */
  | { readonly type: "lost"; readonly error: ConnectError };

export interface Downlink {
  readonly ended: Promise<DownlinkEnd>;
  /** Closes this connection from the client side (its `ended` then says `dropped`). */
  drop(): void;
}

export interface TurnChannel {
  readonly transport: "runsse" | "run";
  /**
   * Sends one client message. HTTP/1.1: a BidiAppend at `seqno`, resolved when the server
   * answered (rejected with its ConnectError). HTTP/2: resolved when the transport took it.
   */
  deliver(message: AgentClientMessage, seqno: number): Promise<void>;
  /**
   * Opens a downlink; `onMessage` gets every server message in order, and a promise it returns
   * holds the reading of the stream until it settles (a client slower than the server). HTTP/2:
   * once only.
   */
  openDownlink(onMessage: (message: AgentServerMessage) => Promise<void> | void): Downlink;
  /** Ends the request side and aborts every call still in flight. */
  close(): void;
}

export interface RunSseChannelOptions {
  readonly agent: Client<typeof AgentService>;
  readonly bidi: Client<typeof BidiService>;
  readonly requestId: string;
  readonly form: AppendForm;
}

export function createRunSseChannel(options: RunSseChannelOptions): TurnChannel {
  const { agent, bidi, requestId, form } = options;
  const headers = { "x-request-id": requestId };
  const appends = new AbortController();
  const downlinks = new Set<AbortController>();
  return {
    transport: "runsse",
    deliver(message, seqno) {
      const payload = toBinary(AgentClientMessageSchema, message);
      const request = create(BidiAppendRequestSchema, {
        requestId: { requestId },
        appendSeqno: BigInt(seqno),
      });
      if (form === "hex") request.data = Buffer.from(payload).toString("hex");
      else request.dataBinary = payload;
      return bidi.bidiAppend(request, { headers, signal: appends.signal }).then(() => undefined);
    },
    openDownlink(onMessage) {
      const controller = new AbortController();
      downlinks.add(controller);
      const ended = (async (): Promise<DownlinkEnd> => {
        try {
          const stream = agent.runSSE({ requestId }, { headers, signal: controller.signal });
          for await (const message of stream) {
            if (controller.signal.aborted) break;
            const held = onMessage(message);
            if (held !== undefined) await held;
          }
          return controller.signal.aborted ? { type: "dropped" } : { type: "ended" };
        } catch (error) {
          if (controller.signal.aborted) return { type: "dropped" };
          const failure = ConnectError.from(error);
          return isConnectionLost(failure)
            ? { type: "lost", error: failure }
            : { type: "ended", error: failure };
        } finally {
          downlinks.delete(controller);
        }
      })();
      return { ended, drop: () => controller.abort() };
    },
    close() {
      appends.abort();
      for (const controller of downlinks) controller.abort();
    },
  };
}

export interface RunChannelOptions {
  readonly agent: Client<typeof AgentService>;
  /** Sent as `x-request-id` (the Run stream carries no request id of its own). */
  readonly requestId: string;
}

export function createRunChannel(options: RunChannelOptions): TurnChannel {
  const requests = createMessageQueue<AgentClientMessage>();
  const controller = new AbortController();
  let opened = false;
  return {
    transport: "run",
    deliver: (message) => requests.push(message),
    openDownlink(onMessage) {
      if (opened) throw new Error("the HTTP/2 Run stream cannot be reopened");
      opened = true;
      const ended = (async (): Promise<DownlinkEnd> => {
        try {
          const stream = options.agent.run(requests, {
            headers: { "x-request-id": options.requestId },
            signal: controller.signal,
          });
          for await (const message of stream) {
            if (controller.signal.aborted) break;
            const held = onMessage(message);
            if (held !== undefined) await held;
          }
          return controller.signal.aborted ? { type: "dropped" } : { type: "ended" };
        } catch (error) {
          if (controller.signal.aborted) return { type: "dropped" };
          return { type: "ended", error: ConnectError.from(error) };
        } finally {
          requests.close();
        }
      })();
      return { ended, drop: () => controller.abort() };
    },
    close() {
      requests.close();
      controller.abort();
    },
  };
}

const LOST_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "EPIPE",
  "ERR_STREAM_PREMATURE_CLOSE",
  "UND_ERR_SOCKET",
]);

/**
 * True when the failure is the connection's, not an end of stream the server sent: errors parsed
 * from an end frame carry no cause, transport failures carry the socket's error. Over HTTP/2 a
 * connection that goes away resets its streams (`CANCEL` when the server's socket closes),
 * which Connect reports by the reset code: the server sent no end of stream either.
 */
function isConnectionLost(error: ConnectError): boolean {
  if (error.rawMessage.startsWith("http/2 stream closed with error code")) return true;
  let cause: unknown = error.cause;
  for (let depth = 0; depth < 5 && cause instanceof Error; depth += 1) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string" && LOST_CODES.has(code)) return true;
    if (/socket hang up|premature close|other side closed/i.test(cause.message)) return true;
    cause = cause.cause;
  }
  return false;
}
