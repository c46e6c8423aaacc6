/**
 * Users on the PostgreSQL store, through a real server (docs/team.md): tokens authenticate, a
 * revoked token is refused at the next request, usage is recorded per user from the settled
 * calls, and a budget stops the next model call — not one already running — with a message the
 * client shows. The model is a fake OpenAI-compatible provider on 127.0.0.1 that reports usage;
 * it can hold a reply until the test releases it.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { createLLM, createModelConfig, gateLLM } from "../llm/index.ts";
import { toChatCompletionSse } from "../llm/testing/chat-completions-sse.ts";
import { createRunner } from "../runner/runner.ts";
import { openPostgresStore } from "../store/postgres-store.ts";
import { openPostgresUsers } from "../store/postgres-users.ts";
import { getTestPostgres } from "../store/testing/postgres-server.ts";
import type { Store } from "../store/types.ts";
import type { Users } from "../store/users.ts";
import { silentLog } from "../transport/log.ts";
import { DEFAULT_SERVER_OPTIONS, type LocalServer, startServer } from "../transport/server.ts";
import { createCursorClient } from "../transport/testing/index.ts";
import { createTeam } from "./team-users.ts";

const postgres = await getTestPostgres();
const ADMIN = "admin-token-for-tests-0123456789abcdef";

/** A Chat Completions endpoint answering each request with 100 + 50 tokens; `hold` delays it. */
async function startProvider() {
  let held: Promise<void> | null = null;
  let arrived: (() => void) | null = null;
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on("end", async () => {
      arrived?.();
      await held;
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end(toChatCompletionSse({ text: "done", usage: { prompt: 100, completion: 50 } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    /** Holds replies until `release`; resolves `arrival` when a request comes. */
    hold() {
      let release = () => {};
      held = new Promise((resolve) => {
        release = resolve;
      });
      const arrival = new Promise<void>((resolve) => {
        arrived = resolve;
      });
      return { arrival, release };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

if (postgres.type === "unavailable") {
  test(`team users: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  describe("team users on PostgreSQL", { concurrency: 1 }, () => {
    let store: Store;
    let users: Users;
    let server: LocalServer;
    let provider: Awaited<ReturnType<typeof startProvider>>;
    let drop: () => Promise<void>;
    const workspace = mkdtempSync(path.join(tmpdir(), "cursor-byok-users-"));
    const tokens: Record<string, string> = {};

    before(async () => {
      const schema = await postgres.server.createSchema();
      drop = schema.drop;
      store = await openPostgresStore({ url: schema.url, poolSize: 4 });
      users = openPostgresUsers({ url: schema.url });
      provider = await startProvider();
      const team = createTeam(users);
      const llm = gateLLM(
        createLLM({
          models: [
            createModelConfig({
              name: "scripted",
              api: "openai-compatible",
              provider: "fake",
              baseUrl: provider.baseUrl,
              model: "scripted-1",
            }),
          ],
          retry: { maxAttempts: 1 },
        }),
        team.admit,
      );
      server = await startServer(
        {
          store,
          llm,
          runner: createRunner({ store, llm }),
          log: silentLog,
          authenticate: team.authenticate,
        },
        { ...DEFAULT_SERVER_OPTIONS, port: 0, accessToken: ADMIN },
      );
      for (const name of ["alice", "bob"]) tokens[name] = (await users.add(name)).token;
    });
    after(async () => {
      await server.close();
      await store.close();
      await users.close();
      await provider.close();
      await drop();
      rmSync(workspace, { recursive: true, force: true });
    });

    const clientOf = (token: string) =>
      createCursorClient({
        baseUrl: server.url,
        httpVersion: "1.1",
        workspace,
        headers: { authorization: `Bearer ${token}` },
      });
    const turn = async (token: string, conversationId: string, text: string) => {
      const client = clientOf(token);
      try {
        return await client.startTurn({ conversationId, text, modelId: "scripted" }).done;
      } finally {
        await client.close();
      }
    };
    const status = async (token: string) => {
      const client = clientOf(token);
      try {
        await client.ai.getServerConfig({});
        return "ok";
      } catch (error) {
        return ConnectError.from(error).code;
      } finally {
        await client.close();
      }
    };

    test("a user's token is accepted, an unknown one refused; tokens are stored hashed", async () => {
      assert.equal(await status(tokens.alice as string), "ok");
      assert.equal(await status("cbk_not-a-token"), Code.Unauthenticated);
      assert.equal(await status(ADMIN), "ok");
      const listed = await users.list(Date.now());
      assert.deepEqual(
        listed.map((user) => user.name),
        ["alice", "bob"],
      );
      assert.ok(!JSON.stringify(listed).includes(tokens.alice as string));
    });

    test("usage is recorded per user from the settled calls", async () => {
      const result = await turn(tokens.alice as string, "alice-1", "hello");
      assert.equal(result.error, undefined);
      assert.match(result.view.text, /done/);
      const alice = (await users.list(Date.now())).find((user) => user.name === "alice");
      const settled = { tokens: 150, cost: 0, reservedTokens: 0, reservedCost: 0 };
      assert.deepEqual(alice?.today, settled);
      assert.deepEqual(alice?.month, settled);
      const bob = (await users.list(Date.now())).find((user) => user.name === "bob");
      assert.deepEqual(bob?.today, { tokens: 0, cost: 0, reservedTokens: 0, reservedCost: 0 });
    });

    test("a budget stops the next model call, not the running one, and says so", async () => {
      const { arrival, release } = provider.hold();
      const running = turn(tokens.alice as string, "alice-2", "a long one");
      await arrival;
      // Reached while the call is in flight: 150 used, at most 200 a day.
      assert.ok(await users.setBudget("alice", { period: "day", maxTokens: 200, maxCost: null }));
      release();
      const finished = await running;
      assert.equal(finished.error, undefined, "the running call finishes");
      assert.match(finished.view.text, /done/);

      const refused = await turn(tokens.alice as string, "alice-3", "one more");
      const shown = `${finished.error ?? ""}${refused.error?.rawMessage ?? ""} ${refused.view.text}`;
      assert.match(shown, /Budget reached: alice has used 300 tokens of 200 tokens today/);
      const alice = (await users.list(Date.now())).find((user) => user.name === "alice");
      assert.equal(alice?.today.tokens, 300, "the refused call cost nothing");

      const bob = await turn(tokens.bob as string, "bob-1", "hello");
      assert.equal(bob.error, undefined, "another user's budget is their own");
    });

    test("a revoked token is refused at the next request", async () => {
      assert.equal(await status(tokens.bob as string), "ok");
      assert.ok(await users.revoke("bob", Date.now()));
      assert.equal(await status(tokens.bob as string), Code.Unauthenticated);
      assert.equal(await users.revoke("bob", Date.now()), false);
    });
  });
}
