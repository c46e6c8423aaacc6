/**
 * Several instances on one PostgreSQL database (docs/team.md "Several instances"): three server
 * processes behind a plain round-robin balancer on 127.0.0.1 (round-robin-balancer.ts), so the
 * RunSSE and the BidiAppends of one agent stream land on different instances and are forwarded
 * to the stream's owner (transport/cluster.ts). The model is a fake provider on 127.0.0.1.
 * Needs a real PostgreSQL (store/testing/postgres-server.ts); skipped, with the reason, without.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { after, before, describe, test } from "node:test";
import pg from "pg";
import { toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import {
  type FakeProvider,
  type RecordedRequest,
  startFakeProvider,
} from "../../llm/testing/fake-provider.ts";
import { openPostgresStore, openPostgresUsers } from "../../store/index.ts";
import { getTestPostgres } from "../../store/testing/postgres-server.ts";
import { createCursorClient } from "../testing/index.ts";
import {
  type Balancer,
  startRoundRobinBalancer,
  startRoundRobinH2Balancer,
} from "./round-robin-balancer.ts";
import { API_KEY, type ChildServer, MODEL, startServerProcess } from "./test-harness.ts";

const postgres = await getTestPostgres();
/** A test fails after this long instead of hanging a run (a stream held open, say). */
const TEST_LIMIT_MS = 120_000;
const INSTANCES = 3;
const CONVERSATIONS = 12;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Reads the file the user names, then answers with what it holds. */
function answer(request: RecordedRequest) {
  const body = JSON.parse(request.body) as {
    messages: { role: string; content?: unknown }[];
  };
  const user = body.messages.find((message) => message.role === "user");
  const file = /read (f\d+\.txt)/.exec(JSON.stringify(user?.content ?? ""))?.[1] ?? "missing.txt";
  const result = body.messages.find((message) => message.role === "tool");
  const reply =
    result === undefined
      ? { toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: file } }] }
      : { text: `done: ${JSON.stringify(result.content).includes("secret-") ? "read" : "?"}` };
  return { type: "sse", body: toChatCompletionSse(reply) } as const;
}

if (postgres.type === "unavailable") {
  test(`several instances: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  describe("three instances on one PostgreSQL behind a round-robin balancer", {
    concurrency: 1,
  }, () => {
    let url: string;
    let drop: () => Promise<void>;
    let provider: FakeProvider;
    let balancer: Balancer;
    const instances: ChildServer[] = [];
    let token = "";
    let killed: ChildServer | undefined;
    const clientOf = () =>
      createCursorClient({
        baseUrl: balancer.url,
        httpVersion: "1.1",
        workspace,
        timeoutMs: 30_000,
        headers: { authorization: `Bearer ${token}` },
      });
    const workspace = mkdtempSync(join(tmpdir(), "cursor-byok-cluster-"));

    before(async () => {
      const schema = await postgres.server.createSchema();
      url = schema.url;
      drop = schema.drop;
      await (await openPostgresStore({ url, poolSize: 1 })).close(); // migrated once
      const users = openPostgresUsers({ url });
      token = (await users.add("ann")).token;
      await users.close();
      provider = await startFakeProvider();
      provider.answer(answer);
      for (let i = 0; i < INSTANCES; i++) {
        instances.push(
          await startServerProcess({
            providerUrl: provider.url,
            apiKey: API_KEY,
            model: MODEL,
            dbPath: "",
            port: await freePort(),
            databaseUrl: url,
            instanceID: `instance-${i}`,
            leaseMs: 3_000,
            users: true,
          }),
        );
      }
      balancer = await startRoundRobinBalancer(instances.map((instance) => instance.url));
      for (let i = 0; i < CONVERSATIONS + 1; i++) {
        writeFileSync(join(workspace, `f${i}.txt`), `secret-${i}\n`);
      }
    });
    after(async () => {
      await balancer?.close();
      for (const instance of instances) await instance.close();
      await provider?.close();
      await drop?.();
      rmSync(workspace, { recursive: true, force: true });
    });

    test("many concurrent conversations complete, each stream's calls on several instances", {
      timeout: TEST_LIMIT_MS,
    }, async () => {
      const client = clientOf();
      try {
        const results = await Promise.all(
          Array.from(
            { length: CONVERSATIONS },
            (_, i) =>
              client.startTurn({ conversationId: `c${i}`, text: `read f${i}.txt`, modelId: MODEL })
                .done,
          ),
        );
        for (const [i, result] of results.entries()) {
          assert.equal(result.error, undefined, `conversation c${i}: ${result.error?.message}`);
          assert.match(result.view.text, /done: read/, `conversation c${i}`);
        }
      } finally {
        await client.close();
      }
      const byStream = new Map<string, Set<number>>();
      for (const hit of balancer.hits) {
        if (hit.requestID === undefined || !/RunSSE|BidiAppend/.test(hit.path)) continue;
        byStream.set(hit.requestID, (byStream.get(hit.requestID) ?? new Set()).add(hit.backend));
      }
      assert.equal(byStream.size, CONVERSATIONS);
      const spread = [...byStream.values()].filter((backends) => backends.size >= 2).length;
      assert.ok(spread >= CONVERSATIONS / 2, `${spread} streams reached several instances`);
      assert.equal(new Set(balancer.hits.map((hit) => hit.backend)).size, INSTANCES);
    });

    test("over HTTP/2 too: RunSSE and BidiAppends landing on different instances reach the owner", {
      timeout: TEST_LIMIT_MS,
    }, async () => {
      const h2 = await startRoundRobinH2Balancer(instances.map((instance) => instance.url));
      const client = createCursorClient({
        baseUrl: h2.url,
        httpVersion: "2",
        runSseOverHttp2: true,
        workspace,
        timeoutMs: 30_000,
        headers: { authorization: `Bearer ${token}` },
      });
      try {
        // One turn at a time: each turn's RunSSE and BidiAppends then take consecutive turns of
        // the round robin, so every stream reaches at least two instances. Concurrent turns in
        // lockstep could each keep landing on one instance (three streams, three instances), and
        // the HTTP/1.1 test above already covers concurrency.
        const results = [];
        for (const i of [0, 1, 2]) {
          results.push(
            await client.startTurn({
              conversationId: `h2-${i}`,
              text: `read f${i}.txt`,
              modelId: MODEL,
            }).done,
          );
        }
        for (const [i, result] of results.entries()) {
          assert.equal(result.error, undefined, `conversation h2-${i}: ${result.error?.message}`);
          assert.match(result.view.text, /done: read/, `conversation h2-${i}`);
        }
      } finally {
        await client.close();
        await h2.close();
      }
      const byStream = new Map<string, Set<number>>();
      for (const hit of h2.hits) {
        if (hit.requestID === undefined || !/RunSSE|BidiAppend/.test(hit.path)) continue;
        byStream.set(hit.requestID, (byStream.get(hit.requestID) ?? new Set()).add(hit.backend));
      }
      assert.equal(byStream.size, 3);
      assert.ok([...byStream.values()].every((backends) => backends.size >= 2));
    });

    test("an instance advertising a wrong port keeps its streams; the others answer 503", {
      timeout: TEST_LIMIT_MS,
    }, async () => {
      // Alive and serving, but the address it advertises refuses connections.
      const wrong = await startServerProcess({
        providerUrl: provider.url,
        apiKey: API_KEY,
        model: MODEL,
        dbPath: "",
        port: await freePort(),
        databaseUrl: url,
        instanceID: "wrong-port",
        leaseMs: 3_000,
        users: true,
        advertiseUrl: `http://127.0.0.1:${await freePort()}`,
      });
      const requestId = randomUUID();
      const client = createCursorClient({
        baseUrl: wrong.url,
        httpVersion: "1.1",
        workspace,
        timeoutMs: 30_000,
        headers: { authorization: `Bearer ${token}` },
      });
      try {
        const result = await client.startTurn(
          { conversationId: "wrong-port", text: "read f0.txt", modelId: MODEL },
          { requestId },
        ).done;
        assert.equal(result.error, undefined, result.error?.message);
        assert.equal(await ownerOf(url, requestId), "wrong-port");
        const calls = provider.requests.length;
        // Its stream's calls reaching another instance: refused, not taken over.
        for (const path of [
          "/agent.v1.AgentService/RunSSE",
          "/aiserver.v1.BidiService/BidiAppend",
        ]) {
          const answer = await fetch(`${(instances[1] as ChildServer).url}${path}`, {
            method: "POST",
            headers: {
              "content-type": "application/connect+proto",
              authorization: `Bearer ${token}`,
              "x-request-id": requestId,
            },
            body: new Uint8Array(5),
            signal: AbortSignal.timeout(30_000),
          });
          assert.equal(answer.status, 503, path);
          assert.match(await answer.text(), /"code":"unavailable".*cannot be reached/, path);
        }
        assert.equal(await ownerOf(url, requestId), "wrong-port");
        assert.equal(provider.requests.length, calls, "no instance ran the turn again");
      } finally {
        await client.close();
        await wrong.close();
      }
    });

    test("the owner killed mid-turn: another instance takes the stream over and the turn ends", {
      timeout: TEST_LIMIT_MS,
    }, async () => {
      const requestId = randomUUID();
      const first = provider.requests.length;
      // The turn's first model call streams one event, then stalls until its instance dies.
      provider.reply({
        type: "stall",
        body: toChatCompletionSse({
          toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "f12.txt" } }],
        }),
        events: 1,
      });
      const client = clientOf();
      try {
        const turn = client.startTurn(
          { conversationId: "killed", text: "read f12.txt", modelId: MODEL },
          { requestId },
        );
        const lost = turn.runSseLost();
        await provider.request(first);
        const owner = await ownerOf(url, requestId);
        const victim = instances[Number(owner.replace("instance-", ""))] as ChildServer;
        killed = victim;
        await victim.kill();
        await lost;
        turn.reconnectRunSse();
        const result = await turn.done;
        assert.equal(result.error, undefined, result.error?.message);
        assert.match(result.view.text, /done: read/);
        const successor = await ownerOf(url, requestId);
        assert.notEqual(successor, owner);
        // The interrupted call was sent again (by the successor), with the bytes saved before.
        const calls = provider.requests.slice(first);
        assert.equal(calls[0]?.body, calls[1]?.body);
      } finally {
        await client.close();
      }
    });

    test("a revoked token is refused at once by every instance", {
      timeout: TEST_LIMIT_MS,
    }, async () => {
      const live = instances.filter((instance) => instance !== killed);
      assert.ok(live.length >= 2);
      const statusAt = async (instanceUrl: string) =>
        (
          await fetch(`${instanceUrl}/aiserver.v1.AiService/GetServerConfig`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
            body: "{}",
          })
        ).status;
      for (const instance of live) assert.equal(await statusAt(instance.url), 200);
      const users = openPostgresUsers({ url });
      assert.ok(await users.revoke("ann", Date.now()));
      await users.close();
      for (const instance of live) assert.equal(await statusAt(instance.url), 401);
    });

    test("the owner shut down mid-turn (SIGTERM) hands the stream over; the turn ends", {
      timeout: TEST_LIMIT_MS,
    }, async () => {
      // A new user: ann was revoked above.
      const users = openPostgresUsers({ url });
      token = (await users.add("bo")).token;
      await users.close();
      const requestId = randomUUID();
      const first = provider.requests.length;
      provider.reply({
        type: "stall",
        body: toChatCompletionSse({
          toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "f12.txt" } }],
        }),
        events: 1,
      });
      const client = clientOf();
      try {
        const turn = client.startTurn(
          { conversationId: "handed-over", text: "read f12.txt", modelId: MODEL },
          { requestId },
        );
        const lost = turn.runSseLost();
        await provider.request(first);
        const owner = await ownerOf(url, requestId);
        const leaving = instances[Number(owner.replace("instance-", ""))] as ChildServer;
        assert.notEqual(leaving, killed);
        const stopped = performance.now();
        await leaving.close(); // SIGTERM: graceful
        const seconds = (performance.now() - stopped) / 1000;
        assert.ok(seconds < 15, `shut down in ${seconds.toFixed(1)} s`);
        await lost;
        turn.reconnectRunSse();
        const result = await turn.done;
        assert.equal(result.error, undefined, result.error?.message);
        assert.match(result.view.text, /done: read/);
        assert.notEqual(await ownerOf(url, requestId), owner);
      } finally {
        await client.close();
      }
    });
  });
}

async function ownerOf(url: string, requestID: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result = await client.query<{ instance_id: string }>(
      "select instance_id from stream_owners where request_id = $1",
      [requestID],
    );
    return result.rows[0]?.instance_id ?? "";
  } finally {
    await client.end();
  }
}
