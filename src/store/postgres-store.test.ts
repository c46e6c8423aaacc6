/**
 * The PostgreSQL store against a real server (testing/postgres-server.ts): the store contract
 * and the dashboard contract, the same suites the SQLite and memory stores pass. Skipped, with the
 * reason, when no PostgreSQL is available.
 */
import { test } from "node:test";
import { openPostgresStore } from "./postgres-store.ts";
import { runStoreContract } from "./testing/contract.ts";
import { runDashboardContract } from "./testing/dashboard-contract.ts";
import { getTestPostgres } from "./testing/postgres-server.ts";

const postgres = await getTestPostgres();

if (postgres.type === "unavailable") {
  test(`PostgreSQL store: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  const { server } = postgres;
  const open = async (options?: Parameters<typeof openPostgresStore>[0] | object) => {
    const schema = await server.createSchema();
    return {
      store: await openPostgresStore({ ...options, url: schema.url, poolSize: 4 }),
      cleanup: () => schema.drop(),
    };
  };
  runStoreContract("PostgreSQL", open);
  runDashboardContract("PostgreSQL", open);
}
