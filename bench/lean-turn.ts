/**
 * A load generator's turn: the same exchange as turn-kit.ts `runTurn` (one RunSSE, the run request
 * in a BidiAppend, each `setBlobArgs` confirmed in an append of its own), written on `node:http`
 * with the Connect framing read by hand. `bench:stream concurrency` runs a thousand of these in
 * one client process. Through connect-es every message of every stream passes a chain of async
 * generators in that process, whose young-generation collections (tens of ms, every few seconds
 * with a thousand streams) delayed the chunks of all its streams: the client process's pauses,
 * not the server's, in the figure. A Cursor client reads one conversation per process, and its
 * costs are not the server's; this keeps the load generator's own out of the measurement
 * (`BENCH_CLIENT=connect` puts connect-es back, to compare).
 *
 * The bytes are the protocol's (docs/protocol.md §1.3): the RunSSE request is one uncompressed
 * `application/connect+proto` envelope holding a `BidiRequestId`; each response envelope holds an
 * `AgentServerMessage`, the one with flag 2 ends the stream (JSON, `error` when it failed); the
 * append is a Connect unary call, `application/proto`.
 */

import { randomUUID } from "node:crypto";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  type AgentServerMessage,
  AgentServerMessageSchema,
} from "../src/transport/cursor/gen/agent/v1/agent_stream_pb.js";
import { BidiAppendRequestSchema } from "../src/transport/cursor/gen/aiserver/v1/bidi_pb.js";
import {
  type AgentClientMessage,
  AgentClientMessageSchema,
  BidiRequestIdSchema,
} from "../src/transport/cursor/index.ts";
import { createRunRequest } from "../src/transport/testing/index.ts";
import { MODEL } from "./turn-kit.ts";

const RUN_SSE = "/agent.v1.AgentService/RunSSE";
const BIDI_APPEND = "/aiserver.v1.BidiService/BidiAppend";
const END_STREAM_FLAG = 0b10;

/**
 * One turn of a new conversation against the server at `url`: `onText` gets each text delta,
 * `onMessage` every message, both with `performance.now()` of its arrival. Resolves when the
 * stream ends (or `signal` aborts it: then without an error); rejects with what ended it
 * otherwise.
 */
export async function runLeanTurn(
  url: string,
  onText: (text: string, at: number) => void,
  onMessage: (message: AgentServerMessage, at: number) => void,
  signal: AbortSignal,
): Promise<void> {
  const base = new URL(url);
  const requestId = randomUUID();
  const hex = (message: AgentClientMessage) =>
    Buffer.from(toBinary(AgentClientMessageSchema, message)).toString("hex");
  let seqno = 0;
  let appends: Promise<unknown> = Promise.resolve();
  const append = (data: string, appendSeqno?: bigint) =>
    post(
      base,
      BIDI_APPEND,
      "application/proto",
      toBinary(
        BidiAppendRequestSchema,
        create(BidiAppendRequestSchema, {
          requestId: { requestId },
          data,
          ...(appendSeqno === undefined ? {} : { appendSeqno }),
        }),
      ),
      signal,
    ).then(expectOk);
  const confirm = (id: number) => {
    seqno += 1;
    const ack = hex(
      create(AgentClientMessageSchema, {
        message: {
          case: "kvClientMessage",
          value: { id, message: { case: "setBlobResult", value: {} } },
        },
      }),
    );
    const appendSeqno = BigInt(seqno);
    appends = appends.then(() => append(ack, appendSeqno)).catch(() => {});
  };
  const stream = post(
    base,
    RUN_SSE,
    "application/connect+proto",
    envelope(toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId }))),
    signal,
  );
  const reading = stream.then((response) =>
    readEnvelopes(response, (bytes, at) => {
      const message = fromBinary(AgentServerMessageSchema, bytes);
      const { message: kind } = message;
      if (kind.case === "kvServerMessage" && kind.value.message.case === "setBlobArgs") {
        confirm(kind.value.id);
      }
      onMessage(message, at);
      if (kind.case === "interactionUpdate" && kind.value.message.case === "textDelta") {
        onText(kind.value.message.value.text, at);
      }
    }),
  );
  reading.catch(() => {});
  const run = createRunRequest({
    conversationId: randomUUID(),
    text: "go",
    modelId: MODEL,
    workspace: tmpdir(),
  });
  appends = append(
    hex(create(AgentClientMessageSchema, { message: { case: "runRequest", value: run } })),
  );
  try {
    await appends;
    await reading;
  } catch (error) {
    if (!signal.aborted) throw error;
  }
  await appends.catch(() => {});
}

function envelope(payload: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(5 + payload.byteLength);
  new DataView(bytes.buffer).setUint32(1, payload.byteLength);
  bytes.set(payload, 5);
  return bytes;
}

function post(
  base: URL,
  path: string,
  contentType: string,
  body: Uint8Array,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: base.hostname,
        port: base.port,
        method: "POST",
        path,
        signal,
        headers: {
          "content-type": contentType,
          "content-length": body.byteLength,
          "connect-protocol-version": "1",
        },
      },
      resolve,
    );
    request.once("error", reject);
    request.end(body);
  });
}

async function expectOk(response: IncomingMessage): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  if (response.statusCode !== 200) {
    throw new Error(`append: HTTP ${response.statusCode} ${Buffer.concat(chunks).toString()}`);
  }
}

/**
 * Calls `onMessage` with each data envelope's payload as it arrives; resolves at the end-of-stream
 * envelope, rejects with its error (or when the stream ends without one).
 */
function readEnvelopes(
  response: IncomingMessage,
  onMessage: (payload: Uint8Array, at: number) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    if (response.statusCode !== 200) {
      response.resume();
      reject(new Error(`RunSSE: HTTP ${response.statusCode}`));
      return;
    }
    let pending: Buffer = Buffer.alloc(0);
    let ended = false;
    response.on("data", (chunk: Buffer) => {
      const at = performance.now();
      pending = pending.byteLength === 0 ? chunk : Buffer.concat([pending, chunk]);
      while (pending.byteLength >= 5) {
        const length = pending.readUInt32BE(1);
        if (pending.byteLength < 5 + length) break;
        const flags = pending[0] ?? 0;
        const payload = pending.subarray(5, 5 + length);
        pending = pending.subarray(5 + length);
        if ((flags & END_STREAM_FLAG) === 0) {
          onMessage(payload, at);
          continue;
        }
        ended = true;
        const end = JSON.parse(Buffer.from(payload).toString("utf8")) as {
          error?: { code?: string; message?: string };
        };
        if (end.error === undefined) resolve();
        else reject(new Error(`RunSSE ended: [${end.error.code}] ${end.error.message}`));
      }
    });
    response.once("end", () => {
      if (!ended) reject(new Error("RunSSE: the stream ended without its end-of-stream message"));
    });
    response.once("error", reject);
  });
}
