/**
 * Rewinds and forks of a client that does not send its checkpoint's blobs back
 * (`pre_fetched_blobs`; whether the IDE does is unverified, docs/protocol.md "Rewinds"): the last
 * turn of its checkpoint is then only a turn blob id, which the server resolves from the turn
 * blobs it recorded in the store (transport/turn-blob-origins.ts, store/turn-blobs.ts) — after a
 * restart (SIGKILL) and on another instance of a team, where nothing of it is in memory.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import { type FakeProvider, startFakeProvider } from "../../llm/testing/fake-provider.ts";
import { openPostgresStore, TURN_BLOBS_PER_REQUEST } from "../../store/index.ts";
import { getTestPostgres } from "../../store/testing/postgres-server.ts";
import { type CursorClient, createCursorClient } from "../testing/index.ts";
import { messagesBytes, runTurn, textsOf, turn } from "./provider-turns.ts";
import {
  API_KEY,
  type ChildServer,
  type Harness,
  MODEL,
  startHarness,
  startServerProcess,
} from "./test-harness.ts";

/** Every checkpoint of these clients' run requests is blob ids only. */
function assertBlobIDsOnly(client: CursorClient, conversationId: string): void {
  const checkpoint = client.checkpoint(conversationId);
  assert.ok(checkpoint !== undefined && checkpoint.turns.length > 0);
  assert.ok(
    checkpoint.turns.every((entry) => entry.length === 32),
    "blob-form turns",
  );
  const request = client.runRequest(turn(conversationId, "probe", "m-probe"));
  assert.deepEqual(request.preFetchedBlobs, [], "nothing sent back");
}

describe("a client that sends no blobs back, after a restart (process mode, SQLite)", () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({ mode: "process" });
  });
  after(() => harness.close());

  test("an edit of an earlier message after a restart is a rewind: the model does not see the turns edited away", async () => {
    const id = "blobs-rewind-0001";
    const client = harness.client({ prefetchBlobs: false });
    // Turn A reads a file several times: more checkpoints (turn blobs) than the store keeps
    // per turn; its last one is what the client holds.
    writeFileSync(join(harness.workspace, "a.txt"), "alpha\n");
    const reads = TURN_BLOBS_PER_REQUEST;
    harness.reply(
      ...Array.from({ length: reads }, (_, index) => ({
        toolCalls: [{ id: `call_${index}`, name: "read_file", arguments: { path: "a.txt" } }],
      })),
      { text: "answer A" },
    );
    assert.equal((await client.startTurn(turn(id, "A", "mA")).done).error, undefined);
    const beforeB = client.checkpoint(id);
    await runTurn(harness, client, turn(id, "B", "mB"), "answer B");
    await runTurn(harness, client, turn(id, "C", "mC"), "answer C");
    assertBlobIDsOnly(client, id);

    await harness.restart(); // SIGKILL: nothing of the turn blobs is left in memory
    const edited = await runTurn(
      harness,
      client,
      { ...turn(id, "B2", "mB"), checkpoint: beforeB ?? null },
      "answer B2",
    );
    assert.deepEqual(textsOf(edited, "user"), ["A", "B2"]);
    assert.deepEqual(textsOf(edited, "assistant").at(-1), "answer A");
    const next = await runTurn(harness, client, turn(id, "D", "mD"), "answer D");
    assert.deepEqual(textsOf(next, "user"), ["A", "B2", "D"]);
    assert.ok(messagesBytes(next).startsWith(messagesBytes(edited)), "a prefix extension");
  });

  test("a fork after a restart copies the source's history up to the checkpoint's last turn", async () => {
    const source = "blobs-fork-src-0001";
    const fork = "blobs-fork-new-0001";
    const client = harness.client({ prefetchBlobs: false });
    await runTurn(harness, client, turn(source, "A", "mA"), "answer A");
    const second = await runTurn(harness, client, turn(source, "B", "mB"), "answer B");
    assertBlobIDsOnly(client, source);
    await harness.restart();
    const forked = await runTurn(
      harness,
      client,
      { ...turn(fork, "F", "mF"), checkpoint: client.checkpoint(source) ?? null },
      "answer F",
    );
    assert.deepEqual(textsOf(forked, "user"), ["A", "B", "F"]);
    assert.ok(messagesBytes(forked).startsWith(messagesBytes(second)), "the same prompt prefix");
  });
});

const postgres = await getTestPostgres();

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

if (postgres.type === "unavailable") {
  test(`turn blobs on PostgreSQL: skipped, ${postgres.reason}`, {
    skip: postgres.reason,
  }, () => {});
} else {
  describe("two instances on one PostgreSQL (server processes)", () => {
    let provider: FakeProvider;
    let drop: () => Promise<void>;
    const instances: ChildServer[] = [];
    const workspace = mkdtempSync(join(tmpdir(), "cursor-byok-blobs-"));
    before(async () => {
      const schema = await postgres.server.createSchema();
      drop = schema.drop;
      await (await openPostgresStore({ url: schema.url, poolSize: 1 })).close(); // migrated once
      provider = await startFakeProvider();
      for (let i = 0; i < 2; i++) {
        instances.push(
          await startServerProcess({
            providerUrl: provider.url,
            apiKey: API_KEY,
            model: MODEL,
            dbPath: "",
            port: await freePort(),
            databaseUrl: schema.url,
            instanceID: `blobs-${i}`,
          }),
        );
      }
    });
    after(async () => {
      for (const instance of instances) await instance.close();
      await provider?.close();
      await drop?.();
      rmSync(workspace, { recursive: true, force: true });
    });

    test("an edit sent to the other instance: the turn blob written by the first is resolved there", async () => {
      const clientOf = (instance: number) =>
        createCursorClient({
          baseUrl: (instances[instance] as ChildServer).url,
          httpVersion: "1.1",
          workspace,
          timeoutMs: 30_000,
          prefetchBlobs: false,
        });
      const first = clientOf(0);
      const second = clientOf(1);
      const id = "blobs-pg-rewind-0001";
      const ask = async (client: CursorClient, init: Parameters<CursorClient["startTurn"]>[0]) => {
        const answer = `answer ${"text" in init ? init.text : ""}`;
        provider.reply({ type: "sse", body: toChatCompletionSse({ text: answer }) });
        const before = provider.requests.length;
        const result = await client.startTurn(init).done;
        assert.equal(result.error, undefined);
        return provider.requests[before]?.body ?? "";
      };
      try {
        await ask(first, turn(id, "A", "mA"));
        const beforeB = first.checkpoint(id);
        await ask(first, turn(id, "B", "mB"));
        await ask(first, turn(id, "C", "mC"));
        assertBlobIDsOnly(first, id);
        // The other instance never wrote these turn blobs; the client edits B there.
        const edited = await ask(second, {
          ...turn(id, "B2", "mB"),
          checkpoint: beforeB ?? null,
        });
        assert.deepEqual(textsOf(edited, "user"), ["A", "B2"]);
        assert.deepEqual(textsOf(edited, "assistant"), ["answer A"]);
      } finally {
        await first.close();
        await second.close();
      }
    });
  });
}
