/**
 * The agent stream's public shape (agent-stream.ts assembles it from the parts in this folder).
 */
import type { ConnectError } from "@connectrpc/connect";
import type { LLM } from "../../llm/index.ts";
import type { Runner } from "../../runner/types.ts";
import type { AgentClientMessage, AgentServerMessage } from "../cursor/index.ts";
import type { Log } from "../log.ts";
import type { OutboundReader, OutboundStream } from "../outbound-stream.ts";
import type { TurnBlobOrigins } from "../turn-blob-origins.ts";
import type { UserCommands } from "../user-commands.ts";
import type { WebTools } from "../web-work.ts";

export interface AgentStreamOptions {
  readonly heartbeatMs: number;
  /** How long a dropped RunSSE may take to come back before the turn is canceled. */
  readonly reconnectGraceMs: number;
  /** How long an early append waits for the ones before it. */
  readonly appendGapTimeoutMs: number;
  /** How far ahead of the next expected seqno an append may be. */
  readonly maxAppendsAhead: number;
  /**
   * After a restart, how long a tool call with effects whose outcome is unknown waits for the
   * client's late result before the model is told the outcome is unknown (it is never re-run).
   */
  readonly lateResultGraceMs: number;
  /**
   * Whether consecutive read-only tool calls of one response run on the client at once
   * (src/loop/tool-batch.ts); false runs every call alone. Default true.
   */
  readonly parallelTools?: boolean;
  /**
   * The model each subagent type runs on (`subagents.models` of the configuration), by type name
   * (`explore`, `general`, a custom subagent's name); a type not listed runs on the parent's.
   */
  readonly subagentModels?: Readonly<Record<string, string>>;
  /**
   * Subagents running at once on one stream (`subagents.maxConcurrent`); a task call beyond gets
   * an error result saying so. Default `DEFAULT_SUBAGENT_MAX_CONCURRENT`.
   */
  readonly subagentMaxConcurrent?: number;
  /**
   * Model calls one subagent makes on a stream before it is stopped (`subagents.maxSteps`); the
   * parent gets an error result with its last text. Default `DEFAULT_SUBAGENT_MAX_STEPS`.
   */
  readonly subagentMaxSteps?: number;
  /**
   * Whether checkpoints are blob-backed (their turns written to the client's store first, as
   * the IDE's fork and "duplicate chat" need; docs/protocol.md §2.10). Default true; false sends
   * every checkpoint inline.
   */
  readonly blobCheckpoints?: boolean;
  /**
   * How long a checkpoint waits for the client to confirm its blob writes before it, and every
   * later one of the stream, goes inline. Default `DEFAULT_BLOB_WRITE_TIMEOUT_MS` (10 s).
   */
  readonly blobWriteTimeoutMs?: number;
  /**
   * How long a read of a client blob (`get_blob_args`) waits for its answer while a reader is
   * attached before it counts as not found. Default `DEFAULT_BLOB_READ_TIMEOUT_MS` (3 s); never
   * longer than the write timeout.
   */
  readonly blobReadTimeoutMs?: number;
}

export const DEFAULT_SUBAGENT_MAX_CONCURRENT = 4;
export const DEFAULT_SUBAGENT_MAX_STEPS = 50;

export interface AgentStreamDeps {
  readonly runner: Runner;
  readonly models: Pick<LLM, "listModels" | "findModel">;
  readonly now: () => number;
  readonly log: Log;
  readonly options: AgentStreamOptions;
  /** The web tools (web_search, web_fetch) the server runs itself; none when absent. */
  readonly web?: WebTools;
  /** Called once the stream has ended and no subscriber is attached (for cleanup). */
  readonly onSettled?: (stream: AgentStream) => void;
  /** Shell commands users ran themselves, handed to the conversation's next turn. */
  readonly userCommands?: UserCommands;
  /**
   * The turn blobs the server wrote to clients, recorded in the store (turn-blob-origins.ts):
   * the last turn of a checkpoint the client sends without its blob. Absent: only blobs the
   * client sends back are read.
   */
  readonly turnBlobs?: TurnBlobOrigins;
}

/**
 * Its members are methods shared by every instance: call them on the object, never pass them on
 * (bind or wrap in an arrow).
 */
export interface AgentStream {
  readonly requestID: string;
  readonly outbound: OutboundStream<AgentServerMessage>;
  readonly conversationID: string | null;
  /** Applies one client message that arrived with `seqno`; rejects with a `ConnectError`. */
  append(seqno: number, message: AgentClientMessage): Promise<void>;
  /**
   * The server messages, from where the previous subscriber left off; see outbound-stream.ts
   * (`onHeld`: what the generator awaits when the stream is held at shutdown).
   */
  subscribe(
    signal: AbortSignal,
    onHeld?: () => Promise<void>,
  ): AsyncGenerator<AgentServerMessage, void, undefined>;
  /** The same as a pull reader, for the direct RunSSE responder (outbound-stream.ts `read`). */
  read(signal?: AbortSignal): OutboundReader<AgentServerMessage>;
  /**
   * Picks up the turn of a stream opened before a restart: rebuilds the protocol state from the
   * saved run request and lets the runner continue what the conversation waits for, if that is
   * still this stream's turn (`turnID`); otherwise the stream just ends.
   */
  restore(conversationID: string, turnID: string, runRequest: Uint8Array): Promise<void>;
  /**
   * The client will not come back for this stream (it reset an HTTP/2 `Run`, or a request of the
   * stream failed for good): the turn is canceled and the stream ends with `error`.
   */
  abandon(error: ConnectError): Promise<void>;
  /**
   * Shutdown (stream-registry.ts `hold`): nothing more of the stream is handed out
   * (outbound-stream.ts `hold`). A turn that is over but whose end waits for the client to
   * confirm its last checkpoint's blobs ends first, that checkpoint inline: the ends of turns
   * that are over reach their clients.
   */
  hold(): void;
  /**
   * Ends the stream now with a `canceled` end (no run request came in time; shutdown). At
   * shutdown the stream was held first (outbound-stream.ts `hold`), so a client reading it sees
   * its connection dropped instead, unless its turn had already ended.
   */
  close(this: AgentStream, reason: string): void;
}
