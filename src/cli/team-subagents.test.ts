/**
 * A subagent's model calls count for the team user whose turn started it, like the parent's
 * (docs/team.md "Users and budgets", README "Subagents"): on a real PostgreSQL, through a real
 * server with users on and ann's token.
 *
 * - After ann's turn with one `general` subagent, the ledger (`user_calls`) has a settled row for
 *   each of the parent's model calls and for the child's (conversation `<parent>~task~<hash>`),
 *   every one ann's.
 * - With ann's budget such that the parent's first call fits but nothing more, the child's call is
 *   refused before it is sent, with the budget message, and leaves no row; the task card completes
 *   with the subagent's error result saying so. Finding: the turn does not then end normally — the
 *   parent's next call (the one carrying that result) is refused too, so the turn ends with the
 *   budget wire error and the parent's model never sees the result.
 *
 * The model is the fake OpenAI-compatible provider on 127.0.0.1; it tells the parent (answered
 * with a `task` call, then text) from the child (answered with text) by their system prompts.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { Code } from "@connectrpc/connect";
import pg from "pg";
import { createLLM, createModelConfig, gateLLM } from "../llm/index.ts";
import { toChatCompletionSse } from "../llm/testing/chat-completions-sse.ts";
import {
  type FakeProvider,
  type RecordedRequest,
  startFakeProvider,
} from "../llm/testing/fake-provider.ts";
import { createRunner } from "../runner/runner.ts";
import { openPostgresStore } from "../store/postgres-store.ts";
import { openPostgresUsers } from "../store/postgres-users.ts";
import { getTestPostgres } from "../store/testing/postgres-server.ts";
import type { Store } from "../store/types.ts";
import type { Users } from "../store/users.ts";
import { createRecordingLog } from "../transport/log.ts";
import { DEFAULT_SERVER_OPTIONS, type LocalServer, startServer } from "../transport/server.ts";
import { createCursorClient } from "../transport/testing/index.ts";
import { createTeam } from "./team-users.ts";

const postgres = await getTestPostgres();
const ADMIN = "admin-token-for-tests-0123456789abcdef";
const USAGE = { prompt: 100, completion: 50 };

interface Body {
  readonly messages: readonly { role: string; content?: unknown }[];
}
const parse = (request: RecordedRequest): Body => JSON.parse(request.body) as Body;
const isChild = (body: Body) =>
  String(body.messages[0]?.content ?? "").includes("# You are a subagent");
const toolResults = (body: Body) => body.messages.filter((message) => message.role === "tool");
const sse = (reply: Parameters<typeof toChatCompletionSse>[0]) =>
  ({ type: "sse", body: toChatCompletionSse({ ...reply, usage: USAGE }) }) as const;

interface Row {
  readonly user_id: string;
  readonly conversation_id: string;
  readonly tokens: string | null;
}

if (postgres.type === "unavailable") {
  test(`team subagents: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  describe("team users: a subagent's calls count for the parent's user", { concurrency: 1 }, () => {
    let url: string;
    let drop: () => Promise<void>;
    let store: Store;
    let users: Users;
    let server: LocalServer;
    let provider: FakeProvider;
    let annID: string;
    let annToken: string;
    const workspace = mkdtempSync(path.join(tmpdir(), "cursor-byok-team-subagents-"));

    before(async () => {
      const schema = await postgres.server.createSchema();
      url = schema.url;
      drop = schema.drop;
      users = openPostgresUsers({ url });
      provider = await startFakeProvider();
      provider.answer((request) => {
        const body = parse(request);
        if (isChild(body)) return sse({ text: "Child answer." });
        return toolResults(body).length === 0
          ? sse({
              text: "Delegating.",
              toolCalls: [
                {
                  id: "call_task",
                  name: "task",
                  arguments: {
                    description: "Look",
                    prompt: "Look around",
                    subagent_type: "general",
                  },
                },
              ],
            })
          : sse({ text: "Parent done." });
      });
      store = await openPostgresStore({ url, poolSize: 4 });
      const team = createTeam(users);
      const llm = gateLLM(
        createLLM({
          models: [
            createModelConfig({
              name: "scripted",
              api: "openai-compatible",
              provider: "openai",
              baseUrl: provider.url,
              model: "scripted-1",
              apiKey: "sk-team-0123456789abcdefTEAM",
              maxOutput: 1000,
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
          log: createRecordingLog().log,
          authenticate: team.authenticate,
          access: team.access,
        },
        { ...DEFAULT_SERVER_OPTIONS, port: 0, accessToken: ADMIN },
      );
      const added = await users.add("ann");
      annID = added.user.userID;
      annToken = added.token;
    });
    after(async () => {
      await server.close();
      await store.close();
      await users.close();
      await provider.close();
      await drop();
      rmSync(workspace, { recursive: true, force: true });
    });

    const turn = async (conversationId: string, text: string) => {
      const client = createCursorClient({
        baseUrl: server.url,
        httpVersion: "1.1",
        workspace,
        timeoutMs: 15_000,
        headers: { authorization: `Bearer ${annToken}` },
      });
      try {
        return await client.startTurn({ conversationId, text, modelId: "scripted" }).done;
      } finally {
        await client.close();
      }
    };
    const ledger = async (conversationId: string): Promise<Row[]> => {
      const pool = new pg.Pool({ connectionString: url, max: 1 });
      try {
        const result = await pool.query<Row>(
          "select user_id, conversation_id, tokens::text as tokens from user_calls " +
            "where conversation_id = $1 or conversation_id like $2 order by created_at, call_id",
          [conversationId, `${conversationId}~task~%`],
        );
        return result.rows;
      } finally {
        await pool.end();
      }
    };
    const taskResultOf = (request: RecordedRequest | undefined) =>
      String(toolResults(parse(request as RecordedRequest))[0]?.content ?? "");

    test("the parent's and the child's model calls are all in ann's ledger", async () => {
      const conversationId = "5ab0a9e0-0000-4000-8000-0000000015b1";
      const from = provider.requests.length;
      const result = await turn(conversationId, "Delegate it.");
      assert.equal(result.error, undefined);
      assert.equal(result.view.text, "Delegating.Parent done.");
      const sent = provider.requests.slice(from).map(parse);
      assert.deepEqual(
        sent.map((body) => (isChild(body) ? "child" : "parent")),
        ["parent", "child", "parent"],
      );
      assert.equal(taskResultOf(provider.requests.at(-1)).includes("Child answer."), true);
      const rows = await ledger(conversationId);
      const child = rows.filter((row) => row.conversation_id.startsWith(`${conversationId}~task~`));
      const parent = rows.filter((row) => row.conversation_id === conversationId);
      assert.equal(parent.length, 2, "the parent's two calls");
      assert.equal(child.length, 1, "the child's call");
      for (const row of rows) {
        assert.equal(row.user_id, annID);
        assert.equal(row.tokens, "150", "settled with the provider's usage");
      }
      assert.equal((await users.list(Date.now())).find((u) => u.name === "ann")?.today.tokens, 450);
    });

    test("a budget the parent's first call exhausts: the child's call is refused, the task card has the error; the turn ends on the budget too", async () => {
      // 450 used by the test above: the parent's first call fits, then nothing more.
      assert.equal((await users.list(Date.now())).find((u) => u.name === "ann")?.today.tokens, 450);
      assert.ok(await users.setBudget("ann", { period: "day", maxTokens: 451, maxCost: null }));
      const conversationId = "5ab0a9e0-0000-4000-8000-0000000015b2";
      const from = provider.requests.length;
      const result = await turn(conversationId, "Delegate it again.");
      const refusal =
        /^Budget reached: ann has used 600 tokens of 451 tokens today \(UTC\)\. New model calls resume at /;
      // Only the parent's first call reached the provider: the child's was refused before it was
      // sent, and so was the parent's next call (the one that would carry the task's result).
      assert.deepEqual(
        provider.requests
          .slice(from)
          .map((request) => (isChild(parse(request)) ? "child" : "parent")),
        ["parent"],
      );
      // A refused call leaves no row: the ledger has the parent's first call only, ann's.
      const rows = await ledger(conversationId);
      assert.deepEqual(
        rows.map((row) => ({
          user: row.user_id,
          child: row.conversation_id !== conversationId,
          tokens: row.tokens,
        })),
        [{ user: annID, child: false, tokens: "150" }],
      );
      // The subagent's error result, with the budget message, completes the task card.
      const completed = result.view.toolCallsCompleted.find((call) => call.callId === "call_task");
      const tool = completed?.toolCall?.tool;
      assert.ok(tool?.case === "taskToolCall");
      const taskResult = tool.value.result?.result;
      assert.equal(taskResult?.case, "error");
      assert.match(
        taskResult?.case === "error" ? taskResult.value.error : "",
        new RegExp(`^its turn failed: ${refusal.source.slice(1)}`),
      );
      // Finding (#15): the turn does not end normally. With nothing more in the budget, the
      // parent's call after the task result is refused as well, so the turn ends with the budget
      // wire error (after the first call's text), and the parent's model never sees the result.
      assert.equal(result.view.text, "Delegating.");
      assert.equal(result.error?.code, Code.FailedPrecondition);
      assert.match(result.error?.rawMessage ?? "", refusal);
      assert.ok(await users.setBudget("ann", { period: "day", maxTokens: null, maxCost: null }));
    });
  });
}
