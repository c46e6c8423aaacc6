/**
 * What an open stream keeps of its run request (issue #19). The IDE sends, in every run request
 * after the first, its conversation checkpoint and a large request context (rules, git status,
 * layout, open files); a stream must not keep that body for its turn. The real server in this
 * process on a SQLite store (which keeps nothing in memory once committed, unlike the memory
 * store), the run request sent as the IDE sends it (hex `data`), each turn held while its model
 * call streams (the provider stalls after its first event).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { createLLM, createModelConfigs } from "../../llm/index.ts";
import { toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import { splitSseEvents } from "../../llm/testing/fake-provider.ts";
import { createRunner } from "../../runner/runner.ts";
import { openSqliteStore } from "../../store/index.ts";
import { AgentClientMessageSchema, AgentService } from "../cursor/gen/agent/v1/agent_stream_pb.js";
import {
  ConversationStateStructureSchema,
  ConversationTurnStructureSchema,
} from "../cursor/gen/agent/v1/conversation_state_pb.js";
import { BidiService } from "../cursor/gen/aiserver/v1/bidi_pb.js";
import { silentLog } from "../log.ts";
import { DEFAULT_SERVER_OPTIONS, startServer } from "../server.ts";
import { createRunRequest } from "../testing/index.ts";

setFlagsFromString("--expose-gc");
/** A full collection, from a fresh context where `--expose-gc` took effect. */
const collect = runInNewContext("gc") as () => void;

/**
 * Off-heap bytes in use once what is garbage is collected: after a collection, V8 frees array
 * buffers' memory from a background task, so collect until the figure stops falling.
 */
async function settledArrayBuffers(): Promise<number> {
  let last = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 50; round += 1) {
    for (let i = 0; i < 3; i += 1) await new Promise((resolve) => setImmediate(resolve));
    collect();
    const now = process.memoryUsage().arrayBuffers;
    if (now >= last) return now;
    last = now;
  }
  return last;
}

const MODEL = "scripted";
/** Of each run request: the checkpoint (kept: every checkpoint of the turn carries it) … */
const CHECKPOINT_BYTES = 16 * 1024;
/** … and the rest of the body (here custom instructions; the IDE's request context). */
const CONTEXT_BYTES = 300 * 1024;

test("an open stream keeps its checkpoint, not the run request's body", async () => {
  const directory = mkdtempSync(join(tmpdir(), "cursor-byok-memory-"));
  // A provider that answers each call with its first event and then stalls, keeping nothing of
  // the request (the fake provider records every body, which would be counted here).
  const [firstEvent] = splitSseEvents(toChatCompletionSse({ text: "thinking about it" }));
  const provider = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write(firstEvent ?? "");
    });
  });
  await new Promise<void>((resolve) => provider.listen(0, "127.0.0.1", resolve));
  const providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
  const store = openSqliteStore({ path: join(directory, "db.sqlite") });
  const llm = createLLM({
    models: createModelConfigs([
      { name: MODEL, api: "openai-compatible", model: "m", baseUrl: providerUrl, apiKey: "k" },
    ]),
  });
  const server = await startServer(
    { store, llm, runner: createRunner({ store, llm }), log: silentLog },
    { ...DEFAULT_SERVER_OPTIONS, port: 0, runSseContentType: "connect" },
  );
  const transport = createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" });
  const agent = createClient(AgentService, transport);
  const bidi = createClient(BidiService, transport);
  const streams = new AbortController();
  /** Opens a stream whose turn is then held in its model call; resolves on its first message. */
  const open = async () => {
    const earlier = toBinary(
      ConversationTurnStructureSchema,
      create(ConversationTurnStructureSchema, {
        turn: {
          case: "agentConversationTurn",
          value: { userMessage: new Uint8Array(CHECKPOINT_BYTES).fill(1), requestId: "r0" },
        },
      }),
    );
    const run = createRunRequest({
      conversationId: randomUUID(),
      text: "go on",
      modelId: MODEL,
      workspace: directory,
      checkpoint: create(ConversationStateStructureSchema, { turns: [earlier] }),
      edit: (request) => {
        request.customSystemPrompt = "Keep answers short. ".repeat(CONTEXT_BYTES / 20);
      },
    });
    const message = create(AgentClientMessageSchema, {
      message: { case: "runRequest", value: run },
    });
    const data = Buffer.from(toBinary(AgentClientMessageSchema, message)).toString("hex");
    const requestId = randomUUID();
    const first = new Promise<void>((resolve, reject) => {
      void (async () => {
        try {
          for await (const _ of agent.runSSE({ requestId }, { signal: streams.signal })) resolve();
        } catch (error) {
          reject(error);
        }
      })();
    });
    first.catch(() => {});
    await bidi.bidiAppend({ requestId: { requestId }, data }, { signal: streams.signal });
    await first;
  };
  try {
    // The first streams compile what every stream uses.
    await open();
    await open();
    const before = await settledArrayBuffers();
    const count = 8;
    for (let i = 0; i < count; i += 1) await open();
    const perStream = ((await settledArrayBuffers()) - before) / count;
    // Kept: the checkpoint's 16 KiB (measured 17 KiB per stream); the whole body is 317 KiB, what
    // each stream kept before the checkpoint's bytes were copied out of it (issue #19).
    assert.ok(
      perStream < 100 * 1024,
      `${Math.round(perStream / 1024)} KiB off the heap per open stream`,
    );
  } finally {
    streams.abort();
    await server.close();
    await store.close();
    provider.closeAllConnections();
    await new Promise((resolve) => provider.close(resolve));
    rmSync(directory, { recursive: true, force: true });
  }
});
