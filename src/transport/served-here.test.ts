/**
 * Only the owner instance serves a stream, whatever the client's `x-request-id` says
 * (served-here.ts, docs/team.md "Several instances"). Two real servers on one PostgreSQL
 * directory: a turn runs on instance 0 while its model call is held at the fake provider; RunSSE
 * and BidiAppend for that stream, sent to instance 1 without `x-request-id`, with a decoy one or
 * with one too long to route, over HTTP/1.1 and HTTP/2, are refused with a wire error — none
 * restores the stream there, and the provider sees the model call once. Skipped, with the
 * reason, without PostgreSQL (store/testing/postgres-server.ts).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { createLLM, createModelConfig } from "../llm/index.ts";
import { toChatCompletionSse } from "../llm/testing/chat-completions-sse.ts";
import { createRunner } from "../runner/runner.ts";
import { type ClusterDirectory, openClusterDirectory, openPostgresStore } from "../store/index.ts";
import { getTestPostgres } from "../store/testing/postgres-server.ts";
import { AgentClientMessageSchema, AgentService } from "./cursor/gen/agent/v1/agent_stream_pb.js";
import { BidiAppendRequestSchema, BidiService } from "./cursor/gen/aiserver/v1/bidi_pb.js";
import { toProtocolError } from "./cursor/index.ts";
import { createRecordingLog } from "./log.ts";
import { createServedHereCheck } from "./served-here.ts";
import { DEFAULT_SERVER_OPTIONS, type LocalServer, startServer } from "./server.ts";
import { createCursorClient } from "./testing/index.ts";

const postgres = await getTestPostgres();

/** A provider that answers each model call only once `release` is called. */
function startHeldProvider() {
  const bodies: string[] = [];
  const waiting: ((count: number) => void)[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const server: Server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      bodies.push(body);
      for (const wake of waiting.splice(0)) wake(bodies.length);
      void released.then(() => {
        response.writeHead(200, { "content-type": "text/event-stream" });
        response.end(toChatCompletionSse({ text: "done", usage: { prompt: 10, completion: 5 } }));
      });
    });
  });
  /** Resolves once the provider has seen `count` requests. */
  const seen = (count: number): Promise<void> =>
    new Promise((resolve) => {
      const check = (now: number) => {
        if (now >= count) resolve();
        else waiting.push(check);
      };
      check(bodies.length);
    });
  return { server, bodies, release, seen };
}

test("the check: a differing header is refused; without one the body's id is claimed", async () => {
  const claimed: string[] = [];
  const check = (answer: "mine" | "elsewhere" | "fails") =>
    createServedHereCheck({
      claim: async (id) => {
        claimed.push(id);
        if (answer === "fails") throw new Error("the database did not answer");
        return answer === "mine"
          ? { type: "mine" }
          : { type: "elsewhere", instanceID: "other", url: "http://10.0.0.2:8765" };
      },
    });
  const code = async (promise: Promise<void>) =>
    promise.then(
      () => "served",
      (error: unknown) => ConnectError.from(error).code,
    );
  assert.equal(await code(check("mine")("r", "decoy")), Code.InvalidArgument);
  assert.equal(await code(check("mine")("r", "")), Code.InvalidArgument);
  assert.equal(await code(check("elsewhere")("r", "r")), "served");
  assert.deepEqual(claimed, [], "a routed request was claimed by routing already");
  assert.equal(await code(check("mine")("r", null)), "served");
  assert.equal(await code(check("elsewhere")("r", null)), Code.FailedPrecondition);
  assert.equal(await code(check("fails")("r", null)), Code.Unavailable);
  const long = "x".repeat(129);
  assert.equal(await code(check("elsewhere")(long, long)), Code.FailedPrecondition);
  assert.deepEqual(claimed, ["r", "r", "r", long]);
});

if (postgres.type === "unavailable") {
  test(`served here: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  test("a stream request at a non-owner is refused, never served there", {
    timeout: 60_000,
  }, async () => {
    const schema = await postgres.server.createSchema();
    const provider = startHeldProvider();
    await new Promise<void>((resolve) => provider.server.listen(0, "127.0.0.1", resolve));
    const baseUrl = `http://127.0.0.1:${(provider.server.address() as AddressInfo).port}/v1`;
    const recorded = createRecordingLog();
    const servers: LocalServer[] = [];
    const closers: (() => Promise<void>)[] = [];
    const directories: ClusterDirectory[] = [];
    for (let i = 0; i < 2; i++) {
      const store = await openPostgresStore({ url: schema.url, poolSize: 4 });
      const llm = createLLM({
        models: [
          createModelConfig({
            name: "scripted",
            api: "openai-compatible",
            provider: "openai",
            baseUrl,
            model: "m",
            apiKey: "sk-test",
            maxOutput: 1000,
          }),
        ],
        retry: { maxAttempts: 1 },
      });
      const cluster = await openClusterDirectory({
        url: schema.url,
        instanceID: `instance-${i}`,
        leaseMs: 15_000,
      });
      directories.push(cluster);
      const server = await startServer(
        { store, llm, runner: createRunner({ store, llm }), log: recorded.log, cluster },
        { ...DEFAULT_SERVER_OPTIONS, port: 0, runSseContentType: "connect" },
      );
      await cluster.advertise(server.url);
      servers.push(server);
      closers.push(async () => {
        await server.close();
        await cluster.close();
        await store.close();
      });
    }
    const [owner, other] = servers as [LocalServer, LocalServer];

    const requestId = randomUUID();
    const client = createCursorClient({
      baseUrl: owner.url,
      httpVersion: "1.1",
      workspace: mkdtempSync(path.join(tmpdir(), "served-here-")),
    });
    const turn = client.startTurn(
      { conversationId: randomUUID(), text: "hello", modelId: "scripted" },
      { requestId },
    );
    await provider.seen(1);

    /** Clients of `other` that send `header` as x-request-id (null: none at all). */
    const clientsOf = (httpVersion: "1.1" | "2", header: string | null) => {
      const transport = createConnectTransport({
        baseUrl: other.url,
        httpVersion,
        interceptors: [
          (next) => (request) => {
            if (header === null) request.header.delete("x-request-id");
            else request.header.set("x-request-id", header);
            return next(request);
          },
        ],
      });
      return {
        agent: createClient(AgentService, transport),
        bidi: createClient(BidiService, transport),
      };
    };
    /**
     * The answer to a RunSSE for the stream: its error, or "served" when the stream was restored
     * and its held model call sent a second time.
     */
    const runSse = async (httpVersion: "1.1" | "2", header: string | null) => {
      const controller = new AbortController();
      const { agent } = clientsOf(httpVersion, header);
      const answer = (async () => {
        try {
          for await (const _ of agent.runSSE({ requestId }, { signal: controller.signal }))
            return "served";
          return "ended";
        } catch (error) {
          return ConnectError.from(error);
        }
      })();
      const outcome = await Promise.race([answer, provider.seen(2).then(() => "served")]);
      controller.abort();
      return outcome;
    };
    const append = async (httpVersion: "1.1" | "2", header: string | null) => {
      const { bidi } = clientsOf(httpVersion, header);
      const request = create(BidiAppendRequestSchema, {
        requestId: { requestId },
        appendSeqno: 1n,
        dataBinary: toBinary(
          AgentClientMessageSchema,
          create(AgentClientMessageSchema, {
            message: { case: "clientHeartbeat", value: {} },
          }),
        ),
      });
      const answer = bidi.bidiAppend(request).then(
        () => "served",
        (error: unknown) => ConnectError.from(error),
      );
      return Promise.race([answer, provider.seen(2).then(() => "served")]);
    };
    const elsewhere = toProtocolError({ type: "served_elsewhere" });
    const mismatch = toProtocolError({ type: "request_id_mismatch" });
    const refusedWith = (outcome: unknown, expected: ConnectError, what: string) => {
      assert.ok(outcome instanceof ConnectError, `${what}: ${String(outcome)}`);
      assert.equal(outcome.code, expected.code, what);
      assert.equal(outcome.rawMessage, expected.rawMessage, what);
    };

    try {
      for (const version of ["1.1", "2"] as const) {
        refusedWith(await runSse(version, null), elsewhere, `RunSSE/${version}, no header`);
        refusedWith(await runSse(version, randomUUID()), mismatch, `RunSSE/${version}, decoy`);
        refusedWith(await runSse(version, "x".repeat(129)), mismatch, `RunSSE/${version}, long`);
        refusedWith(await append(version, null), elsewhere, `BidiAppend/${version}, no header`);
        refusedWith(await append(version, randomUUID()), mismatch, `BidiAppend/${version}, decoy`);
      }
      assert.equal(
        (await (directories as [ClusterDirectory, ClusterDirectory])[1].claim(requestId)).type,
        "elsewhere",
      );
      assert.deepEqual(
        recorded.lines.filter((line) => line.message.includes("picking up a stream")),
        [],
      );
      provider.release();
      const done = await turn.done;
      assert.equal(done.error, undefined);
      assert.equal(done.view.text, "done");
      assert.equal(provider.bodies.length, 1, "the model call was sent by two instances");
    } finally {
      provider.release();
      await turn.done.catch(() => {});
      await client.close();
      for (const close of closers) await close();
      provider.server.closeAllConnections();
      provider.server.close();
      await schema.drop();
    }
  });
}
