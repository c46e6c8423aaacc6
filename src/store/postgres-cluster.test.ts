/**
 * Leases of the stream directory (postgres-cluster.ts) follow the database's clock: an instance
 * whose own clock is off neither loses its live streams to another instance nor keeps a lease
 * that expired; an instance that cannot renew its lease is told to stop serving (self-fencing)
 * before another can take its streams over. Needs a real PostgreSQL (testing/postgres-server.ts).
 */
import assert from "node:assert/strict";
import { createServer, type Socket, connect as tcpConnect } from "node:net";
import { after, before, describe, mock, test } from "node:test";
import { type ClusterDirectory, openClusterDirectory, openPostgresStore } from "./index.ts";
import { getTestPostgres } from "./testing/postgres-server.ts";

const postgres = await getTestPostgres();
const LEASE_MS = 3_000;
/** Fencing leaves a fifth of the lease to spare: 1.2 s here, for the checks that follow it. */
const FENCE_LEASE_MS = 6_000;

if (postgres.type === "unavailable") {
  test(`cluster leases: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  describe("cluster leases on the database's clock", { concurrency: 1 }, () => {
    let url: string;
    let drop: () => Promise<void>;
    const opened: ClusterDirectory[] = [];
    const open = async (name: string) => {
      const directory = await openClusterDirectory({
        url,
        instanceID: name,
        advertiseUrl: `http://${name}.invalid:8765`,
        leaseMs: LEASE_MS,
      });
      opened.push(directory);
      return directory;
    };

    before(async () => {
      const schema = await postgres.server.createSchema();
      url = schema.url;
      drop = schema.drop;
      await (await openPostgresStore({ url })).close();
    });
    after(async () => {
      for (const directory of opened) await directory.close();
      await drop();
    });

    test("an instance whose clock is a minute behind keeps its live streams", async () => {
      const behind = Date.now() - 60_000;
      const clock = mock.method(Date, "now", () => behind);
      let slow: ClusterDirectory;
      try {
        slow = await open("slow-clock");
        assert.deepEqual(await slow.claim("r-1"), { type: "mine" });
      } finally {
        clock.mock.restore();
      }
      const other = await open("right-clock");
      assert.deepEqual(await other.claim("r-1"), {
        type: "elsewhere",
        instanceID: "slow-clock",
        url: "http://slow-clock.invalid:8765",
      });
    });

    test("an instance whose clock is a minute ahead cannot take a live stream over", async () => {
      const owner = await open("owner");
      assert.deepEqual(await owner.claim("r-2"), { type: "mine" });
      const ahead = Date.now() + 60_000;
      const clock = mock.method(Date, "now", () => ahead);
      try {
        const fast = await open("fast-clock");
        assert.equal((await fast.claim("r-2")).type, "elsewhere");
      } finally {
        clock.mock.restore();
      }
    });

    test("an instance cut off from the database fences itself before its lease can be taken over", {
      timeout: 30_000,
    }, async () => {
      // A TCP relay in front of PostgreSQL that can stop passing bytes: the heartbeat's
      // statements then hang, as over a partitioned network.
      const target = new URL(url);
      const sockets: Socket[] = [];
      let frozen = false;
      const relay = createServer((client) => {
        const server = tcpConnect(Number(target.port), target.hostname);
        sockets.push(client, server);
        client.on("data", (chunk) => {
          if (!frozen) server.write(chunk);
        });
        server.on("data", (chunk) => {
          if (!frozen) client.write(chunk);
        });
        client.on("error", () => server.destroy());
        server.on("error", () => client.destroy());
        client.on("close", () => server.destroy());
        server.on("close", () => client.destroy());
      });
      await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
      const relayed = new URL(url);
      relayed.hostname = "127.0.0.1";
      relayed.port = String((relay.address() as { port: number }).port);
      let lost!: () => void;
      const leaseLost = new Promise<void>((resolve) => (lost = resolve));
      let calls = 0;
      const cutOff = await openClusterDirectory({
        url: relayed.toString(),
        instanceID: "cut-off",
        advertiseUrl: "http://cut-off.invalid:8765",
        leaseMs: FENCE_LEASE_MS,
        onLeaseLost: () => {
          calls += 1;
          lost();
        },
      });
      // The same lease as the fenced instance's, as every instance of one team is configured.
      const watcher = await openClusterDirectory({
        url,
        instanceID: "watcher",
        advertiseUrl: "http://watcher.invalid:8765",
        leaseMs: FENCE_LEASE_MS,
      });
      opened.push(watcher);
      try {
        assert.deepEqual(await cutOff.claim("r-fenced"), { type: "mine" });
        // Healthy: its heartbeat is renewed, and it is not fenced.
        assert.equal(await watcher.awaitVerdict("cut-off"), "alive");
        assert.equal(calls, 0);
        frozen = true;
        await leaseLost;
        // Fenced while its lease still holds: nobody has taken the stream over yet.
        assert.equal((await watcher.claim("r-fenced")).type, "elsewhere");
        // Then the lease runs out, and the stream moves.
        assert.equal(await watcher.awaitVerdict("cut-off"), "expired");
        assert.deepEqual(await watcher.claim("r-fenced"), { type: "mine" });
        assert.equal(calls, 1);
      } finally {
        for (const socket of sockets) socket.destroy();
        relay.close();
        await cutOff.close().catch(() => {});
      }
    });
  });
}
