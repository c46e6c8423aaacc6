/**
 * Who may read what on a team server (docs/team.md "Users and budgets"): with users on, the
 * dashboard — every user's conversations and exact requests — opens with the admin's token only,
 * never with a user's token nor with a loopback Host header; `serve` will not start with users
 * and no admin token; and a user database that stalls answers `unavailable`, not
 * `unauthenticated`, with as many connections as `data.postgres.poolSize` allows. Needs a real
 * PostgreSQL (store/testing/postgres-server.ts).
 */
import assert from "node:assert/strict";
import { request } from "node:http";
import { after, before, describe, test } from "node:test";
import pg from "pg";
import { toConfig } from "../config/index.ts";
import { createLLM } from "../llm/index.ts";
import { createRunner } from "../runner/runner.ts";
import { openPostgresStore } from "../store/postgres-store.ts";
import { openPostgresUsers } from "../store/postgres-users.ts";
import { getTestPostgres } from "../store/testing/postgres-server.ts";
import type { Store } from "../store/types.ts";
import type { Users } from "../store/users.ts";
import { silentLog } from "../transport/log.ts";
import { DEFAULT_SERVER_OPTIONS, type LocalServer, startServer } from "../transport/server.ts";
import { toStartProblems } from "./serve.ts";
import { openTeam } from "./team-users.ts";

const postgres = await getTestPostgres();
const ADMIN = "admin-token-for-tests-0123456789abcdef";

function get(
  url: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const call = request(new URL(path, url), { headers }, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
    });
    call.on("error", reject);
    call.end();
  });
}

/** A Connect unary call with a user's token. */
function call(url: string, token: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(new URL("/aiserver.v1.ServerConfigService/GetServerConfig", url), {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    });
    outgoing.on("response", (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
    });
    outgoing.on("error", reject);
    outgoing.end("{}");
  });
}

async function startTeamServer(
  store: Store,
  users: Pick<Users, "authenticate" | "bindConversation" | "ownerOf" | "checkBudget">,
  accessToken: string | undefined,
): Promise<LocalServer> {
  const llm = createLLM({ models: [] });
  return startServer(
    {
      store,
      llm,
      runner: createRunner({ store, llm }),
      log: silentLog,
      authenticate: (token) => users.authenticate(token),
    },
    {
      ...DEFAULT_SERVER_OPTIONS,
      port: 0,
      ...(accessToken === undefined ? {} : { accessToken }),
    },
  );
}

test("serve does not start with server.users and no admin token, naming the setting", () => {
  const config = toConfig("server:\n  users: true\n", {
    location: { path: "/home/me/config.yaml", namedBy: undefined },
    cwd: "/work",
    env: { DATABASE_URL: "postgres://u@db:5432/byok" },
    platform: "linux",
    homeDir: "/home/me",
  });
  assert.deepEqual(
    toStartProblems(config).filter((problem) => problem.includes("server.users")),
    [
      "server.users needs the admin's access token (server.accessTokenEnv): the dashboard shows " +
        "every user's conversations and is opened with that token only (docs/team.md).",
    ],
  );
});

if (postgres.type === "unavailable") {
  test(`team access: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  describe("the dashboard of a team server", { concurrency: 1 }, () => {
    let store: Store;
    let users: Users;
    let drop: () => Promise<void>;
    let userToken = "";
    const servers: LocalServer[] = [];

    before(async () => {
      const schema = await postgres.server.createSchema();
      drop = schema.drop;
      store = await openPostgresStore({ url: schema.url, poolSize: 2 });
      users = openPostgresUsers({ url: schema.url });
      userToken = (await users.add("ann")).token;
    });
    after(async () => {
      for (const server of servers) await server.close();
      await store.close();
      await users.close();
      await drop();
    });

    const API = ["/ui/api/conversations", "/ui/api/usage", "/ui/api/setup"];

    test("with users and no admin token, it is shut: not by Host: localhost, not by a user's token", async () => {
      const server = await startTeamServer(store, users, undefined);
      servers.push(server);
      for (const path of API) {
        const cases: Record<string, string>[] = [
          { host: "localhost" },
          { host: "127.0.0.1" },
          { host: "localhost", authorization: `Bearer ${userToken}` },
        ];
        for (const headers of cases) {
          const answer = await get(server.url, path, headers);
          assert.equal(answer.status, 401, `${path} ${JSON.stringify(headers)}`);
        }
      }
    });

    test("with an admin token, it opens with that token and not a user's", async () => {
      const server = await startTeamServer(store, users, ADMIN);
      servers.push(server);
      for (const path of API) {
        assert.equal((await get(server.url, path, { host: "localhost" })).status, 401, path);
        const byUser = await get(server.url, path, { authorization: `Bearer ${userToken}` });
        assert.equal(byUser.status, 401, path);
        const byAdmin = await get(server.url, path, { authorization: `Bearer ${ADMIN}` });
        assert.equal(byAdmin.status, 200, path);
      }
    });
  });
}

if (postgres.type === "ready") {
  describe("a stalled user database", { concurrency: 1 }, () => {
    test("a token check that fails answers unavailable (503), using data.postgres.poolSize connections", async () => {
      const POOL = 6;
      const schema = await postgres.server.createSchema();
      const store = await openPostgresStore({ url: schema.url, poolSize: 2 });
      const config = toConfig(
        `data:\n  postgres:\n    url: "${schema.url}"\n    poolSize: ${POOL}\n    statementTimeoutMs: 3000\n`,
        {
          location: { path: "/home/me/config.yaml", namedBy: undefined },
          cwd: "/work",
          env: {},
          platform: "linux",
          homeDir: "/home/me",
        },
      );
      const team = openTeam(config);
      const token = (await team.users.add("ann")).token;
      const server = await startTeamServer(store, team.users, ADMIN);
      const locker = new pg.Client({ connectionString: schema.url });
      await locker.connect();
      const observer = new pg.Client({ connectionString: schema.url });
      await observer.connect();
      try {
        assert.equal((await call(server.url, token)).status, 200);
        // The users table stalls: every token lookup waits, each holding a pool connection.
        await locker.query("begin");
        await locker.query("lock table users in access exclusive mode");
        const stalled = Array.from({ length: POOL }, () => call(server.url, token));
        const waiting = async () =>
          Number(
            // Read outside the locker's transaction: within one, the activity is a snapshot.
            (
              await observer.query<{ n: string }>(
                "select count(*) as n from pg_stat_activity where application_name = " +
                  "'cursor-byok' and wait_event_type = 'Lock' and query like '%token_hash%'",
              )
            ).rows[0]?.n,
          );
        const deadline = Date.now() + 2_500;
        let seen = await waiting();
        while (seen < POOL && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          seen = await waiting();
        }
        assert.equal(seen, POOL, "one lookup per pool connection");
        const late = call(server.url, token);
        // The statement time-out ends the stalled lookups: the server's failure, not a bad token.
        for (const answer of await Promise.all(stalled)) {
          assert.equal(answer.status, 503);
          assert.equal(JSON.parse(answer.body).code, "unavailable");
        }
        await locker.query("commit");
        assert.equal((await late).status, 200, "answered again once the database does");
      } finally {
        await locker.end();
        await observer.end();
        await server.close();
        await team.close();
        await store.close();
        await schema.drop();
      }
    });
  });
}
