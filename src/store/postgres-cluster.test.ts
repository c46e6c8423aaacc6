/**
 * Leases of the stream directory (postgres-cluster.ts) follow the database's clock: an instance
 * whose own clock is off neither loses its live streams to another instance nor keeps a lease
 * that expired. Needs a real PostgreSQL (testing/postgres-server.ts).
 */
import assert from "node:assert/strict";
import { after, before, describe, mock, test } from "node:test";
import { type ClusterDirectory, openClusterDirectory, openPostgresStore } from "./index.ts";
import { getTestPostgres } from "./testing/postgres-server.ts";

const postgres = await getTestPostgres();
const LEASE_MS = 3_000;

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
  });
}
