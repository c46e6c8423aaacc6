/**
 * Budgets count everything and hold under concurrency (docs/team.md "Users and budgets"), on a
 * real PostgreSQL, through the gate every model call passes (llm/gated-llm.ts with the team's
 * admission, team-users.ts):
 *
 * - N concurrent calls of one user just under the budget: each reserves its estimate before it
 *   is sent, so only the first goes ahead; the overshoot is at most that one call;
 * - a call aborted, or failed, after tokens arrived counts its estimate; one that failed before
 *   any token counts nothing; a replay is not stopped by a budget and is settled too.
 *
 * The model is a fake OpenAI-compatible provider on 127.0.0.1: it answers 100 + 50 tokens, can
 * hold replies, or stream part of a reply and then stall or drop the connection.
 */
import assert from "node:assert/strict";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import pg from "pg";
import {
  createLLM,
  createModelConfig,
  estimateInputTokens,
  gateLLM,
  type LLM,
  type LLMCall,
  type ResponseEvent,
} from "../llm/index.ts";
import { toChatCompletionSse } from "../llm/testing/chat-completions-sse.ts";
import { openPostgresUsers } from "../store/postgres-users.ts";
import { getTestPostgres } from "../store/testing/postgres-server.ts";
import type { AuthenticatedUser, Users } from "../store/users.ts";
import { runAsUser } from "../transport/request-user.ts";
import { createTeam, type LedgerFailure } from "./team-users.ts";

const postgres = await getTestPostgres();
const MAX_OUTPUT = 1000;
const PARTIAL = "The first part of an answer that never finishes, forty-eight chars+";

type Mode = "answer" | "hold" | "stall" | "drop" | "fail";

async function startProvider() {
  let mode: Mode = "answer";
  let requests = 0;
  const held: ServerResponse[] = [];
  const arrivals: (() => void)[] = [];
  const full = toChatCompletionSse({ text: "done", usage: { prompt: 100, completion: 50 } });
  const events = toChatCompletionSse({ text: PARTIAL, usage: { prompt: 100, completion: 50 } })
    .split("\n\n")
    .filter((event) => event !== "");
  const partial = `${events.slice(0, -2).join("\n\n")}\n\n`;
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      requests += 1;
      arrivals.shift()?.();
      switch (mode) {
        case "answer":
          response.writeHead(200, { "content-type": "text/event-stream" });
          response.end(full);
          return;
        case "hold":
          held.push(response);
          return;
        case "stall":
          response.writeHead(200, { "content-type": "text/event-stream" });
          response.write(partial);
          held.push(response);
          return;
        case "drop":
          response.writeHead(200, { "content-type": "text/event-stream" });
          response.write(partial, () => setImmediate(() => response.destroy()));
          return;
        case "fail":
          response.writeHead(400, { "content-type": "application/json" });
          response.end(JSON.stringify({ error: { message: "bad request", type: "invalid" } }));
          return;
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    setMode(next: Mode) {
      mode = next;
    },
    /** Resolves when the next request has arrived. */
    arrival: () => new Promise<void>((resolve) => arrivals.push(resolve)),
    /** Answers every held request in full. */
    release() {
      for (const response of held.splice(0)) {
        if (!response.headersSent) response.writeHead(200, { "content-type": "text/event-stream" });
        response.end(response.headersSent && mode === "stall" ? "" : full);
      }
    },
    held: () => held.length,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const response of held.splice(0)) response.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

if (postgres.type === "unavailable") {
  test(`team budgets: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  describe("team budgets: reservations, every call counted", { concurrency: 1 }, () => {
    let drop: () => Promise<void>;
    let url: string;
    let users: Users;
    let llm: LLM;
    let providers: LLM;
    let provider: Awaited<ReturnType<typeof startProvider>>;
    const people: Record<string, AuthenticatedUser> = {};
    let seq = 0;

    before(async () => {
      const schema = await postgres.server.createSchema();
      drop = schema.drop;
      url = schema.url;
      users = openPostgresUsers({ url: schema.url });
      // Opening a store migrates the schema.
      const { openPostgresStore } = await import("../store/postgres-store.ts");
      await (await openPostgresStore({ url: schema.url, poolSize: 1 })).close();
      provider = await startProvider();
      providers = createLLM({
        models: [
          createModelConfig({
            name: "scripted",
            api: "openai-compatible",
            provider: "fake",
            baseUrl: provider.baseUrl,
            model: "scripted-1",
            maxOutput: MAX_OUTPUT,
          }),
        ],
        retry: { maxAttempts: 1 },
      });
      llm = gateLLM(providers, createTeam(users).admit);
      for (const name of ["ann", "bob", "cid", "dan", "eve", "fay", "gus"]) {
        const { user } = await users.add(name);
        people[name] = { userID: user.userID, name };
      }
    });
    after(async () => {
      await provider.close();
      await users.close();
      await drop();
    });

    const callOf = (text: string, extra: Partial<LLMCall> = {}): LLMCall => ({
      callID: `call-${++seq}`,
      model: "scripted",
      conversationID: `helper-like-${seq}`,
      request: {
        systemPrompt: "Be brief.",
        messages: [{ role: "user", content: text, timestamp: 1 }],
        tools: [],
      },
      ...extra,
    });
    /** Starts a call as `name` (a request of theirs around it). */
    const start = (name: string, call: LLMCall, through: LLM = llm) =>
      runAsUser(people[name] as AuthenticatedUser, () => through.stream(call));
    /** Reads the stream to its end; its last event. */
    const drain = async (stream: AsyncIterable<ResponseEvent>) => {
      let last: ResponseEvent | undefined;
      for await (const event of stream) last = event;
      return last;
    };
    const usageOf = async (name: string) =>
      (await users.list(Date.now())).find((user) => user.name === name)?.today;

    test("five concurrent calls just under the budget: one goes ahead, four are refused", async () => {
      // 2,400 of 2,500 tokens used: each call alone would be admitted.
      await users.settle(
        {
          callID: "earlier",
          userID: people.ann?.userID as string,
          conversationID: "x",
          tokens: 2400,
          cost: 0,
        },
        Date.now(),
      );
      assert.ok(await users.setBudget("ann", { period: "day", maxTokens: 2500, maxCost: null }));
      provider.setMode("hold");
      const arrived = provider.arrival();
      const second = provider.arrival();
      const calls = Array.from({ length: 5 }, (_, i) => start("ann", callOf(`question ${i}`)));
      const firsts = calls.map((call) => call.recv());
      // Four answers come while the fifth call is held at the provider, unsettled: they were
      // decided on its reservation, not on its usage.
      await Promise.race([
        new Promise<void>((resolve) => {
          let answered = 0;
          for (const first of firsts) void first.then(() => ++answered === 4 && resolve());
        }),
        second.then(() => assert.fail("a second call reached the provider")),
      ]);
      await arrived;
      assert.equal(provider.held(), 1, "one call reached the provider");
      const during = await usageOf("ann");
      const reservation = MAX_OUTPUT + estimateInputTokens(callOf("question 0"));
      assert.deepEqual(
        { tokens: during?.tokens, reserved: during?.reservedTokens },
        { tokens: 2400, reserved: reservation },
      );
      provider.setMode("answer");
      provider.release();
      const refused = (await Promise.all(firsts)).flatMap((event) =>
        event?.type === "error" ? [event] : [],
      );
      assert.equal(refused.length, 4, "four refused");
      for (const event of refused) {
        assert.match(
          event.error.errorMessage ?? "",
          /^Budget reached: ann has used 2,400 tokens of 2,500 tokens today \(UTC\), and calls in progress hold 1,0\d\d tokens more\./,
        );
      }
      const ends = await Promise.all(calls.map(drain));
      assert.equal(ends.filter((event) => event?.type === "done").length, 1);
      const settled = await usageOf("ann");
      assert.deepEqual(
        { tokens: settled?.tokens, reserved: settled?.reservedTokens },
        { tokens: 2550, reserved: 0 },
        "over by at most the one admitted call",
      );
    });

    test("a call aborted after tokens arrived counts its estimate", async () => {
      provider.setMode("stall");
      const call = callOf("tell me a long story");
      const stream = start("bob", call);
      // Every token of the partial answer has arrived before the user stops the call.
      let text = "";
      while (text !== PARTIAL) {
        const event = await stream.recv();
        assert.ok(event !== undefined && event.type !== "error", `unexpected ${event?.type}`);
        if (event.type === "text_delta") text += event.delta;
      }
      stream.abort("the user stopped it");
      const end = await drain(stream);
      assert.equal(end?.type === "error" ? end.reason : end?.type, "aborted");
      provider.release();
      const bob = await usageOf("bob");
      const expected = estimateInputTokens(call) + Math.ceil(PARTIAL.length / 4);
      assert.deepEqual(
        { tokens: bob?.tokens, reserved: bob?.reservedTokens },
        { tokens: expected, reserved: 0 },
      );
    });

    test("a call failed after tokens arrived counts its estimate; one failed before any counts nothing", async () => {
      provider.setMode("fail");
      const failed = await drain(start("cid", callOf("first")));
      assert.equal(failed?.type, "error");
      assert.deepEqual(await usageOf("cid"), {
        tokens: 0,
        cost: 0,
        reservedTokens: 0,
        reservedCost: 0,
      });

      provider.setMode("drop");
      const call = callOf("second");
      const dropped = await drain(start("cid", call));
      assert.equal(dropped?.type, "error");
      const cid = await usageOf("cid");
      assert.equal(cid?.tokens, estimateInputTokens(call) + Math.ceil(PARTIAL.length / 4));
      assert.equal(cid?.reservedTokens, 0);
    });

    test("a call with no request around it (a takeover) counts for its conversation's user, a subagent's for its root's", async () => {
      provider.setMode("answer");
      const bob = people.bob as AuthenticatedUser;
      assert.equal(await users.bindConversation("bob-conv", bob.userID, Date.now()), bob.userID);
      const before = (await usageOf("bob"))?.tokens ?? 0;
      const ended = await drain(llm.stream(callOf("resumed", { conversationID: "bob-conv" })));
      assert.equal(ended?.type, "done");
      assert.equal((await usageOf("bob"))?.tokens, before + 150);
      // Its subagents' calls too: their conversations are bound to nobody, their root to bob.
      const child = callOf("sub", { conversationID: "bob-conv~task~0123456789abcdef01234567" });
      assert.equal((await drain(llm.stream(child)))?.type, "done");
      assert.equal((await usageOf("bob"))?.tokens, before + 300);
    });

    test("a replay is not stopped by a budget, and is settled", async () => {
      provider.setMode("answer");
      assert.ok(await users.setBudget("cid", { period: "day", maxTokens: 1, maxCost: null }));
      const refused = await drain(start("cid", callOf("third")));
      assert.match(
        refused?.type === "error" ? (refused.error.errorMessage ?? "") : "",
        /^Budget reached: cid/,
      );
      const before = (await usageOf("cid"))?.tokens ?? 0;
      const body = JSON.stringify({
        model: "scripted-1",
        stream: true,
        messages: [{ role: "user", content: "again" }],
      });
      const replayed = await drain(start("cid", callOf("again", { replay: { body } })));
      assert.equal(replayed?.type, "done");
      assert.equal((await usageOf("cid"))?.tokens, before + 150);
    });

    // The next two wait on promises the fixed code resolves: without it, a failure, not a hang.
    test("a running call marks its reservation as in use until it ends (L4)", {
      // Waits on promises the fixed code resolves: without it, a failure, not a hang.
      timeout: 20_000,
    }, async () => {
      let marked: () => void = () => {};
      const firstMark = new Promise<void>((resolve) => {
        marked = resolve;
      });
      const marks: string[] = [];
      const watched: Users = {
        ...users,
        async hold(callID, at) {
          await users.hold(callID, at);
          marks.push(callID);
          marked();
        },
      };
      const gated = gateLLM(providers, createTeam(watched).admit, { holdEveryMs: 5 });
      provider.setMode("hold");
      const arrived = provider.arrival();
      const call = callOf("a long answer");
      const stream = start("dan", call, gated);
      const first = stream.recv();
      // The call is at the provider, and its reservation has been marked while it waits.
      await arrived;
      await firstMark;
      assert.ok(marks.every((id) => id === call.callID));
      provider.setMode("answer");
      provider.release();
      await first;
      assert.equal((await drain(stream))?.type, "done");
      const dan = await usageOf("dan");
      assert.deepEqual(
        { tokens: dan?.tokens, reserved: dan?.reservedTokens },
        { tokens: 150, reserved: 0 },
      );
    });

    test("a settlement that fails is retried, and reported; one given up is reported lost (L4)", {
      // Waits on promises the fixed code resolves: without it, a failure, not a hang.
      timeout: 20_000,
    }, async () => {
      provider.setMode("answer");
      let failing = 1;
      let written: () => void = () => {};
      let lost: () => void = () => {};
      const flaky: Users = {
        ...users,
        async settle(settlement, at) {
          if (failing > 0) {
            failing -= 1;
            throw new Error("connection to the database lost");
          }
          await users.settle(settlement, at);
          written();
        },
      };
      const reports: LedgerFailure[] = [];
      const team = createTeam(flaky, {
        settleRetryDelaysMs: [0],
        onLedgerFailure: (failure) => {
          reports.push(failure);
          if (failure.outcome === "lost") lost();
        },
      });
      const gated = gateLLM(providers, team.admit);
      const retried = new Promise<void>((resolve) => {
        written = resolve;
      });
      assert.equal((await drain(start("eve", callOf("one"), gated)))?.type, "done");
      await retried;
      assert.equal((await usageOf("eve"))?.tokens, 150, "the retry recorded it");
      assert.deepEqual(
        reports.map(({ outcome, tokens }) => ({ outcome, tokens })),
        [{ outcome: "retrying", tokens: 150 }],
      );

      failing = 2;
      const givenUp = new Promise<void>((resolve) => {
        lost = resolve;
      });
      const call = callOf("two");
      assert.equal((await drain(start("eve", call, gated)))?.type, "done");
      await givenUp;
      assert.deepEqual(
        reports.slice(1).map(({ outcome, callID }) => ({ outcome, callID })),
        [
          { outcome: "retrying", callID: call.callID },
          { outcome: "lost", callID: call.callID },
        ],
      );
      // Until its lifetime runs out, the unsettled reservation still counts against the budget.
      assert.equal((await usageOf("eve"))?.reservedTokens, MAX_OUTPUT + estimateInputTokens(call));
    });

    test("a revoked user's running turn starts no new model call, replays included (L4)", async () => {
      provider.setMode("answer");
      assert.equal((await drain(start("fay", callOf("before"))))?.type, "done");
      assert.ok(await users.revoke("fay", Date.now()));
      const sent = provider.requests();
      const body = JSON.stringify({ model: "scripted-1", stream: true, messages: [] });
      for (const call of [callOf("after"), callOf("again", { replay: { body } })]) {
        const end = await drain(start("fay", call));
        assert.equal(end?.type, "error");
        assert.match(
          end?.type === "error" ? (end.error.errorMessage ?? "") : "",
          /access was revoked/,
        );
      }
      assert.equal(provider.requests(), sent, "nothing reached the provider");
    });

    test("a key variable that is not a user's, or is the server's own, is never read: the call is refused (L3)", async () => {
      provider.setMode("answer");
      const secrets = { PGPASSWORD: "pg-secret", CURSOR_BYOK_USER_TEAM: "sk-team-secret" };
      const team = createTeam(users, { env: secrets, serverVariables: ["CURSOR_BYOK_USER_TEAM"] });
      const gated = gateLLM(providers, team.admit);
      const sent = provider.requests();
      // Recorded before names were restricted, or written to the database directly.
      const pool = new pg.Pool({ connectionString: url, max: 1 });
      try {
        await pool.query(
          "insert into user_keys select user_id, 'fake', 'PGPASSWORD' from users where name = 'gus'",
        );
        const refused = await drain(start("gus", callOf("hello"), gated));
        assert.match(
          refused?.type === "error" ? (refused.error.errorMessage ?? "") : "",
          /your own fake key is recorded as the variable PGPASSWORD, which may not hold a user's key/,
        );
        await pool.query(
          "update user_keys set env_name = 'CURSOR_BYOK_USER_TEAM' where provider = 'fake'",
        );
        const own = await drain(start("gus", callOf("hello again"), gated));
        assert.match(
          own?.type === "error" ? (own.error.errorMessage ?? "") : "",
          /CURSOR_BYOK_USER_TEAM is one of the server's own variables/,
        );
      } finally {
        await pool.end();
      }
      assert.equal(provider.requests(), sent, "nothing reached the provider");
    });
  });
}
