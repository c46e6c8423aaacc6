/**
 * Users on the PostgreSQL store, through real servers (docs/team.md "Users and budgets"):
 *
 * - own provider keys: a user's calls carry the user's key for that provider, others the team's;
 *   no key is in the database, the log or a response (a provider echoing a rejected key included);
 * - isolation: another user can neither read (RunSSE), append to, nor continue (a run request on
 *   the conversation) a user's stream or conversation — on any instance, the binding being in the
 *   database — while the user and the admin can;
 * - everything counts: helper calls (chat titles) for whoever asked, summary calls for the
 *   conversation's user; a budget refusal is its own wire error.
 *
 * The model is a fake OpenAI-compatible provider on 127.0.0.1 that records each request's
 * authorization header.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import pg from "pg";
import { createLLM, createModelConfig, gateLLM } from "../llm/index.ts";
import { toChatCompletionSse } from "../llm/testing/chat-completions-sse.ts";
import { createRunner } from "../runner/runner.ts";
import { openPostgresStore } from "../store/postgres-store.ts";
import { openPostgresUsers } from "../store/postgres-users.ts";
import { getTestPostgres } from "../store/testing/postgres-server.ts";
import type { Store } from "../store/types.ts";
import type { Users } from "../store/users.ts";
import {
  type AgentClientMessage,
  AgentClientMessageSchema,
  AgentService,
} from "../transport/cursor/gen/agent/v1/agent_stream_pb.js";
import { ConversationActionSchema } from "../transport/cursor/gen/agent/v1/conversation_action_pb.js";
import { BidiService } from "../transport/cursor/gen/aiserver/v1/bidi_pb.js";
import { createRecordingLog } from "../transport/log.ts";
import { DEFAULT_SERVER_OPTIONS, type LocalServer, startServer } from "../transport/server.ts";
import { createRunSseChannel } from "../transport/testing/channels.ts";
import { createCursorClient, toReferencedBlobs } from "../transport/testing/index.ts";
import { createTeam } from "./team-users.ts";

const postgres = await getTestPostgres();
const ADMIN = "admin-token-for-tests-0123456789abcdef";
const TEAM_KEY = "sk-team-0123456789abcdefTEAM";
const ANN_KEY = "sk-ann-0123456789abcdefANN";
const CARL_KEY = "sk-carl-wrong-0123456789CARL";

/** Anything as text, protobuf 64-bit integers included. */
const toText = (value: unknown): string =>
  JSON.stringify(value, (_, field: unknown) => (typeof field === "bigint" ? String(field) : field));

interface Seen {
  readonly authorization: string;
  readonly body: string;
}

/** Chat Completions answering 100 + 50 tokens; a request with CARL_KEY gets a 401 echoing it. */
async function startProvider() {
  const seen: Seen[] = [];
  const server: Server = createServer((request, response) => {
    let body = "";
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => (body += chunk));
    request.on("end", () => {
      const authorization = String(request.headers.authorization ?? "");
      seen.push({ authorization, body });
      if (authorization.includes(CARL_KEY)) {
        response.writeHead(401, { "content-type": "application/json" });
        response.end(
          JSON.stringify({
            error: {
              message: `Incorrect API key provided: ${CARL_KEY}.`,
              type: "invalid_request_error",
              code: "invalid_api_key",
            },
          }),
        );
        return;
      }
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end(toChatCompletionSse({ text: "done", usage: { prompt: 100, completion: 50 } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

if (postgres.type === "unavailable") {
  test(`team isolation and keys: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  describe("team users: own keys, isolation, everything counted", { concurrency: 1 }, () => {
    let url: string;
    let drop: () => Promise<void>;
    let stores: Store[];
    let users: Users;
    let servers: LocalServer[];
    let provider: Awaited<ReturnType<typeof startProvider>>;
    const recorded = createRecordingLog();
    const workspace = mkdtempSync(path.join(tmpdir(), "cursor-byok-isolation-"));
    const tokens: Record<string, string> = {};

    before(async () => {
      const schema = await postgres.server.createSchema();
      url = schema.url;
      drop = schema.drop;
      users = openPostgresUsers({ url });
      provider = await startProvider();
      // Two instances on one database, as a team runs them (no forwarding needed here: each
      // test talks to one instance per stream; the bindings are what both must share).
      stores = [];
      servers = [];
      for (let i = 0; i < 2; i++) {
        const store = await openPostgresStore({ url, poolSize: 4 });
        stores.push(store);
        const team = createTeam(users, {
          env: { CURSOR_BYOK_USER_ANN_OPENAI: ANN_KEY, CURSOR_BYOK_USER_CARL_OPENAI: CARL_KEY },
        });
        const llm = gateLLM(
          createLLM({
            models: [
              createModelConfig({
                name: "scripted",
                api: "openai-compatible",
                provider: "openai",
                baseUrl: provider.baseUrl,
                model: "scripted-1",
                apiKey: TEAM_KEY,
                maxOutput: 1000,
              }),
            ],
            retry: { maxAttempts: 1 },
          }),
          team.admit,
        );
        servers.push(
          await startServer(
            {
              store,
              llm,
              // As serve.ts: a fork copies only what the requesting user may see.
              runner: createRunner({ store, llm, mayCopy: team.mayCopy }),
              log: recorded.log,
              authenticate: team.authenticate,
              access: team.access,
              // As serve.ts: a turn blob of another conversation resolves only when visible.
              mayRead: team.mayCopy,
            },
            // Connect's own content type on RunSSE, so the raw clients below read it as is.
            {
              ...DEFAULT_SERVER_OPTIONS,
              port: 0,
              accessToken: ADMIN,
              runSseContentType: "connect",
            },
          ),
        );
      }
      for (const name of ["ann", "bob", "carl", "dora"]) {
        tokens[name] = (await users.add(name)).token;
      }
      assert.ok(await users.setKey("ann", "openai", "CURSOR_BYOK_USER_ANN_OPENAI"));
      assert.ok(await users.setKey("carl", "openai", "CURSOR_BYOK_USER_CARL_OPENAI"));
      assert.ok(await users.setKey("dora", "openai", "CURSOR_BYOK_USER_DORA_OPENAI"));
    });
    after(async () => {
      for (const server of servers) await server.close();
      for (const store of stores) await store.close();
      await users.close();
      await provider.close();
      await drop();
      rmSync(workspace, { recursive: true, force: true });
    });

    const clientOf = (token: string, instance = 0) =>
      createCursorClient({
        baseUrl: (servers[instance] as LocalServer).url,
        httpVersion: "1.1",
        workspace,
        headers: { authorization: `Bearer ${token}` },
      });
    const turn = async (
      who: string,
      conversationId: string,
      text: string,
      options: { instance?: number; requestId?: string } = {},
    ) => {
      const client = clientOf(tokens[who] ?? ADMIN, options.instance);
      try {
        return await client.startTurn(
          { conversationId, text, modelId: "scripted" },
          options.requestId === undefined ? {} : { requestId: options.requestId },
        ).done;
      } finally {
        await client.close();
      }
    };
    /** Raw RunSSE and BidiAppend as `token`, on one instance. */
    const rawOf = (token: string, instance: number, requestId: string) => {
      const transport = createConnectTransport({
        baseUrl: (servers[instance] as LocalServer).url,
        httpVersion: "1.1",
        interceptors: [
          (next) => (request) => {
            request.header.set("authorization", `Bearer ${token}`);
            return next(request);
          },
        ],
      });
      const agent: Client<typeof AgentService> = createClient(AgentService, transport);
      const bidi: Client<typeof BidiService> = createClient(BidiService, transport);
      return createRunSseChannel({ agent, bidi, requestId, form: "binary" });
    };
    const codeOf = async (work: Promise<unknown>): Promise<Code | "ok"> => {
      try {
        await work;
        return "ok";
      } catch (error) {
        return ConnectError.from(error).code;
      }
    };
    const readSse = async (token: string, instance: number, requestId: string) => {
      const channel = rawOf(token, instance, requestId);
      const messages: unknown[] = [];
      const end = await channel.openDownlink((message) => {
        messages.push(message);
      }).ended;
      channel.close();
      return { end, messages };
    };
    const runMessage = (conversationId: string, text: string): AgentClientMessage => {
      const client = clientOf(ADMIN);
      const request = client.runRequest({ conversationId, text, modelId: "scripted" });
      void client.close();
      return create(AgentClientMessageSchema, { message: { case: "runRequest", value: request } });
    };
    /** Every row of every table of the schema, as text. */
    const dumpDatabase = async (): Promise<string> => {
      const pool = new pg.Pool({ connectionString: url, max: 1 });
      try {
        const tables = await pool.query<{ name: string }>(
          "select table_name as name from information_schema.tables " +
            "where table_schema = current_schema() and table_type = 'BASE TABLE'",
        );
        let text = "";
        for (const { name } of tables.rows) {
          const rows = await pool.query<{ row: string }>(`select t::text as row from "${name}" t`);
          text += `${name}\n${rows.rows.map((row) => row.row).join("\n")}\n`;
        }
        return text;
      } finally {
        await pool.end();
      }
    };

    test("ann's calls carry ann's key, bob's the team's; a key variable not set refuses the call", async () => {
      const before = provider.seen.length;
      assert.equal((await turn("ann", "ann-keys", "hello")).error, undefined);
      assert.equal((await turn("bob", "bob-keys", "hello")).error, undefined);
      assert.equal((await turn("ann", "ann-keys", "again", { instance: 1 })).error, undefined);
      assert.deepEqual(
        provider.seen.slice(before).map((seen) => seen.authorization),
        [`Bearer ${ANN_KEY}`, `Bearer ${TEAM_KEY}`, `Bearer ${ANN_KEY}`],
      );

      const dora = await turn("dora", "dora-keys", "hello");
      assert.equal(provider.seen.length, before + 3, "dora's call was not sent");
      assert.match(
        dora.error?.message ?? "",
        /your own openai key is to be read from the environment variable CURSOR_BYOK_USER_DORA_OPENAI, which is not set on this server instance/,
      );
    });

    test("a provider echoing a user's rejected key: the client sees it redacted", async () => {
      const carl = await turn("carl", "carl-keys", "hello");
      assert.equal(provider.seen.at(-1)?.authorization, `Bearer ${CARL_KEY}`);
      assert.ok(carl.error !== undefined);
      assert.match(carl.error.message, /rejected the API key/);
      assert.ok(!toText(carl).includes(CARL_KEY));
      assert.ok(!carl.error.message.includes(CARL_KEY));
    });

    test("no key is in the database, the log, or users list", async () => {
      const dump = await dumpDatabase();
      assert.match(dump, /CURSOR_BYOK_USER_ANN_OPENAI/, "the variable's name is kept");
      for (const key of [ANN_KEY, CARL_KEY, TEAM_KEY]) {
        assert.ok(!dump.includes(key), `${key.slice(0, 8)}… is not in the database`);
        assert.ok(!JSON.stringify(recorded.lines).includes(key), "nor in the log");
      }
      const listed = await users.list(Date.now());
      assert.deepEqual(listed.find((user) => user.name === "ann")?.keys, [
        { provider: "openai", env: "CURSOR_BYOK_USER_ANN_OPENAI" },
      ]);
      assert.deepEqual(listed.find((user) => user.name === "bob")?.keys, []);
      assert.ok(!JSON.stringify(listed).includes(ANN_KEY));
    });

    test("bob can neither read, append to, nor continue ann's stream or conversation, on either instance; ann and the admin can", async () => {
      const requestId = randomUUID();
      const first = await turn("ann", "ann-private", "my secret plan", { requestId });
      assert.equal(first.error, undefined);
      const bob = tokens.bob as string;
      const ann = tokens.ann as string;
      for (const instance of [0, 1]) {
        const read = await readSse(bob, instance, requestId);
        assert.equal(read.end.type, "ended");
        assert.equal(
          read.end.type === "ended" ? read.end.error?.code : undefined,
          Code.PermissionDenied,
        );
        assert.match(
          read.end.type === "ended" ? (read.end.error?.message ?? "") : "",
          /this agent stream belongs to another user/,
        );
        assert.deepEqual(read.messages, [], "nothing of ann's stream reaches bob");

        const append = rawOf(bob, instance, requestId);
        assert.equal(
          await codeOf(append.deliver(runMessage("bob-own", "hi"), 5)),
          Code.PermissionDenied,
        );
        append.close();

        // A new stream of bob's naming ann's conversation: refused before anything runs.
        const sent = provider.seen.length;
        const hijack = rawOf(bob, instance, randomUUID());
        const refused = hijack.deliver(runMessage("ann-private", "what was the plan?"), 0);
        assert.equal(await codeOf(refused), Code.PermissionDenied);
        await refused.catch((error: unknown) =>
          assert.match(String(error), /this conversation belongs to another user/),
        );
        hijack.close();
        assert.equal(provider.seen.length, sent, "no model call for bob");
      }
      // Nor a subagent's conversation of ann's (bound or not yet).
      const child = rawOf(bob, 0, randomUUID());
      assert.equal(
        await codeOf(
          child.deliver(runMessage("ann-private~task~0123456789abcdef01234567", "hi"), 0),
        ),
        Code.PermissionDenied,
      );
      child.close();
      const stolen = await turn("bob", "ann-private", "what was the plan?", { instance: 1 });
      // Through a whole client: the append is refused and bob's own stream ends with it.
      assert.equal(stolen.error?.code, Code.PermissionDenied);
      assert.equal(stolen.appendErrors[0]?.error.code, Code.PermissionDenied);
      assert.ok(!toText(stolen).includes("secret plan"));

      // Ann reads her stream again (its end) on either instance, and continues her conversation.
      for (const instance of [0, 1]) {
        const again = await readSse(ann, instance, requestId);
        assert.equal(again.end.type, "ended");
        assert.equal(again.end.type === "ended" ? again.end.error : undefined, undefined);
      }
      const next = await turn("ann", "ann-private", "go on", { instance: 1 });
      assert.equal(next.error, undefined);
      // The admin keeps access.
      const admin = await readSse(ADMIN, 1, requestId);
      assert.equal(admin.end.type === "ended" ? admin.end.error : "not ended", undefined);
    });

    test("a fork of ann's chat: bob's copies nothing of it (his checkpoint naming ann's turns); ann's and the admin's copy it", async () => {
      const ann = clientOf(tokens.ann as string);
      try {
        const first = ann.startTurn({
          conversationId: "ann-fork-src",
          text: "my secret plan",
          modelId: "scripted",
        });
        assert.equal((await first.done).error, undefined);
        const checkpoint = ann.checkpoint("ann-fork-src");
        assert.ok(checkpoint !== undefined);
        const fork = async (who: string, conversationId: string) => {
          const client = clientOf(tokens[who] ?? ADMIN);
          const before = provider.seen.length;
          try {
            const result = await client.startTurn({
              conversationId,
              text: `${who}'s fork`,
              modelId: "scripted",
              checkpoint,
              // The checkpoint's turns are blob ids: the blobs go with it (ann's client has them).
              edit: (request) => {
                request.preFetchedBlobs = toReferencedBlobs(checkpoint, ann.blobs);
              },
            }).done;
            assert.equal(result.error, undefined);
          } finally {
            await client.close();
          }
          assert.equal(provider.seen.length, before + 1);
          return provider.seen.at(-1)?.body ?? "";
        };
        const bob = await fork("bob", "bob-fork-of-ann");
        assert.match(bob, /bob's fork/);
        assert.doesNotMatch(bob, /my secret plan/, "nothing of ann's conversation reaches bob");
        assert.ok(
          recorded.lines.some(
            (line) =>
              line.message === "fork not applied" &&
              line.fields.conversation === "bob-fork-of-ann" &&
              line.fields.reason === "not_visible",
          ),
        );
        assert.match(await fork("ann", "ann-fork-own"), /my secret plan/);
        assert.match(await fork("admin", "admin-fork-of-ann"), /my secret plan/);
      } finally {
        await ann.close();
      }
    });

    test("a checkpoint of ann's chat sent without its blobs: its turn blob resolves for ann and the admin on either instance, never for bob", async () => {
      const ann = clientOf(tokens.ann as string);
      const source = "ann-blob-src";
      try {
        const first = ann.startTurn({
          conversationId: source,
          text: "my blob plan",
          modelId: "scripted",
        });
        assert.equal((await first.done).error, undefined);
      } finally {
        await ann.close();
      }
      const checkpoint = ann.checkpoint(source);
      assert.ok(checkpoint?.turns.every((id) => id.length === 32));
      const fork = async (who: string, conversationId: string, instance: number) => {
        const client = createCursorClient({
          baseUrl: (servers[instance] as LocalServer).url,
          httpVersion: "1.1",
          workspace,
          headers: { authorization: `Bearer ${tokens[who] ?? ADMIN}` },
          prefetchBlobs: false,
        });
        const before = provider.seen.length;
        try {
          const result = await client.startTurn({
            conversationId,
            text: `${who}'s fork`,
            modelId: "scripted",
            checkpoint,
          }).done;
          assert.equal(result.error, undefined);
          assert.deepEqual(
            client.runRequest({ conversationId, text: "", modelId: "scripted", checkpoint })
              .preFetchedBlobs,
            [],
          );
        } finally {
          await client.close();
        }
        assert.equal(provider.seen.length, before + 1);
        return provider.seen.at(-1)?.body ?? "";
      };
      // Instance 0 wrote the blob (it knows it in memory); instance 1 reads it from the store.
      for (const instance of [0, 1]) {
        const conversation = `bob-blob-fork-${instance}`;
        const bob = await fork("bob", conversation, instance);
        assert.doesNotMatch(bob, /my blob plan/, "nothing of ann's conversation reaches bob");
        assert.ok(
          recorded.lines.some(
            (line) =>
              line.message ===
                "the checkpoint's last turn is a turn of a conversation this request may not see; not used" &&
              line.fields.conversation === conversation,
          ),
          "the blob did not resolve for bob",
        );
        assert.ok(
          recorded.lines.some(
            (line) =>
              line.message === "fork not applied" &&
              line.fields.conversation === conversation &&
              line.fields.reason === "unreadable_turn",
          ),
        );
      }
      assert.match(await fork("ann", "ann-blob-fork-1", 1), /my blob plan/);
      assert.match(await fork("admin", "admin-blob-fork-1", 1), /my blob plan/);
    });

    test("helper calls count for whoever asked; summary calls for the conversation's user", async () => {
      const usage = async (name: string) =>
        (await users.list(Date.now())).find((user) => user.name === name)?.today;
      const bobBefore = (await usage("bob"))?.tokens ?? 0;
      const annBefore = (await usage("ann"))?.tokens ?? 0;
      for (const [name, instance] of [
        ["bob", 0],
        ["ann", 1],
        ["bob", 1],
      ] as const) {
        const client = clientOf(tokens[name] as string, instance);
        try {
          const named = await client.ai.nameAgent({ userMessage: "fix the login bug" });
          assert.ok(named.name !== "");
        } finally {
          await client.close();
        }
      }
      assert.equal((await usage("bob"))?.tokens, bobBefore + 300, "bob's two titles");
      assert.equal((await usage("ann"))?.tokens, annBefore + 150, "ann's one title");

      // Four turns, then /summarize: five calls of ann's, the summary one included.
      for (const text of ["one", "two", "three", "four"]) {
        assert.equal((await turn("ann", "ann-long", text)).error, undefined);
      }
      const client = clientOf(tokens.ann as string);
      try {
        const request = client.runRequest({
          conversationId: "ann-long",
          text: "",
          modelId: "scripted",
        });
        request.action = create(ConversationActionSchema, {
          action: { case: "summarizeAction", value: {} },
        });
        assert.equal((await client.startTurn(request).done).error, undefined);
      } finally {
        await client.close();
      }
      assert.equal((await usage("ann"))?.tokens, annBefore + 150 + 5 * 150);
      assert.equal((await usage("ann"))?.reservedTokens, 0, "every call settled");

      const pool = new pg.Pool({ connectionString: url, max: 1 });
      try {
        const bound = await pool.query(
          "select 1 from conversation_users where conversation_id like 'cursor-byok-helper-%'",
        );
        assert.equal(bound.rowCount, 0, "helper pseudo-conversations belong to nobody");
      } finally {
        await pool.end();
      }
    });

    test("a budget refusal is its own wire error: 'Budget reached: …', not a provider error", async () => {
      assert.ok(await users.setBudget("bob", { period: "day", maxTokens: 1, maxCost: null }));
      const refused = await turn("bob", "bob-budget", "one more");
      assert.equal(refused.error?.code, Code.FailedPrecondition);
      assert.match(
        refused.error?.rawMessage ?? "",
        /^Budget reached: bob has used [\d,]+ tokens of 1 tokens today \(UTC\)\./,
      );
      assert.doesNotMatch(refused.error?.rawMessage ?? "", /provider/);
      assert.ok(await users.setBudget("bob", { period: "day", maxTokens: null, maxCost: null }));
    });
  });
}
