/**
 * The PostgreSQL users (postgres-users.ts) against a real server (testing/postgres-server.ts):
 * bindings under concurrency and the ledger's settlement. Skipped, with the reason, when no
 * PostgreSQL is available.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { openPostgresStore } from "./postgres-store.ts";
import { openPostgresUsers } from "./postgres-users.ts";
import { getTestPostgres } from "./testing/postgres-server.ts";

const postgres = await getTestPostgres();

if (postgres.type === "unavailable") {
  test(`PostgreSQL users: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  const { server } = postgres;
  /** A migrated schema and two independent `Users` on it (as two instances have). */
  const open = async () => {
    const schema = await server.createSchema();
    await (await openPostgresStore({ url: schema.url, poolSize: 2 })).close();
    const a = openPostgresUsers({ url: schema.url, poolSize: 4 });
    const b = openPostgresUsers({ url: schema.url, poolSize: 4 });
    return {
      a,
      b,
      url: schema.url,
      cleanup: async () => {
        await a.close();
        await b.close();
        await schema.drop();
      },
    };
  };

  test("two users binding one new id at once: exactly one is told it is theirs (M1)", async () => {
    const { a, b, cleanup } = await open();
    try {
      const ann = (await a.add("ann")).user.userID;
      const bob = (await a.add("bob")).user.userID;
      let both = 0;
      let neither = 0;
      const rounds = 300;
      for (let i = 0; i < rounds; i++) {
        const id = randomUUID();
        const bind = i % 2 === 0 ? "bindStream" : "bindConversation";
        const [ra, rb] = await Promise.all([
          a[bind](id, ann, Date.now()),
          b[bind](id, bob, Date.now()),
        ]);
        if (ra === ann && rb === bob) both++;
        if (ra !== rb) neither++;
      }
      assert.equal(both, 0, `${both} of ${rounds} ids were handed to both users`);
      assert.equal(neither, 0, "both answers name the one committed owner");
    } finally {
      await cleanup();
    }
  });
}
