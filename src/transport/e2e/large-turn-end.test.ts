/**
 * The end of a turn with large checkpoints reaches the client whole, on every transport, also
 * when the client reads slowly (issue #19): a `Run` over HTTP/2 used to fail with
 * `Premature close` at the end of such a turn, the last checkpoint and `turn_ended` lost, because
 * the stream was reset right after its end while the client still had it to read
 * (http/defer-early-reset.ts).
 *
 * The slow reader holds its reading at the turn's last checkpoint until the server has handed
 * the whole response to the connection (HTTP/2: Node's `wantTrailers`, then two PING round trips
 * on the client's session, so that whatever the server sent after the end has arrived; HTTP/1.1:
 * the response's `finish`), then reads the rest. Both are observed through Node's
 * diagnostics channels, in this process.
 */
import assert from "node:assert/strict";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { writeFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import type { ClientHttp2Stream, IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { join } from "node:path";
import { afterEach, describe, test } from "node:test";
import { toBinary } from "@bufbuild/protobuf";
import { ConversationStateStructureSchema } from "../cursor/gen/agent/v1/conversation_state_pb.js";
import type { AgentServerMessage } from "../cursor/index.ts";
import type { CursorClientOptions } from "../testing/index.ts";
import { type Harness, MODEL, startHarness } from "./test-harness.ts";

const TURNS = 3;
/** Per file read: two a turn, so the checkpoints carry hundreds of KB after the first turn. */
const FILE_BYTES = 120 * 1024;

const TRANSPORTS: readonly {
  readonly name: string;
  readonly client: Partial<CursorClientOptions>;
  readonly path: string;
}[] = [
  { name: "Run over HTTP/2", client: { httpVersion: "2" }, path: "/agent.v1.AgentService/Run" },
  {
    name: "RunSSE over HTTP/2",
    client: { httpVersion: "2", runSseOverHttp2: true },
    path: "/agent.v1.AgentService/RunSSE",
  },
  { name: "RunSSE", client: { httpVersion: "1.1" }, path: "/agent.v1.AgentService/RunSSE" },
];

/**
 * The slow reader's two sides, for the agent streams on `path` in this process (observed through
 * Node's diagnostics channels): the server writes the end of the `nth` stream only once the
 * client holds its reading at `turn_ended` (`hold(nth)`), so the end is certainly still unread
 * when it arrives; `written(nth)` resolves once the server handed the whole response to the
 * connection (HTTP/2: `wantTrailers`, after which Connect's reset, if any, comes on setImmediate;
 * HTTP/1.1: `finish`).
 */
function watchEnds(path: string): {
  hold(nth: number): void;
  written(nth: number): Promise<void>;
  /** HTTP/2: one PING round trip on the client's session (frames before it have arrived). */
  roundTrip(): Promise<void>;
  close(): void;
} {
  const gates: { held: PromiseWithResolvers<void>; written: PromiseWithResolvers<void> }[] = [];
  const gate = (n: number) => {
    while (gates.length <= n) {
      gates.push({ held: Promise.withResolvers<void>(), written: Promise.withResolvers<void>() });
    }
    return gates[n] as (typeof gates)[number];
  };
  let seen = 0;
  let session: ClientHttp2Stream["session"] | undefined;
  const onH2Server = (message: unknown): void => {
    const { stream, headers } = message as {
      stream: ServerHttp2Stream;
      headers: IncomingHttpHeaders;
    };
    if (headers[":path"] !== path) return;
    const mine = gate(seen++);
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (!isEndOfStream(chunk)) return write(chunk, ...rest);
      // Back-pressure as far as the writer knows: it waits for `drain` before it ends.
      void mine.held.promise.then(() => {
        if (write(chunk, ...rest)) stream.emit("drain");
      });
      return false;
    }) as typeof stream.write;
    stream.once("wantTrailers", () => setImmediate(mine.written.resolve));
  };
  const onH2Client = (message: unknown): void => {
    session = (message as { stream: ClientHttp2Stream }).stream.session;
  };
  const onH1Server = (message: unknown): void => {
    const { request, response } = message as {
      request: { url?: string };
      response: ServerResponse;
    };
    if (request.url !== path) return;
    const mine = gate(seen++);
    const end = response.end.bind(response) as (...args: unknown[]) => ServerResponse;
    response.end = ((chunk: unknown, ...rest: unknown[]) => {
      if (!isEndOfStream(chunk)) return end(chunk, ...rest);
      void mine.held.promise.then(() => end(chunk, ...rest));
      return response;
    }) as typeof response.end;
    response.once("finish", () => setImmediate(mine.written.resolve));
  };
  subscribe("http2.server.stream.created", onH2Server);
  subscribe("http2.client.stream.created", onH2Client);
  subscribe("http.server.request.start", onH1Server);
  return {
    hold: (n) => gate(n).held.resolve(),
    written: (n) => gate(n).written.promise,
    roundTrip: () =>
      new Promise<void>((resolve, reject) => {
        if (session === undefined) return resolve();
        session.ping((error) => (error === null ? resolve() : reject(error)));
      }),
    close() {
      unsubscribe("http2.server.stream.created", onH2Server);
      unsubscribe("http2.client.stream.created", onH2Client);
      unsubscribe("http.server.request.start", onH1Server);
    },
  };
}

/** Whether `chunk` is one whole Connect end-of-stream envelope (flag bit 1). */
function isEndOfStream(chunk: unknown): boolean {
  return (
    chunk instanceof Uint8Array &&
    chunk.length >= 5 &&
    ((chunk[0] as number) & 0b10) !== 0 &&
    Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length).readUInt32BE(1) === chunk.length - 5
  );
}

function kindOf(message: AgentServerMessage): string {
  const branch = message.message;
  return branch.case === "interactionUpdate"
    ? (branch.value.message.case ?? "")
    : (branch.case ?? "");
}

for (const transport of TRANSPORTS) {
  describe(`a turn with large checkpoints over ${transport.name}`, () => {
    let harness: Harness;
    let watch: ReturnType<typeof watchEnds> | undefined;
    afterEach(async () => {
      watch?.close();
      watch = undefined;
      await harness.close();
    });

    for (const reader of ["fast", "slow"] as const) {
      test(`ends cleanly with every message, ${reader} reader`, async () => {
        harness = await startHarness();
        const ends = reader === "slow" ? watchEnds(transport.path) : undefined;
        watch = ends;
        const content = `${"export const padding = 'x'; // some source text of a large file\n".repeat(FILE_BYTES / 64)}`;
        for (let i = 0; i < 2 * TURNS; i++) {
          writeFileSync(join(harness.workspace, `f${i}.ts`), content.replace("padding", `p${i}`));
        }
        let turnIndex = 0;
        let held = 0;
        const client = harness.client({
          ...transport.client,
          onMessage(message) {
            if (ends === undefined || kindOf(message) !== "turnEnded") return undefined;
            // Read nothing more until the server has written the whole response (its end is
            // written only now) and, over HTTP/2, whatever it sent after that has arrived.
            held += 1;
            ends.hold(turnIndex);
            const written = ends.written(turnIndex);
            return transport.client.httpVersion === "2"
              ? written.then(ends.roundTrip).then(ends.roundTrip)
              : written;
          },
        });
        const conversationId = crypto.randomUUID();
        for (let t = 0; t < TURNS; t++) {
          turnIndex = t;
          harness.reply(
            {
              text: "Reading.",
              toolCalls: [{ id: `c${t}a`, name: "read_file", arguments: { path: `f${2 * t}.ts` } }],
            },
            {
              text: "And.",
              toolCalls: [
                { id: `c${t}b`, name: "read_file", arguments: { path: `f${2 * t + 1}.ts` } },
              ],
            },
            { text: `Turn ${t} done.` },
          );
          const result = await client.startTurn({
            conversationId,
            text: `turn ${t}: read two files`,
            modelId: MODEL,
          }).done;
          assert.equal(result.error, undefined, `turn ${t}: ${result.error?.message}`);
          const kinds = result.messages.map(kindOf).filter((kind) => kind !== "heartbeat");
          assert.equal(kinds.at(-1), "turnEnded", `turn ${t}: ${kinds.slice(-5).join(", ")}`);
          assert.equal(result.view.text, `Reading.And.Turn ${t} done.`);
          assert.equal(result.view.toolCallsCompleted.length, 2);
          const last = result.view.checkpoint;
          assert.ok(last !== undefined);
          // The checkpoint after the final text, with the turn's last message in it.
          assert.equal(kinds.at(-2), "conversationCheckpointUpdate");
          const size = toBinary(ConversationStateStructureSchema, last).length;
          if (t === TURNS - 1) {
            // Hundreds of KB, as a real conversation with file reads gets: inline, or in blobs.
            const blobBytes = [...client.blobs.values()].reduce((sum, b) => sum + b.length, 0);
            assert.ok(size + blobBytes > 256 * 1024, `${size} + ${blobBytes} bytes`);
          }
        }
        if (reader === "slow") assert.equal(held, TURNS);
      });
    }
  });
}
