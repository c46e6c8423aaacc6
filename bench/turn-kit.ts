/**
 * What the stream and proxy benchmarks share: a loopback OpenAI-compatible provider that
 * timestamps every chunk it writes, a lean RunSSE + BidiAppend client, and percentiles.
 */
import { randomUUID } from "node:crypto";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { performance } from "node:perf_hooks";
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { createLLM, createModelConfigs, type LLM, type LLMCall } from "../src/llm/index.ts";
import {
  type ConversationStateStructure,
  ConversationStateStructureSchema,
  ConversationStepSchema,
  ConversationTurnStructureSchema,
} from "../src/transport/cursor/gen/agent/v1/conversation_state_pb.js";
import { UserMessageSchema } from "../src/transport/cursor/gen/agent/v1/user_message_pb.js";
import { BidiAppendRequestSchema } from "../src/transport/cursor/gen/aiserver/v1/bidi_pb.js";
import {
  type AgentClientMessage,
  AgentClientMessageSchema,
  type AgentServerMessage,
  AgentService,
  BidiRequestIdSchema,
  BidiService,
} from "../src/transport/cursor/index.ts";
import { createRunRequest } from "../src/transport/testing/index.ts";

export const MODEL = "bench";

// --- a provider that timestamps every chunk it writes --------------------------------------------

export interface Script {
  readonly chunks: number;
  /** Milliseconds between chunks; 0 writes them back to back. */
  readonly paceMs: number;
  /** Hang after the first chunk (for the concurrency test). */
  readonly stall?: boolean;
  /** Go silent (hang) after this many chunks. */
  readonly stallAfter?: number;
  /**
   * Each chunk's text is `t<epoch ms when written> ` instead of `e<i> ` (`performance.timeOrigin +
   * performance.now()`, sub-millisecond, comparable with another process's on this machine).
   */
  readonly stamp?: boolean;
  /**
   * Chunk i is written `i × paceMs` after the stream's start, not `paceMs` after the previous
   * write. Paced after the previous write, every stream whose chunk fell due during a pause of
   * this process was written in the same run of timers and so paced in step with the others from
   * then on: over a minute thousands of streams fell into a few bursts (provider writes per 10 ms,
   * p99 103 where an even spread is 20), which no set of independent conversations does. On its
   * own clock a stream keeps its phase (p99 45).
   */
  readonly fixedSchedule?: boolean;
}

export interface BenchProvider {
  readonly url: string;
  script: Script;
  /** performance.now() when each chunk of the current stream was written, by chunk index. */
  written: number[];
  /** performance.now() when the current request arrived. */
  requestAt: number;
  close(): Promise<void>;
}

function chunk(content: string, finish: string | null = null): string {
  return `data: ${JSON.stringify({
    id: "chatcmpl-bench",
    object: "chat.completion.chunk",
    created: 1767225600,
    model: "bench-model",
    choices: [{ index: 0, delta: finish === null ? { content } : {}, finish_reason: finish }],
    ...(finish === null
      ? {}
      : { usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 } }),
  })}\n\n`;
}

export async function startBenchProvider(): Promise<BenchProvider> {
  const provider: BenchProvider = {
    url: "",
    script: { chunks: 10, paceMs: 0 },
    written: [],
    requestAt: 0,
    close: async () => {},
  };
  const write = (res: ServerResponse, text: string) =>
    new Promise<void>((resolve) => {
      if (!res.write(text)) res.once("drain", resolve);
      else resolve();
    });
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", async () => {
      provider.requestAt = performance.now();
      provider.written = [];
      const { chunks, paceMs, stall, stallAfter, stamp, fixedSchedule } = provider.script;
      res.writeHead(200, { "content-type": "text/event-stream" });
      if (paceMs === 0 && stall !== true && stallAfter === undefined && stamp !== true) {
        // Back to back: the whole body in one write. Written chunk by chunk, the body left this
        // process in 16 KB batches as it was made, all in one turn of its event loop: a reader in
        // another process started on the first batch while a reader in this one (the server of
        // the in-process sections) could start only once the last was made.
        const now = performance.now();
        const body: string[] = [];
        for (let i = 0; i < chunks; i += 1) {
          provider.written[i] = now;
          body.push(chunk(`e${i} `));
        }
        body.push(chunk("", "stop"), "data: [DONE]\n\n");
        res.end(body.join(""));
        return;
      }
      const startedAt = performance.now();
      for (let i = 0; i < chunks; i += 1) {
        const now = performance.now();
        provider.written[i] = now;
        await write(
          res,
          chunk(stamp ? `t${(performance.timeOrigin + now).toFixed(3)} ` : `e${i} `),
        );
        if (stall || stallAfter === i + 1) {
          res.on("close", () => res.destroy());
          return;
        }
        if (paceMs > 0) {
          const wait = fixedSchedule
            ? Math.max(0, startedAt + (i + 1) * paceMs - performance.now())
            : paceMs;
          await new Promise((resolve) => setTimeout(resolve, wait));
        }
      }
      await write(res, chunk("", "stop"));
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  Object.assign(provider, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
  return provider;
}

// --- a lean RunSSE + BidiAppend client ------------------------------------------------------------

/** The size of the checkpoint in an IDE-sized run request (`ideCheckpoint`). */
export const IDE_CHECKPOINT_BYTES = 300_000;

/** Turns in an IDE-sized checkpoint. */
const IDE_TURNS = 20;

/** The checkpoint's turns before its last, made once. */
let earlierTurns: Uint8Array[] | undefined;

/**
 * A checkpoint (`conversation_state`) as the IDE sends back in every run request after the first
 * few turns of a conversation: `IDE_CHECKPOINT_BYTES` of 20 inline turns, each a user message (a
 * quarter) and four assistant steps. Its last turn is the conversation's last turn on this
 * server, `lastRequestId` (the IDE's checkpoint is the one the server sent at that turn's end, so
 * the turn continues the conversation; a checkpoint whose last turn the server never ran would
 * start a fork or an import of its turns as history, docs/protocol.md "Rewinds").
 */
export function ideCheckpoint(lastRequestId: string): ConversationStateStructure {
  earlierTurns ??= Array.from({ length: IDE_TURNS - 1 }, (_, turn) => ideTurn(turn, randomUUID()));
  return create(ConversationStateStructureSchema, {
    turns: [...earlierTurns, ideTurn(IDE_TURNS - 1, lastRequestId)],
  });
}

function ideTurn(turn: number, requestId: string): Uint8Array {
  const size = Math.floor(IDE_CHECKPOINT_BYTES / IDE_TURNS);
  const filler = (length: number, seed: string) =>
    `${seed} lorem ipsum dolor sit amet, consectetur adipiscing elit. `
      .repeat(Math.ceil(length / 50))
      .slice(0, length);
  return toBinary(
    ConversationTurnStructureSchema,
    create(ConversationTurnStructureSchema, {
      turn: {
        case: "agentConversationTurn",
        value: {
          userMessage: toBinary(
            UserMessageSchema,
            create(UserMessageSchema, { text: filler(size / 4, `u${turn}`) }),
          ),
          steps: Array.from({ length: 4 }, (_, step) =>
            toBinary(
              ConversationStepSchema,
              create(ConversationStepSchema, {
                message: {
                  case: "assistantMessage",
                  value: { text: filler((size * 3) / 16, `s${turn}.${step}`) },
                },
              }),
            ),
          ),
          requestId,
        },
      },
    }),
  );
}

export interface TurnOptions {
  /** Default: a new conversation. */
  readonly conversationId?: string;
  /** The turn's request id; default a new one. */
  readonly requestId?: string;
  /** Sent in the run request, as a later turn of the conversation does (`ideCheckpoint`). */
  readonly checkpoint?: ConversationStateStructure;
}

/** One turn; `to` is the server's address, or a Connect transport (e.g. through a proxy). */
export async function runTurn(
  to: string | Transport,
  onText: (text: string, at: number) => void,
  onMessage?: (message: AgentServerMessage, at: number) => void,
  signal?: AbortSignal,
  options: TurnOptions = {},
): Promise<{ sentAt: number }> {
  const transport =
    typeof to === "string" ? createConnectTransport({ baseUrl: to, httpVersion: "1.1" }) : to;
  const agent = createClient(AgentService, transport);
  const bidi = createClient(BidiService, transport);
  const { checkpoint } = options;
  const requestId = options.requestId ?? randomUUID();
  const run = createRunRequest({
    conversationId: options.conversationId ?? randomUUID(),
    text: "go",
    modelId: MODEL,
    workspace: tmpdir(),
    ...(checkpoint === undefined ? {} : { checkpoint }),
  });
  const hex = (message: AgentClientMessage): string =>
    Buffer.from(toBinary(AgentClientMessageSchema, message)).toString("hex");
  const data = hex(
    create(AgentClientMessageSchema, { message: { case: "runRequest", value: run } }),
  );
  // The blob writes of the turn's checkpoints are answered as the IDE answers them (each in an
  // append of its own, in order), or the turn's end would wait for them (docs/protocol.md §2.10).
  let appends: Promise<unknown> = Promise.resolve();
  let seqno = 0;
  const confirm = (id: number): void => {
    seqno += 1;
    const appendSeqno = BigInt(seqno);
    const ack = hex(
      create(AgentClientMessageSchema, {
        message: {
          case: "kvClientMessage",
          value: { id, message: { case: "setBlobResult", value: {} } },
        },
      }),
    );
    appends = appends
      .then(() => bidi.bidiAppend({ requestId: { requestId }, appendSeqno, data: ack }, { signal }))
      .catch(() => {});
  };
  const sentAt = performance.now();
  const reading = (async () => {
    for await (const message of agent.runSSE({ requestId }, { signal })) {
      const at = performance.now();
      if (
        message.message.case === "kvServerMessage" &&
        message.message.value.message.case === "setBlobArgs"
      ) {
        confirm(message.message.value.id);
      }
      onMessage?.(message, at);
      if (
        message.message.case === "interactionUpdate" &&
        message.message.value.message.case === "textDelta"
      ) {
        onText(message.message.value.message.value.text, at);
      }
    }
  })();
  // Handled below; a failing append must not leave it rejected with no handler meanwhile.
  reading.catch(() => {});
  const first = bidi.bidiAppend({ requestId: { requestId }, data }, { signal });
  appends = first.catch(() => {});
  await first;
  await reading.catch((error: unknown) => {
    if (!signal?.aborted) throw error;
  });
  await appends;
  return { sentAt };
}

/**
 * How long a client takes to encode the BidiAppend that carries a run request with `checkpoint`
 * (as connect-es does, `toBinary` of the `BidiAppendRequest` with its hex `data`), in ms: work
 * of the client's own that is inside a turn's time to first text (after `sentAt`), measured
 * apart, off the turn.
 */
export function appendEncodingMs(checkpoint: ConversationStateStructure): number {
  const run = createRunRequest({
    conversationId: randomUUID(),
    text: "go",
    modelId: MODEL,
    workspace: tmpdir(),
    checkpoint,
  });
  const data = Buffer.from(
    toBinary(
      AgentClientMessageSchema,
      create(AgentClientMessageSchema, { message: { case: "runRequest", value: run } }),
    ),
  ).toString("hex");
  const startedAt = performance.now();
  toBinary(
    BidiAppendRequestSchema,
    create(BidiAppendRequestSchema, {
      requestId: create(BidiRequestIdSchema, { requestId: randomUUID() }),
      data,
    }),
  );
  return performance.now() - startedAt;
}

/**
 * One model call read with the LLM layer directly (no server), as `bench:stream`'s baseline: when
 * each chunk's text arrived, by chunk index, and when the call was made (`performance.now()`).
 * Only the arrival times are taken while reading; the texts are parsed afterwards, as for a turn.
 */
export async function runDirect(
  llm: LLM,
  request: LLMCall["request"],
): Promise<{ received: number[]; calledAt: number }> {
  const received: number[] = [];
  const calledAt = performance.now();
  const stream = llm.stream({
    callID: randomUUID(),
    model: MODEL,
    conversationID: "bench",
    request,
  });
  const texts: string[] = [];
  const times: number[] = [];
  for await (const event of stream) {
    if (event.type === "text_delta") {
      texts.push(event.delta);
      times.push(performance.now());
    }
  }
  texts.forEach((text, i) => {
    for (const index of indexesOf(text)) received[index] = times[i] as number;
  });
  return { received, calledAt };
}

/** The LLM layer on the bench provider at `url`, as the server's model `MODEL` is configured. */
export function createBenchLLM(url: string): LLM {
  return createLLM({
    models: createModelConfigs([
      { name: MODEL, api: "openai-compatible", model: "bench-model", baseUrl: url, apiKey: "k" },
    ]),
  });
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

export const ms = (value: number) => `${value.toFixed(3)} ms`;

/** The chunk index a text delta carries (`e<i> `). */
export function indexOf(text: string): number {
  return Number(/^e(\d+) $/.exec(text)?.[1] ?? -1);
}

/**
 * The chunk indexes a text delta carries: one `e<i> ` per chunk, several when the server joined
 * adjacent deltas into one message.
 */
export function indexesOf(text: string): number[] {
  return [...text.matchAll(/e(\d+) /g)].map((match) => Number(match[1]));
}

/** The write times (`t<epoch ms> `, see `Script.stamp`) a text delta carries. */
export function stampsOf(text: string): number[] {
  return [...text.matchAll(/t(\d+\.\d+) /g)].map((match) => Number(match[1]));
}
