/**
 * The dashboard reads' contract (dashboard-types.ts), run against every store like the main
 * contract: conversations are driven through the real loop, committed as a runner commits them,
 * and every figure the dashboard shows is checked against the history the store holds.
 *
 * Why one file of about 580 lines: one suite run against every store, like the main contract.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { toCanonicalJSON } from "../../loop/canonical-json.ts";
import { toImportState } from "../../loop/fork.ts";
import { toBranchState } from "../../loop/rewind.ts";
import { createConversation } from "../../loop/state.ts";
import {
  assistantMessage,
  followUp,
  start,
  T0,
  text,
  toEvents,
  toolCall,
  userMessage,
  zeroUsage,
} from "../../loop/testing.ts";
import { transition } from "../../loop/transition.ts";
import type { AssistantMessage, Input, Message, RuntimeState, ToolCall } from "../../loop/types.ts";
import type { StoreOptions } from "../create-store.ts";
import type { ConversationSummary } from "../dashboard-types.ts";
import { isStoreError } from "../errors.ts";
import type { RecordWrite, Store } from "../types.ts";
import type { OpenStore } from "./contract.ts";
import { toScriptedToolResult } from "./scripted-conversation.ts";

const DAY_MS = 86_400_000;

/** An answer with the given usage; `at` is its timestamp (the day its usage counts for). */
export function answer(
  content: AssistantMessage["content"],
  usage: { input: number; output: number; cacheRead?: number; cacheWrite?: number; cost?: number },
  at: number,
  model = "test-model",
  provider = "test",
): AssistantMessage {
  const cost = usage.cost ?? 0;
  return {
    ...assistantMessage(content, undefined, at),
    model,
    provider,
    usage: {
      ...zeroUsage(),
      input: usage.input,
      output: usage.output,
      cacheRead: usage.cacheRead ?? 0,
      cacheWrite: usage.cacheWrite ?? 0,
      totalTokens: usage.input + usage.output,
      cost: { ...zeroUsage().cost, total: cost },
    },
  };
}

export interface DriveOptions {
  /** The time recorded as each call's first event; `null`: none recorded. */
  readonly firstEventAt?: number | null;
  /** Added to each saved request body as `padding` (a stand-in for a real prompt's size). */
  readonly requestPadding?: string;
}

/**
 * Runs one turn of `conversationID` to its end through the loop, committing as the runner does:
 * the call saved with the `call_llm` commit, marked committed (with its first-event time) with
 * the answer, tool operations saved and completed. `answers` are the model's responses in order;
 * tool calls are answered with the scripted result.
 */
export async function driveTurn(
  store: Store,
  conversationID: string,
  userText: string,
  answers: readonly AssistantMessage[],
  options: DriveOptions = {},
): Promise<void> {
  const loaded = await store.load(conversationID);
  let state: RuntimeState =
    loaded === null
      ? createConversation(conversationID)
      : { committed: loaded.state, pending: null };
  let version = loaded?.version ?? 0;
  const step = async (input: Input, inputID: string, extra: RecordWrite[] = []): Promise<void> => {
    const before = state.committed;
    const next = transition(state, input);
    assert.equal(next.rejected, null, `input ${inputID} was rejected`);
    const after = next.state.committed;
    if (after !== before) {
      const records: RecordWrite[] = [...extra];
      const command = next.command;
      if (command.type === "call_llm") {
        records.push({
          type: "llm_call",
          call: {
            callID: command.callID,
            conversationID,
            turnID: after.turnID,
            model: command.model,
            request: toCanonicalJSON({
              model: command.model,
              ...command.request,
              stream: true,
              ...(options.requestPadding === undefined ? {} : { padding: options.requestPadding }),
            }),
            messagesHash: command.messagesHash,
            messageCount: command.messageCount,
            lastMessageHash: command.lastMessageHash,
            status: "streaming",
          },
        });
      }
      if (before.status === "waiting_llm" && after.status !== "waiting_llm" && before.call) {
        records.push({ type: "llm_call_status", callID: before.call.callID, status: "committed" });
      }
      if (command.type === "call_client") {
        records.push({
          type: "client_operation",
          operation: {
            operationID: command.operationID,
            conversationID,
            turnID: after.turnID,
            toolCallID: command.toolCall.id,
            request: command.toolCall,
            status: "sent",
          },
        });
      }
      const result = await store.commitInput({
        inputID,
        expectedVersion: version,
        state: after,
        result: command.type,
        records,
      });
      assert.equal(result.type, "committed");
      version += 1;
    }
    state = next.state;
  };

  const said = userMessage(userText, answers[0]?.timestamp ?? T0);
  const firstID = `${conversationID}:${userText}`;
  const first: Input =
    loaded === null
      ? start(said, { inputID: firstID })
      : { ...(followUp(said) as Extract<Input, { type: "user_message" }>), inputID: firstID };
  await step(first, firstID);
  let next = 0;
  while (state.committed.status !== "final") {
    const committed = state.committed;
    if (committed.status === "waiting_llm" && committed.call !== null) {
      const response = answers[next++];
      assert.ok(response !== undefined, "the turn needs more answers");
      const callID = committed.call.callID;
      const at =
        options.firstEventAt === undefined ? response.timestamp + 40 : options.firstEventAt;
      const timing: RecordWrite[] =
        at === null ? [] : [{ type: "llm_call_first_event", callID, at }];
      for (const event of toEvents(response)) {
        await step({ type: "llm_event", callID, event }, callID, timing);
      }
    } else if (committed.status === "waiting_client" && committed.waiting !== null) {
      const { calls, answered, operationIDs } = committed.waiting;
      const call = calls[answered] as ToolCall;
      const operationID = operationIDs[answered] as string;
      const message = toScriptedToolResult(call);
      await step(
        { type: "tool_result", inputID: `${operationID}:result`, at: T0, message },
        `${operationID}:result`,
        [{ type: "client_operation_status", operationID, status: "completed", result: message }],
      );
    } else {
      throw new Error(`turn stuck in ${committed.status}`);
    }
  }
}

/** The summary recomputed from history: the oracle the store's kept figures must equal. */
function expectedFigures(messages: readonly Message[]) {
  const assistants = messages.filter(
    (message): message is AssistantMessage => message.role === "assistant",
  );
  const sum = (pick: (message: AssistantMessage) => number): number =>
    assistants.reduce((total, message) => total + pick(message), 0);
  return {
    turns: messages.filter((message) => message.role === "user").length,
    modelCalls: assistants.length,
    messageCount: messages.length,
    usage: {
      input: sum((m) => m.usage.input),
      output: sum((m) => m.usage.output),
      cacheRead: sum((m) => m.usage.cacheRead),
      cacheWrite: sum((m) => m.usage.cacheWrite),
      cost: sum((m) => m.usage.cost.total),
    },
  };
}

export function runDashboardContract(name: string, open: OpenStore): void {
  const it = (
    title: string,
    body: (store: Store) => Promise<void>,
    options?: StoreOptions,
  ): void => {
    test(title, async () => {
      const fixture = await open(options);
      try {
        await body(fixture.store);
      } finally {
        await fixture.store.close();
        await fixture.cleanup();
      }
    });
  };
  let clock = 0;
  const ticking: StoreOptions = { now: () => T0 + 1000 * ++clock };

  describe(`dashboard contract: ${name}`, () => {
    it(
      "a conversation's summary equals the figures recomputed from its history",
      async (store) => {
        await driveTurn(store, "c1", "Read a.ts <b>please</b>", [
          answer(
            [text("Reading."), toolCall("call_0", "read", { path: "a.ts" })],
            { input: 1200, output: 30, cacheWrite: 1000, cost: 0.0125 },
            T0 + 10,
          ),
          answer(
            [text("It adds.")],
            { input: 40, output: 12, cacheRead: 1200, cost: 0.0031 },
            T0 + 20,
          ),
        ]);
        await driveTurn(store, "c1", "And b.ts?", [
          answer(
            [text("b.ts subtracts.")],
            { input: 25, output: 9, cacheRead: 1300, cost: 0.002 },
            T0 + 30,
            "other-model",
            "other",
          ),
        ]);
        const loaded = await store.load("c1");
        assert.ok(loaded !== null);
        const page = await store.listConversations();
        assert.equal(page.total, 1);
        const summary = page.items[0] as ConversationSummary;
        assert.deepEqual(
          {
            turns: summary.turns,
            modelCalls: summary.modelCalls,
            messageCount: summary.messageCount,
            usage: summary.usage,
          },
          expectedFigures(loaded.state.messages),
        );
        assert.equal(summary.title, "Read a.ts <b>please</b>");
        assert.equal(summary.model, "other-model");
        assert.equal(summary.provider, "other");
        assert.equal(summary.status, "final");
        assert.equal(summary.usage.cacheRead, 2500);
      },
      ticking,
    );

    it("the title is the user's own text, not the context blocks before it", async (store) => {
      const state = createConversation("ctx");
      const next = transition(
        state,
        start(userMessage("  What   does\nthis do?  "), {
          context: [{ key: "workspace", text: "cwd: /home/dev" }],
        }),
      );
      const result = await store.commitInput({
        inputID: "i1",
        expectedVersion: 0,
        state: next.state.committed,
        result: null,
      });
      assert.equal(result.type, "committed");
      const page = await store.listConversations();
      assert.equal(page.items[0]?.title, "What does this do?");
      assert.equal(page.items[0]?.status, "waiting_llm");
      assert.equal(page.items[0]?.model, "test-model");
      assert.equal(page.items[0]?.modelCalls, 0);
    });

    it("a conversation's detail: calls with usage, timing and hashes, operations, messages", async (store) => {
      await driveTurn(store, "c2", "Read a.ts", [
        answer(
          [toolCall("call_0", "read", { path: "a.ts" })],
          { input: 100, output: 10, cost: 0.5 },
          T0 + 10,
        ),
        answer([text("Done.")], { input: 20, output: 5, cacheRead: 100, cost: 0.25 }, T0 + 20),
      ]);
      const detail = await store.readConversationDetail("c2");
      assert.ok(detail !== null);
      assert.equal(detail.calls.length, 2);
      const messages = await store.listMessages("c2");
      const assistantSeqs = messages.flatMap((m) =>
        m.message.role === "assistant" ? [m.seq] : [],
      );
      for (const [index, call] of detail.calls.entries()) {
        const record = await store.getLLMCall(call.callID);
        assert.ok(record !== null);
        assert.equal(call.status, "committed");
        assert.equal(call.requestHash, record.requestHash);
        assert.equal(call.requestBytes, Buffer.byteLength(record.request, "utf8"));
        assert.equal(call.createdAt, record.createdAt);
        assert.equal(call.endedAt, record.updatedAt);
        assert.equal(call.firstEventAt, index === 0 ? T0 + 50 : T0 + 60);
        assert.equal(call.messageSeq, assistantSeqs[index]);
        assert.equal(call.provider, "test");
      }
      assert.deepEqual(detail.calls[0]?.usage, {
        input: 100,
        output: 10,
        cacheRead: 0,
        cacheWrite: 0,
        cost: 0.5,
      });
      assert.deepEqual(detail.calls[1]?.usage, {
        input: 20,
        output: 5,
        cacheRead: 100,
        cacheWrite: 0,
        cost: 0.25,
      });
      assert.equal(detail.operations.length, 1);
      assert.equal(detail.operations[0]?.status, "completed");
      assert.equal((detail.operations[0]?.request as ToolCall | undefined)?.name, "read");
      const loaded = await store.load("c2");
      assert.equal(
        toCanonicalJSON(messages.map((m) => m.message)),
        toCanonicalJSON(loaded?.state.messages),
      );
      const tail = await store.listMessages("c2", 2, 2);
      assert.deepEqual(
        tail.map((m) => m.seq),
        [2, 3],
      );
      assert.deepEqual(await store.listMessages("c2", 99), []);
      assert.equal(await store.readConversationDetail("nobody"), null);
    });

    it("only the first first-event record of a call counts; unknown calls are not timed", async (store) => {
      await driveTurn(store, "c3", "hi", [answer([text("hello")], { input: 1, output: 1 }, T0)], {
        firstEventAt: T0 + 7,
      });
      const [call] = (await store.readConversationDetail("c3"))?.calls ?? [];
      assert.equal(call?.firstEventAt, T0 + 7);
      const loaded = await store.load("c3");
      assert.ok(loaded !== null && call !== undefined);
      const later = transition({ committed: loaded.state, pending: null }, followUp("again"));
      const result = await store.commitInput({
        inputID: "again",
        expectedVersion: loaded.version,
        state: later.state.committed,
        result: null,
        records: [
          { type: "llm_call_first_event", callID: call.callID, at: T0 + 999 },
          { type: "llm_call_first_event", callID: "no-such-call", at: T0 },
        ],
      });
      assert.equal(result.type, "committed");
      const [again] = (await store.readConversationDetail("c3"))?.calls ?? [];
      assert.equal(again?.firstEventAt, T0 + 7);
    });

    it(
      "pages cover every conversation once, newest first, with search and totals",
      async (store) => {
        const titles: string[] = [];
        for (let i = 0; i < 23; i++) {
          const title = i % 3 === 0 ? `Fix bug ${i}` : `Explain module ${i}`;
          titles.push(title);
          await driveTurn(store, `conv-${String(i).padStart(2, "0")}`, title, [
            answer([text("ok")], { input: 1, output: 1 }, T0),
          ]);
        }
        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await store.listConversations({ limit: 5, ...(cursor ? { cursor } : {}) });
          assert.equal(page.total, cursor === undefined ? 23 : null);
          seen.push(...page.items.map((item) => item.conversationID));
          cursor = page.nextCursor ?? undefined;
          pages++;
        } while (cursor !== undefined);
        assert.equal(pages, 5);
        assert.deepEqual(seen, [...seen].sort().reverse(), "same clock tick: id order breaks ties");
        assert.equal(new Set(seen).size, 23);
        const bugs = await store.listConversations({ search: "FIX BUG", limit: 3 });
        assert.equal(bugs.total, 8);
        assert.equal(bugs.items.length, 3);
        assert.ok(bugs.items.every((item) => item.title.startsWith("Fix bug")));
        const byID = await store.listConversations({ search: "conv-07" });
        assert.deepEqual(
          byID.items.map((item) => item.conversationID),
          ["conv-07"],
        );
        const none = await store.listConversations({ search: "100%_" });
        assert.equal(none.total, 0);
        assert.equal(none.nextCursor, null);
      },
      { now: () => T0 },
    );

    it(
      "the most recently active conversation comes first",
      async (store) => {
        await driveTurn(store, "old", "first", [answer([text("a")], { input: 1, output: 1 }, T0)]);
        await driveTurn(store, "new", "second", [answer([text("b")], { input: 1, output: 1 }, T0)]);
        await driveTurn(store, "old", "third", [answer([text("c")], { input: 1, output: 1 }, T0)]);
        const page = await store.listConversations();
        assert.deepEqual(
          page.items.map((item) => item.conversationID),
          ["old", "new"],
        );
        assert.ok((page.items[0]?.updatedAt ?? 0) > (page.items[1]?.updatedAt ?? 0));
      },
      ticking,
    );

    it("usage by day, provider and model adds up every committed call", async (store) => {
      await driveTurn(store, "u1", "one", [
        answer(
          [toolCall("call_0", "read", { path: "x" })],
          { input: 10, output: 1, cost: 0.1 },
          T0 + 5,
        ),
        answer([text("x")], { input: 2, output: 3, cacheRead: 10, cost: 0.2 }, T0 + DAY_MS + 5),
      ]);
      await driveTurn(store, "u2", "two", [
        answer(
          [text("y")],
          { input: 7, output: 7, cacheWrite: 4, cost: 0.4 },
          T0 + 9,
          "big",
          "anthropic",
        ),
      ]);
      const rows = await store.listUsage();
      assert.deepEqual(
        rows.map((row) => [row.day, row.provider, row.model, row.calls, row.usage]),
        [
          [
            "2026-01-01",
            "anthropic",
            "big",
            1,
            { input: 7, output: 7, cacheRead: 0, cacheWrite: 4, cost: 0.4 },
          ],
          [
            "2026-01-01",
            "test",
            "test-model",
            1,
            { input: 10, output: 1, cacheRead: 0, cacheWrite: 0, cost: 0.1 },
          ],
          [
            "2026-01-02",
            "test",
            "test-model",
            1,
            { input: 2, output: 3, cacheRead: 10, cacheWrite: 0, cost: 0.2 },
          ],
        ],
      );
      const second = await store.listUsage({ fromDay: "2026-01-02", toDay: "2026-01-02" });
      assert.deepEqual(
        second.map((row) => row.day),
        ["2026-01-02"],
      );
      await assert.rejects(store.listUsage({ fromDay: "yesterday" }), (error) =>
        isStoreError(error, "invalid_argument"),
      );
    });

    it("a copy's first messages (a fork, a rewind's branch, an import) are history, not its calls or cost", async (store) => {
      await driveTurn(store, "src", "Read a.ts", [
        answer([text("Reading.")], { input: 100, output: 20, cost: 0.5 }, T0 + 10),
      ]);
      await driveTurn(store, "src", "And b.ts?", [
        answer([text("b.ts subtracts.")], { input: 200, output: 30, cost: 0.25 }, T0 + 20),
      ]);
      const source = await store.load("src");
      assert.ok(source !== null);
      // Each copy is committed as the runner's route-start.ts commits it: its version 1.
      const copies = [
        toBranchState(source.state, 2, "fork", "r3:fork"),
        toBranchState(source.state, 1, "src~edit~r4", "r4:branch"),
        // Settings as the start that follows an import brings them (driveTurn's follow-up does not).
        {
          ...toImportState(
            "imported",
            [{ origin: "q1", messages: source.state.messages }],
            "q1:fork",
          ),
          settings: source.state.settings,
        },
      ];
      for (const copy of copies) {
        const usageBefore = await store.listUsage();
        const made = await store.commitInput({
          inputID: copy.lastCommitID,
          expectedVersion: 0,
          state: copy,
          result: "wait_input",
        });
        assert.equal(made.type, "committed");
        // Nothing counted for the copy: the source's calls counted it when they made it.
        assert.deepEqual(await store.listUsage(), usageBefore, copy.conversationID);
        await driveTurn(store, copy.conversationID, "Now c.ts", [
          answer([text("c.ts multiplies.")], { input: 7, output: 3, cost: 0.01 }, T0 + 30),
        ]);
        const { items } = await store.listConversations();
        const summary = items.find((item) => item.conversationID === copy.conversationID);
        const copied = copy.messages.length;
        assert.deepEqual(
          {
            title: summary?.title,
            turns: summary?.turns,
            modelCalls: summary?.modelCalls,
            messageCount: summary?.messageCount,
            usage: summary?.usage,
            provider: summary?.provider,
          },
          {
            title: "Read a.ts",
            turns: copied / 2 + 1,
            modelCalls: 1,
            messageCount: copied + 2,
            usage: { input: 7, output: 3, cacheRead: 0, cacheWrite: 0, cost: 0.01 },
            provider: "test",
          },
          copy.conversationID,
        );
        const detail = await store.readConversationDetail(copy.conversationID);
        assert.deepEqual(
          detail?.calls.map((call) => call.messageSeq),
          [copied + 1],
        );
      }
      // The source's two calls and one per copy, each counted once.
      const [day] = await store.listUsage();
      assert.deepEqual([day?.calls, day?.usage.input, day?.usage.output], [5, 321, 59]);
    });

    it("a commit that writes nothing changes no figure", async (store) => {
      await driveTurn(store, "d1", "hi", [
        answer([text("hello")], { input: 5, output: 5, cost: 1 }, T0),
      ]);
      const before = JSON.stringify([await store.listConversations(), await store.listUsage()]);
      const loaded = await store.load("d1");
      assert.ok(loaded !== null);
      const later = transition({ committed: loaded.state, pending: null }, followUp("more"));
      const conflict = await store.commitInput({
        inputID: "stale",
        expectedVersion: loaded.version - 1,
        state: later.state.committed,
        result: null,
      });
      assert.equal(conflict.type, "conflict");
      const [call] = (await store.readConversationDetail("d1"))?.calls ?? [];
      const finished = await store.commitInput({
        inputID: "second-done",
        expectedVersion: loaded.version,
        state: later.state.committed,
        result: null,
        records: [{ type: "llm_call_status", callID: call?.callID ?? "", status: "committed" }],
      });
      assert.equal(finished.type, "call_finished");
      assert.equal(
        JSON.stringify([await store.listConversations(), await store.listUsage()]),
        before,
      );
    });

    it("a failed turn's reason is in the detail; a later turn clears it", async (store) => {
      const started = transition(createConversation("f1"), start(userMessage("hi")));
      const call = started.state.committed.call;
      assert.ok(call !== null);
      const failedTurn = transition(started.state, {
        type: "llm_event",
        callID: call.callID,
        event: {
          type: "error",
          reason: "error",
          error: {
            ...answer([], { input: 0, output: 0 }, T0),
            stopReason: "error",
            errorMessage: "upstream said <no>",
          },
        },
      });
      assert.equal(failedTurn.state.committed.status, "failed");
      for (const [version, state] of [
        started.state.committed,
        failedTurn.state.committed,
      ].entries()) {
        const result = await store.commitInput({
          inputID: `f${version}`,
          expectedVersion: version,
          state,
          result: null,
        });
        assert.equal(result.type, "committed");
      }
      const detail = await store.readConversationDetail("f1");
      assert.deepEqual(detail?.failure, {
        callID: call.callID,
        reason: "error",
        message: "upstream said <no>",
      });
      assert.equal(detail?.summary.status, "failed");
      assert.equal(detail?.summary.modelCalls, 0);
      await driveTurn(store, "f1", "again", [answer([text("ok")], { input: 1, output: 1 }, T0)]);
      assert.equal((await store.readConversationDetail("f1"))?.failure, null);
    });

    it("odd usage from a provider never fails a commit: whole tokens, nothing negative", async (store) => {
      const odd = {
        ...answer([text("ok")], { input: 0, output: 0 }, T0),
        usage: { input: 12.6, output: -5, cacheRead: "7", totalTokens: 0, cost: { total: -1 } },
      } as unknown as AssistantMessage;
      await driveTurn(store, "odd", "hi", [odd]);
      const [item] = (await store.listConversations()).items;
      assert.deepEqual(item?.usage, { input: 13, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 });
      assert.deepEqual((await store.listUsage())[0]?.usage, item?.usage);
    });

    it("refuses bad limits and cursors", async (store) => {
      for (const query of [{ limit: 0 }, { limit: 201 }, { limit: 1.5 }, { cursor: "nope" }]) {
        await assert.rejects(store.listConversations(query), (error) =>
          isStoreError(error, "invalid_argument"),
        );
      }
      await assert.rejects(store.listMessages("x", -1), (error) =>
        isStoreError(error, "invalid_argument"),
      );
    });
  });
}
