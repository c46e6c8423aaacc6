/**
 * The store contract: one suite, written as a function of a store factory, run against every
 * store (memory-store.test.ts, sqlite-store.test.ts), so no store can drift from the others.
 *
 * Why one file of about 870 lines: it is one suite, a function of a store factory, so every
 * backend runs exactly the same tests; its helpers are the suite's own.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import fc from "fast-check";
import { toCanonicalJSON } from "../../loop/canonical-json.ts";
import { hashHistory, toMessageBytes } from "../../loop/history-hash.ts";
import { createConversation } from "../../loop/state.ts";
import { toolCall } from "../../loop/testing.ts";
import { transition } from "../../loop/transition.ts";
import type { CallLLMCommand, ConversationState, Message } from "../../loop/types.ts";
import { readStoredRowsForTesting, type StoreOptions } from "../create-store.ts";
import { isStoreError, type StoreErrorCode } from "../errors.ts";
import { imageHash } from "../image-refs.ts";
import { createOperationRunner } from "../run-once.ts";
import { TURN_BLOBS_PER_REQUEST } from "../turn-blobs.ts";
import type {
  ClientOperationInput,
  CommitResult,
  InputCommit,
  LLMCallInput,
  LLMCallStatus,
  RecordWrite,
  RequestStream,
  RequestStreamBinding,
  Store,
} from "../types.ts";
import { type ScriptedCommit, toScriptedCommits } from "./scripted-conversation.ts";
import { listUnfinished } from "./unfinished.ts";

export interface StoreFixture {
  readonly store: Store;
  /** Removes whatever the fixture created (files, directories). */
  cleanup(): Promise<void>;
}

/** Opens a new, empty store; `options` (e.g. a test clock) are passed to the store. */
export type OpenStore = (options?: StoreOptions) => Promise<StoreFixture>;

const CONVERSATION = "conv-contract";

export function runStoreContract(name: string, open: OpenStore): void {
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

  describe(`store contract: ${name}`, () => {
    describe("history", () => {
      it("an unknown conversation loads as null and has no commits", async (store) => {
        assert.equal(await store.load("nobody"), null);
        assert.equal(await store.findInputCommit("nobody", "input-1"), null);
      });

      it("every commit loads back byte for byte, at the next version", async (store) => {
        const commits = toScriptedCommits(CONVERSATION);
        for (const [index, commit] of commits.entries()) {
          const result = await commitScripted(store, commit, index);
          assert.equal(result.type, "committed");
          const loaded = await store.load(CONVERSATION);
          assert.ok(loaded !== null);
          assert.equal(loaded.version, index + 1);
          assert.equal(toCanonicalJSON(loaded.state), toCanonicalJSON(commit.state));
          assertSameBytes(loaded.state.messages, commit.state.messages);
        }
      });

      it("any messages round-trip byte for byte (property)", async (store) => {
        let run = 0;
        await fc.assert(
          fc.asyncProperty(
            fc.array(arbitraryMessage, { minLength: 1, maxLength: 4 }),
            async (messages) => {
              run += 1;
              const state = withMessages(createConversation(`prop-${run}`).committed, messages);
              const result = await store.commitInput({
                inputID: "only",
                expectedVersion: 0,
                state,
                result: null,
              });
              assert.equal(result.type, "committed");
              const loaded = await store.load(state.conversationID);
              assert.ok(loaded !== null);
              assertSameBytes(loaded.state.messages, messages);
            },
          ),
          { numRuns: 40, seed: 20260101 },
        );
      });

      it("a message with a lone surrogate and unsorted keys keeps its bytes", async (store) => {
        const messages: Message[] = [
          {
            role: "user",
            content: 'half a pair: \ud83d, escapes: \u0000 \u2028 "q"',
            timestamp: 1,
          },
          {
            role: "assistant",
            content: [toolCall("t1", "edit", { z: 1, a: { y: [2, 1], b: null }, "": -0.5 })],
            api: "openai-completions",
            provider: "test",
            model: "m",
            usage: zeroUsage(),
            stopReason: "toolUse",
            timestamp: 2,
          },
        ];
        const state = withMessages(createConversation(CONVERSATION).committed, messages);
        await store.commitInput({ inputID: "i", expectedVersion: 0, state, result: null });
        const loaded = await store.load(CONVERSATION);
        assert.ok(loaded !== null);
        assertSameBytes(loaded.state.messages, messages);
      });

      it("a load returns a copy: changing it changes nothing stored", async (store) => {
        const [first] = toScriptedCommits(CONVERSATION);
        await commitScripted(store, first as ScriptedCommit, 0);
        const loaded = await store.load(CONVERSATION);
        assert.ok(loaded !== null);
        (loaded.state.messages[0] as { content: unknown }).content = "changed";
        const again = await store.load(CONVERSATION);
        assert.equal(toCanonicalJSON(again?.state), toCanonicalJSON(first?.state));
      });

      it("the stored chain hash is the loop's hash of the same messages", async (store) => {
        const commits = toScriptedCommits(CONVERSATION);
        for (const [index, commit] of commits.entries()) {
          const result = await commitScripted(store, commit, index);
          assert.ok(result.type === "committed");
          const expected = hashHistory(commit.state.messages);
          assert.equal(result.commit.chainHash, expected.chainHash);
          assert.equal(result.commit.messageCount, commit.state.messages.length);
          if (commit.command.type === "call_llm") {
            // The request's messagesHash is the stored chain at the moment it is sent.
            assert.equal(commit.command.messagesHash, result.commit.chainHash);
            assert.equal(commit.command.messageCount, result.commit.messageCount);
          }
        }
        const loaded = await store.load(CONVERSATION);
        assert.deepEqual(loaded?.state.hashes, hashHistory(loaded?.state.messages ?? []));
      });
    });

    describe("compare-and-swap", () => {
      it("of two writers of the same version, one commits and one gets a conflict", async (store) => {
        const [first, second] = toScriptedCommits(CONVERSATION) as [ScriptedCommit, ScriptedCommit];
        await commitScripted(store, first, 0);
        const canceled = cancelState(first.state, "cancel-1");
        const results = await Promise.all([
          store.commitInput({
            inputID: second.inputID,
            expectedVersion: 1,
            state: second.state,
            result: "a",
          }),
          store.commitInput({
            inputID: "cancel-1",
            expectedVersion: 1,
            state: canceled,
            result: "b",
          }),
        ]);
        // Which of two concurrent writers wins is the store's to decide (on PostgreSQL the two
        // run on two pooled connections); exactly one commits, and the other sees its version.
        const won = results.findIndex((result) => result.type === "committed");
        assert.deepEqual(results.map((result) => result.type).sort(), ["committed", "conflict"]);
        assert.deepEqual(results[1 - won], {
          type: "conflict",
          conversationID: CONVERSATION,
          expectedVersion: 1,
          actualVersion: 2,
        });
        const loaded = await store.load(CONVERSATION);
        assert.equal(
          toCanonicalJSON(loaded?.state),
          toCanonicalJSON(won === 0 ? second.state : canceled),
        );
        const lost = won === 0 ? "cancel-1" : second.inputID;
        assert.equal(await store.findInputCommit(CONVERSATION, lost), null);
      });

      it("a new conversation needs version 0, an existing one its current version", async (store) => {
        const [first, second] = toScriptedCommits(CONVERSATION) as [ScriptedCommit, ScriptedCommit];
        assert.deepEqual(
          await store.commitInput({
            inputID: "x",
            expectedVersion: 1,
            state: first.state,
            result: null,
          }),
          { type: "conflict", conversationID: CONVERSATION, expectedVersion: 1, actualVersion: 0 },
        );
        await commitScripted(store, first, 0);
        assert.deepEqual(
          await store.commitInput({
            inputID: "y",
            expectedVersion: 0,
            state: second.state,
            result: null,
          }),
          { type: "conflict", conversationID: CONVERSATION, expectedVersion: 0, actualVersion: 1 },
        );
      });

      it("a lost compare-and-swap writes none of its records", async (store) => {
        const [first, second] = toScriptedCommits(CONVERSATION) as [ScriptedCommit, ScriptedCommit];
        await commitScripted(store, first, 0);
        const before = await snapshot(store);
        const result = await store.commitInput({
          inputID: "late",
          expectedVersion: 0,
          state: second.state,
          result: null,
          records: [{ type: "llm_call", call: toLLMCall(first) }],
        });
        assert.equal(result.type, "conflict");
        assert.equal(await snapshot(store), before);
      });
    });

    describe("input de-duplication", () => {
      it("a repeated input returns the recorded result and writes nothing", async (store) => {
        const [first, second] = toScriptedCommits(CONVERSATION) as [ScriptedCommit, ScriptedCommit];
        const committed = await commitScripted(store, first, 0);
        assert.ok(committed.type === "committed");
        await commitScripted(store, second, 1);
        const before = await snapshot(store);
        // Same input id, stale version, other state: still the recorded result, not a conflict.
        const again = await store.commitInput({
          inputID: first.inputID,
          expectedVersion: 0,
          state: second.state,
          result: "ignored",
        });
        assert.deepEqual(again, { type: "duplicate", previous: committed.commit });
        assert.deepEqual(
          again.type === "duplicate" && again.previous.result,
          toJSON(first.command),
        );
        assert.equal(await snapshot(store), before);
        assert.deepEqual(
          await store.findInputCommit(CONVERSATION, first.inputID),
          committed.commit,
        );
      });
    });

    describe("history integrity", () => {
      it("a state whose hashes do not extend the stored chain is refused", async (store) => {
        const [first, second] = toScriptedCommits(CONVERSATION) as [ScriptedCommit, ScriptedCommit];
        await commitScripted(store, first, 0);
        const before = await snapshot(store);
        const wrongHash = {
          ...second.state,
          hashes: { ...second.state.hashes, chainHash: "f".repeat(64) },
        };
        await assertStoreError(
          store,
          store.commitInput({ inputID: "bad", expectedVersion: 1, state: wrongHash, result: null }),
          "chain_mismatch",
        );
        assert.equal(await snapshot(store), before);
        assert.equal(await store.findInputCommit(CONVERSATION, "bad"), null);
      });

      it("a history that shrank or changed a stored message is refused", async (store) => {
        const commits = toScriptedCommits(CONVERSATION);
        for (const [index, commit] of commits.slice(0, 3).entries()) {
          await commitScripted(store, commit, index);
        }
        const stored = (commits[2] as ScriptedCommit).state;
        const next = (commits[3] as ScriptedCommit).state;
        const before = await snapshot(store);
        const edit = (index: number): ConversationState => {
          const messages = next.messages.map((message, i) =>
            i === index ? { ...message, timestamp: message.timestamp + 1 } : message,
          );
          return withMessages(next, messages as Message[]);
        };
        for (const state of [
          withMessages(stored, stored.messages.slice(0, 2) as Message[]),
          edit(0),
          edit(stored.messages.length - 1),
        ]) {
          await assertStoreError(
            store,
            store.commitInput({ inputID: "bad", expectedVersion: 3, state, result: null }),
            "chain_mismatch",
          );
        }
        assert.equal(await snapshot(store), before);
      });

      it("a result or record that is not plain JSON is refused", async (store) => {
        const [first] = toScriptedCommits(CONVERSATION) as [ScriptedCommit];
        for (const result of [new Date(0), { f: () => 1 }, Number.NaN, undefined]) {
          await assertStoreError(
            store,
            store.commitInput({ inputID: "a", expectedVersion: 0, state: first.state, result }),
            "invalid_argument",
          );
        }
        assert.equal(await store.load(CONVERSATION), null);
      });
    });

    describe("model calls", () => {
      it("a saved call keeps its first request and hashes it", async (store) => {
        const [first] = toScriptedCommits(CONVERSATION) as [ScriptedCommit];
        await commitScripted(store, first, 0);
        const call = toLLMCall(first);
        const saved = await store.saveLLMCall(call);
        assert.equal(saved.request, call.request);
        assert.equal(saved.requestHash, sha256(call.request));
        const retried = await store.saveLLMCall({
          ...call,
          request: `${call.request} `,
          status: "streaming",
        });
        assert.equal(retried.request, call.request);
        assert.equal(retried.requestHash, saved.requestHash);
        assert.equal(retried.status, "streaming");
        assert.deepEqual(await store.getLLMCall(call.callID), retried);
      });

      it("a call saved with its request's hash keeps that hash; a malformed hash is refused", async (store) => {
        const [first] = toScriptedCommits(CONVERSATION) as [ScriptedCommit];
        await commitScripted(store, first, 0);
        const call = toLLMCall(first);
        await assertStoreError(
          store,
          store.saveLLMCall({ ...call, requestHash: "NOT-A-HASH" }),
          "invalid_argument",
        );
        assert.equal(await store.getLLMCall(call.callID), null);
        const saved = await store.saveLLMCall({ ...call, requestHash: sha256(call.request) });
        assert.equal(saved.requestHash, sha256(call.request));
        assert.deepEqual(await store.getLLMCall(call.callID), saved);
      });

      it("a call's status only moves forward, and a terminal status is final", async (store) => {
        const [first] = toScriptedCommits(CONVERSATION) as [ScriptedCommit];
        await commitScripted(store, first, 0);
        const { callID } = await store.saveLLMCall(toLLMCall(first, "streaming"));
        const steps: [LLMCallStatus, LLMCallStatus][] = [
          ["planned", "streaming"],
          ["streaming", "streaming"],
          ["failed", "failed"],
          ["streaming", "failed"],
          ["committed", "failed"],
        ];
        for (const [asked, expected] of steps) {
          assert.equal((await store.setLLMCallStatus(callID, asked)).status, expected);
        }
      });

      it("unknown calls and conversations are not found", async (store) => {
        const [first] = toScriptedCommits(CONVERSATION) as [ScriptedCommit];
        await assertStoreError(store, store.saveLLMCall(toLLMCall(first)), "not_found");
        await assertStoreError(store, store.setLLMCallStatus("nope", "streaming"), "not_found");
        assert.equal(await store.getLLMCall("nope"), null);
      });

      it("a commit writes its records in the same transaction", async (store) => {
        const [first, second] = toScriptedCommits(CONVERSATION) as [ScriptedCommit, ScriptedCommit];
        const call = toLLMCall(first);
        await commitScripted(store, first, 0, [{ type: "llm_call", call }]);
        assert.equal((await store.getLLMCall(call.callID))?.request, call.request);
        const operation = toOperation(second);
        await commitScripted(store, second, 1, [
          { type: "llm_call_status", callID: call.callID, status: "committed" },
          { type: "client_operation", operation },
        ]);
        assert.equal((await store.getLLMCall(call.callID))?.status, "committed");
        assert.deepEqual(
          (await store.getClientOperation(operation.operationID))?.request,
          operation.request,
        );
      });

      it("a record that fails makes the whole commit fail", async (store) => {
        const [first] = toScriptedCommits(CONVERSATION) as [ScriptedCommit];
        await assertStoreError(
          store,
          commitScripted(store, first, 0, [
            { type: "llm_call", call: toLLMCall(first) },
            { type: "llm_call_status", callID: "unknown", status: "streaming" },
          ]),
          "not_found",
        );
        assert.equal(await store.load(CONVERSATION), null);
        assert.equal(await store.getLLMCall(toLLMCall(first).callID), null);
      });

      it("a model call is committed once: a second commit of it writes nothing", async (store) => {
        const [first, second, third] = toScriptedCommits(CONVERSATION) as ScriptedCommit[];
        assert.ok(first && second && third);
        const call = toLLMCall(first);
        await commitScripted(store, first, 0, [{ type: "llm_call", call }]);
        await commitScripted(store, second, 1, [
          { type: "llm_call_status", callID: call.callID, status: "committed" },
        ]);
        const before = await snapshot(store);
        const result = await commitScripted(store, third, 2, [
          { type: "llm_call_status", callID: call.callID, status: "committed" },
        ]);
        assert.deepEqual(result, {
          type: "call_finished",
          callID: call.callID,
          status: "committed",
        });
        assert.equal(await snapshot(store), before);
        assert.equal(await store.findInputCommit(CONVERSATION, third.inputID), null);
      });
    });

    describe("images stored once", () => {
      it("an image in a message and in every model call is stored once and reads back byte for byte", async (store) => {
        const image = testImage(48 * 1024, 7);
        const first = imageMessage("look at this", image);
        const state = withMessages(createConversation(CONVERSATION).committed, [first]);
        const calls = wireRequests(image).map(
          (request, index): LLMCallInput => ({
            callID: `call-image-${index}`,
            conversationID: CONVERSATION,
            turnID: "turn-1",
            model: "m",
            request,
            messagesHash: state.hashes.chainHash,
            messageCount: 1,
            lastMessageHash: state.hashes.lastMessageHash,
            status: "planned",
          }),
        );
        const [planned, ...saved] = calls as [LLMCallInput, ...LLMCallInput[]];
        const result = await store.commitInput({
          inputID: "i1",
          expectedVersion: 0,
          state,
          result: null,
          records: [{ type: "llm_call", call: planned }],
        });
        assert.equal(result.type, "committed");
        for (const call of saved) await store.saveLLMCall(call);
        // A later message with the same image (the user attaches it again).
        const second = imageMessage("and again", image);
        const later = withMessages(state, [first, second]);
        await store.commitInput({ inputID: "i2", expectedVersion: 1, state: later, result: null });

        const loaded = await store.load(CONVERSATION);
        assertSameBytes(loaded?.state.messages ?? [], [first, second]);
        assert.deepEqual(loaded?.state.hashes, hashHistory([first, second]));
        for (const call of calls) {
          const read = await store.getLLMCall(call.callID);
          assert.equal(read?.request, call.request, call.callID);
          assert.equal(read?.requestHash, sha256(call.request));
        }
        const unfinished = await listUnfinished(store, CONVERSATION);
        assert.deepEqual(
          unfinished.llmCalls.map((call) => call.request),
          calls.map((call) => call.request),
        );

        // As stored: no row holds the image; it is kept once, under its hash.
        const stored = await readStoredRowsForTesting(store, async (tables) => ({
          messages: await tables.readMessages(CONVERSATION),
          requests: await Promise.all(
            calls.map(async (call) => (await tables.readLLMCall(call.callID))?.request ?? ""),
          ),
          image: await tables.readImage(imageHash(image)),
        }));
        const texts = [...stored.messages.map((row) => row.json), ...stored.requests];
        for (const text of texts) assert.ok(!text.includes(image.slice(0, 200)), text);
        const rowBytes = texts.reduce((sum, text) => sum + Buffer.byteLength(text), 0);
        assert.ok(rowBytes < image.length / 4, `rows hold ${rowBytes} bytes`);
        assert.equal(stored.image, image);
      });

      it("a commit that fails stores none of its images", async (store) => {
        const image = testImage(4096, 3);
        const state = withMessages(createConversation(CONVERSATION).committed, [
          imageMessage("first", image),
        ]);
        const bad: LLMCallInput = {
          callID: "call-bad",
          conversationID: "another-conversation",
          turnID: "t",
          model: "m",
          request: JSON.stringify({ image }),
          messagesHash: state.hashes.chainHash,
          messageCount: 1,
          lastMessageHash: state.hashes.lastMessageHash,
          status: "planned",
        };
        await assert.rejects(
          store.commitInput({
            inputID: "i1",
            expectedVersion: 0,
            state,
            result: null,
            records: [{ type: "llm_call", call: bad }],
          }),
        );
        assert.equal(await store.load(CONVERSATION), null);
        const kept = await readStoredRowsForTesting(store, (tables) =>
          tables.readImage(imageHash(image)),
        );
        assert.equal(kept, null);
      });

      it("texts that look like references or hold short base64 keep their bytes", async (store) => {
        const [first] = toScriptedCommits(CONVERSATION) as [ScriptedCommit];
        await commitScripted(store, first, 0);
        const image = testImage(2048, 5);
        const requests = [
          "\u0001",
          '\u0001["a","b","c"]',
          `\u0001${image}`,
          `short ${testImage(600, 1)} stays`,
          `${image}\u0001${image}=${image.slice(0, 1024)}`,
          `half a pair \ud83d ${image}\udc00`,
        ];
        for (const [index, request] of requests.entries()) {
          const call = { ...toLLMCall(first), callID: `call-text-${index}`, request };
          const saved = await store.saveLLMCall(call);
          assert.equal(saved.request, request, `request ${index}`);
          assert.equal((await store.getLLMCall(call.callID))?.request, request);
        }
      });
    });

    describe("client operations", () => {
      it("an operation keeps its request and its first result", async (store) => {
        const [first, second] = toScriptedCommits(CONVERSATION) as [ScriptedCommit, ScriptedCommit];
        await commitScripted(store, first, 0);
        await commitScripted(store, second, 1);
        const operation = toOperation(second);
        await store.saveClientOperation(operation);
        await assertStoreError(
          store,
          store.setClientOperationStatus(operation.operationID, "completed"),
          "invalid_argument",
        );
        await assertStoreError(
          store,
          store.setClientOperationStatus(operation.operationID, "sent", "early"),
          "invalid_argument",
        );
        const done = await store.setClientOperationStatus(operation.operationID, "completed", {
          output: "first",
        });
        assert.deepEqual(done.result, { output: "first" });
        const again = await store.saveClientOperation({
          ...operation,
          request: { other: true },
          status: "completed",
          result: { output: "second" },
        });
        assert.deepEqual(again, done);
        const canceled = await store.setClientOperationStatus(operation.operationID, "canceled");
        assert.equal(canceled.status, "completed");
        await assertStoreError(store, store.setClientOperationStatus("nope", "sent"), "not_found");
      });

      it("unfinished calls and operations are listed for recovery", async (store) => {
        const commits = toScriptedCommits(CONVERSATION);
        const [first, second] = commits as [ScriptedCommit, ScriptedCommit];
        await commitScripted(store, first, 0, [{ type: "llm_call", call: toLLMCall(first) }]);
        let unfinished = await listUnfinished(store);
        assert.deepEqual(
          unfinished.llmCalls.map((call) => [call.callID, call.status]),
          [[toLLMCall(first).callID, "planned"]],
        );
        await commitScripted(store, second, 1, [
          { type: "llm_call_status", callID: toLLMCall(first).callID, status: "committed" },
          { type: "client_operation", operation: { ...toOperation(second), status: "sent" } },
        ]);
        unfinished = await listUnfinished(store, CONVERSATION);
        assert.deepEqual(unfinished.llmCalls, []);
        assert.deepEqual(
          unfinished.clientOperations.map((operation) => [operation.operationID, operation.status]),
          [[toOperation(second).operationID, "sent"]],
        );
        assert.deepEqual(await listUnfinished(store, "other"), {
          llmCalls: [],
          clientOperations: [],
        });
      });
    });

    describe("run once", () => {
      const setUp = async (store: Store): Promise<ClientOperationInput> => {
        const [first, second] = toScriptedCommits(CONVERSATION) as [ScriptedCommit, ScriptedCommit];
        await commitScripted(store, first, 0);
        await commitScripted(store, second, 1);
        return toOperation(second);
      };

      it("an operation never run is run once and its result saved", async (store) => {
        const operation = await setUp(store);
        const runs: unknown[] = [];
        const record = await createOperationRunner(store).runOnce(operation, async (saved) => {
          runs.push(saved.request);
          assert.equal((await store.getClientOperation(operation.operationID))?.status, "sent");
          return { output: "ok" };
        });
        assert.deepEqual(runs, [operation.request]);
        assert.equal(record.status, "completed");
        assert.deepEqual(record.result, { output: "ok" });
        assert.deepEqual(await store.getClientOperation(operation.operationID), record);
      });

      it("a running operation is awaited, not run again", async (store) => {
        const operation = await setUp(store);
        const runner = createOperationRunner(store);
        let runs = 0;
        let release: (value: unknown) => void = () => {};
        const gate = new Promise((resolve) => {
          release = resolve;
        });
        const run = async (): Promise<unknown> => {
          runs += 1;
          await gate;
          return "shared";
        };
        const first = runner.runOnce(operation, run);
        const second = runner.runOnce(operation, run);
        release(undefined);
        const [a, b] = await Promise.all([first, second]);
        assert.equal(runs, 1);
        assert.deepEqual(a, b);
        assert.equal(a.result, "shared");
      });

      it("a completed operation returns its saved result without running", async (store) => {
        const operation = await setUp(store);
        await createOperationRunner(store).runOnce(operation, async () => "saved");
        const record = await createOperationRunner(store).runOnce(operation, async () => {
          throw new Error("must not run");
        });
        assert.equal(record.result, "saved");
      });

      it("an operation a dead process left sent is run with its outcome unknown; a failed run can be retried", async (store) => {
        const operation = await setUp(store);
        await store.saveClientOperation({ ...operation, status: "sent" });
        const runner = createOperationRunner(store);
        const attempts: boolean[] = [];
        await assert.rejects(
          runner.runOnce(operation, async (_saved, attempt) => {
            attempts.push(attempt.outcomeUnknown);
            throw new Error("client went away");
          }),
          /client went away/,
        );
        assert.equal((await store.getClientOperation(operation.operationID))?.status, "sent");
        const record = await runner.runOnce(operation, async (_saved, attempt) => {
          attempts.push(attempt.outcomeUnknown);
          return "second try";
        });
        assert.equal(record.result, "second try");
        assert.deepEqual(attempts, [true, true], "the caller is told it may have run");
      });

      it("an operation never sent is run with its outcome known", async (store) => {
        const operation = await setUp(store);
        const attempts: boolean[] = [];
        await createOperationRunner(store).runOnce(operation, async (_saved, attempt) => {
          attempts.push(attempt.outcomeUnknown);
          return "ok";
        });
        assert.deepEqual(attempts, [false]);
      });

      it("a canceled operation is not run", async (store) => {
        const operation = await setUp(store);
        await store.saveClientOperation({ ...operation, status: "canceled" });
        const record = await createOperationRunner(store).runOnce(operation, async () => {
          throw new Error("must not run");
        });
        assert.equal(record.status, "canceled");
        assert.equal(record.result, null);
      });
    });

    describe("the newest conversation by id prefix", () => {
      let clock = 0;
      const ticking: StoreOptions = { now: () => clock };
      /** Creates conversation `id` at time `at`. */
      const create = async (store: Store, id: string, at: number) => {
        clock = at;
        const [first] = toScriptedCommits(id) as [ScriptedCommit];
        assert.equal((await commitScripted(store, first, 0)).type, "committed");
      };

      it(
        "is the latest created in the prefix's range, without the excluded part, and null when none",
        async (store) => {
          assert.equal(await store.findNewestConversation("x~edit~", "~task~"), null);
          await create(store, "x", 1);
          await create(store, "x~edit~b", 2);
          assert.equal(await store.findNewestConversation("x~edit~", "~task~"), "x~edit~b");
          // Newest by creation, not by id.
          await create(store, "x~edit~a", 3);
          assert.equal(await store.findNewestConversation("x~edit~", "~task~"), "x~edit~a");
          // Not in the range or excluded: a subagent of the branch, look-alike ids, another
          // conversation's branch, the prefix's own conversation.
          await create(store, "x~edit~a~task~d", 4);
          await create(store, "x~editor", 5);
          await create(store, "x~edit", 6);
          await create(store, "xx~edit~c", 7);
          await create(store, "x~edit\u007f", 8);
          await create(store, "y~edit~c", 9);
          assert.equal(await store.findNewestConversation("x~edit~", "~task~"), "x~edit~a");
          // Characters past ASCII after the prefix are in the range too.
          await create(store, "x~edit~é\u{1F600}", 10);
          assert.equal(
            await store.findNewestConversation("x~edit~", "~task~"),
            "x~edit~é\u{1F600}",
          );
          // The same creation time: the greater id.
          await create(store, "x~edit~0", 10);
          assert.equal(
            await store.findNewestConversation("x~edit~", "~task~"),
            "x~edit~é\u{1F600}",
          );
          assert.equal(await store.findNewestConversation("y~edit~", "~task~"), "y~edit~c");
          assert.equal(await store.findNewestConversation("z~edit~", "~task~"), null);
        },
        ticking,
      );

      it("refuses a prefix that is no range and an empty excluded part", async (store) => {
        await assertStoreError(
          store,
          store.findNewestConversation("", "~task~"),
          "invalid_argument",
        );
        await assertStoreError(
          store,
          store.findNewestConversation("x\u007f", "~task~"),
          "invalid_argument",
        );
        await assertStoreError(
          store,
          store.findNewestConversation("x~é", "~task~"),
          "invalid_argument",
        );
        await assertStoreError(
          store,
          store.findNewestConversation("x~edit~", ""),
          "invalid_argument",
        );
      });
    });

    describe("turn blobs", () => {
      /** A blob id (64 hex digits) made from `seed`. */
      const blob = (seed: string): string => createHash("sha256").update(seed).digest("hex");
      const record = (seed: string, requestID = "req-1", conversationID = CONVERSATION) => ({
        blobID: blob(seed),
        conversationID,
        requestID,
      });

      it("a recorded turn blob is found with its conversation and request; an unknown one is null", async (store) => {
        assert.equal(await store.findTurnBlob(blob("a")), null);
        await store.recordTurnBlobs([record("a"), record("b", "req-2", "conv-other")]);
        assert.deepEqual(await store.findTurnBlob(blob("a")), record("a"));
        assert.deepEqual(await store.findTurnBlob(blob("b")), record("b", "req-2", "conv-other"));
        assert.equal(await store.findTurnBlob(blob("c")), null);
        // No conversation needs to exist, and no version moves.
        assert.equal(await store.load(CONVERSATION), null);
        await store.recordTurnBlobs([]);
      });

      it("a blob id recorded again keeps its first record", async (store) => {
        await store.recordTurnBlobs([record("a")]);
        await store.recordTurnBlobs([record("a", "req-2", "conv-other"), record("a", "req-3")]);
        assert.deepEqual(await store.findTurnBlob(blob("a")), record("a"));
      });

      it(`only the newest ${TURN_BLOBS_PER_REQUEST} turn blobs of a request are kept, in one batch or several`, async (store) => {
        const many = TURN_BLOBS_PER_REQUEST + 3;
        for (let index = 0; index < many; index += 1) {
          await store.recordTurnBlobs([record(`one-${index}`, "req-one")]);
        }
        await store.recordTurnBlobs(
          Array.from({ length: many }, (_, index) => record(`batch-${index}`, "req-batch")),
        );
        await store.recordTurnBlobs([
          record("other-0", "req-other"),
          record("other-1", "req-other"),
        ]);
        for (const prefix of ["one", "batch"]) {
          const kept: boolean[] = [];
          for (let index = 0; index < many; index += 1) {
            kept.push((await store.findTurnBlob(blob(`${prefix}-${index}`))) !== null);
          }
          assert.deepEqual(
            kept,
            Array.from({ length: many }, (_, index) => index >= many - TURN_BLOBS_PER_REQUEST),
            prefix,
          );
        }
        // Other requests keep theirs; a blob recorded again does not count as new.
        assert.notEqual(await store.findTurnBlob(blob("other-0")), null);
        await store.recordTurnBlobs([record(`one-${many - TURN_BLOBS_PER_REQUEST}`, "req-one")]);
        assert.notEqual(
          await store.findTurnBlob(blob(`one-${many - TURN_BLOBS_PER_REQUEST}`)),
          null,
        );
      });

      it("a request's turn blobs are listed newest first, the trimmed ones gone; other requests' not", async (store) => {
        assert.deepEqual(await store.findTurnBlobsOf("req-list"), []);
        const many = TURN_BLOBS_PER_REQUEST + 2;
        for (let index = 0; index < many; index += 1) {
          await store.recordTurnBlobs([
            record(`list-${index}`, "req-list"),
            record(`elsewhere-${index}`, "req-elsewhere", "conv-other"),
          ]);
        }
        // Recorded again (an older one, so that moving it to the front would show): still where
        // it was first.
        await store.recordTurnBlobs([record(`list-${many - 3}`, "req-list")]);
        await store.recordTurnBlobs([record(`list-${many - 3}`, "req-list")]);
        assert.deepEqual(
          await store.findTurnBlobsOf("req-list"),
          Array.from({ length: TURN_BLOBS_PER_REQUEST }, (_, index) =>
            record(`list-${many - 1 - index}`, "req-list"),
          ),
        );
        assert.deepEqual(
          (await store.findTurnBlobsOf("req-elsewhere")).map((row) => row.conversationID),
          Array.from({ length: TURN_BLOBS_PER_REQUEST }, () => "conv-other"),
        );
      });

      it("a batch with an invalid turn blob is refused whole; an invalid id is refused on look-up", async (store) => {
        const invalid = [
          { ...record("x"), blobID: "AB".repeat(32) },
          { ...record("x"), blobID: "ab".repeat(31) },
          { ...record("x"), blobID: 7 as unknown as string },
          { ...record("x"), requestID: "" },
          { ...record("x"), conversationID: "" },
        ];
        for (const bad of invalid) {
          await assertStoreError(
            store,
            store.recordTurnBlobs([record("good"), bad]),
            "invalid_argument",
          );
        }
        assert.equal(await store.findTurnBlob(blob("good")), null);
        await assertStoreError(store, store.findTurnBlob("xyz"), "invalid_argument");
      });
    });

    describe("request streams", () => {
      const bind = (requestID: string): RecordWrite => ({ type: "request_stream", requestID });
      let clock = 0;
      const ticking: StoreOptions = { now: () => clock };

      it("a request id bound in a commit is found with its conversation", async (store) => {
        const [first] = toScriptedCommits(CONVERSATION) as [ScriptedCommit];
        assert.equal(await store.findRequestStream("req-1"), null);
        const result = await commitScripted(store, first, 0, [bind("req-1")]);
        assert.ok(result.type === "committed");
        assert.deepEqual(await store.findRequestStream("req-1"), {
          conversationID: CONVERSATION,
          turnID: null,
          clientState: null,
          createdAt: result.commit.committedAt,
        });
      });

      it("a binding keeps the turn and the client state (bytes) saved with it, and a re-bind keeps the first", async (store) => {
        const [first, second] = toScriptedCommits(CONVERSATION) as [ScriptedCommit, ScriptedCommit];
        // Every byte value, including a zero byte and bytes that are not UTF-8.
        const saved = Uint8Array.from({ length: 256 }, (_, index) => index);
        await commitScripted(store, first, 0, [
          { type: "request_stream", requestID: "req-1", turnID: "turn-1", clientState: saved },
        ]);
        saved[0] = 255; // the store kept a copy
        await commitScripted(store, second, 1, [
          {
            type: "request_stream",
            requestID: "req-1",
            turnID: "turn-2",
            clientState: Uint8Array.of(1, 2, 3),
          },
        ]);
        const bound = await store.findRequestStream("req-1");
        assert.equal(bound?.turnID, "turn-1");
        assert.ok(bound?.clientState instanceof Uint8Array);
        assert.deepEqual(
          [...bound.clientState],
          Array.from({ length: 256 }, (_, index) => index),
        );
        // What a caller does with the bytes it got does not reach the store either.
        bound.clientState[1] = 0;
        assert.equal((await store.findRequestStream("req-1"))?.clientState?.[1], 1);
      });

      it("client state that is not bytes is refused and nothing is written", async (store) => {
        const [first] = toScriptedCommits(CONVERSATION) as [ScriptedCommit];
        const write = { type: "request_stream", requestID: "req-1", clientState: "text" };
        await assertStoreError(
          store,
          commitScripted(store, first, 0, [write as unknown as RecordWrite]),
          "invalid_argument",
        );
        assert.equal(await store.load(CONVERSATION), null);
      });

      it("an unknown request id is not found", async (store) => {
        assert.equal(await store.findRequestStream("req-1"), null);
        const [first] = toScriptedCommits(CONVERSATION) as [ScriptedCommit];
        await commitScripted(store, first, 0, [bind("req-1")]);
        for (const requestID of ["req-2", "REQ-1", "", CONVERSATION, first.inputID]) {
          assert.equal(await store.findRequestStream(requestID), null, requestID);
        }
      });

      it(
        "binding a request id to its own conversation again changes nothing",
        async (store) => {
          const [first, second] = toScriptedCommits(CONVERSATION) as [
            ScriptedCommit,
            ScriptedCommit,
          ];
          clock = 1000;
          await commitScripted(store, first, 0, [bind("req-1")]);
          assert.deepEqual(await store.findRequestStream("req-1"), {
            conversationID: CONVERSATION,
            turnID: null,
            clientState: null,
            createdAt: 1000,
          });
          clock = 2000;
          const again = await commitScripted(store, second, 1, [bind("req-1"), bind("req-1")]);
          assert.ok(again.type === "committed");
          assert.equal(again.commit.committedAt, 2000);
          assert.deepEqual(await store.findRequestStream("req-1"), {
            conversationID: CONVERSATION,
            turnID: null,
            clientState: null,
            createdAt: 1000,
          });
          assert.equal((await store.load(CONVERSATION))?.version, 2);
        },
        ticking,
      );

      it("a request id bound to another conversation fails the whole commit", async (store) => {
        const OTHER = "conv-other";
        const [first] = toScriptedCommits(CONVERSATION) as [ScriptedCommit];
        const [otherFirst, otherSecond] = toScriptedCommits(OTHER) as [
          ScriptedCommit,
          ScriptedCommit,
        ];
        await commitScripted(store, first, 0, [bind("req-1")]);
        const bound = await store.findRequestStream("req-1");
        await commitScripted(store, otherFirst, 0);
        const before = await snapshot(store, OTHER);
        const operation = toOperation(otherSecond);
        const assertBoundElsewhere = async (
          attempt: Promise<unknown>,
          conversationID: string,
        ): Promise<void> => {
          await assert.rejects(attempt, (error) => {
            assert.ok(isStoreError(error, "request_bound_elsewhere"), String(error));
            for (const name of [store.location, "req-1", CONVERSATION, conversationID]) {
              assert.ok(error.message.includes(name), `the message names ${name}`);
            }
            return true;
          });
        };

        // An existing conversation: its state, messages, input and records all roll back.
        await assertBoundElsewhere(
          commitScripted(store, otherSecond, 1, [
            bind("req-2"),
            { type: "client_operation", operation },
            bind("req-1"),
          ]),
          OTHER,
        );
        assert.equal(await snapshot(store, OTHER), before);
        assert.equal(await store.findInputCommit(OTHER, otherSecond.inputID), null);
        assert.equal(await store.getClientOperation(operation.operationID), null);
        assert.equal(await store.findRequestStream("req-2"), null);

        // A new conversation is not created.
        const [fresh] = toScriptedCommits("conv-fresh") as [ScriptedCommit];
        await assertBoundElsewhere(commitScripted(store, fresh, 0, [bind("req-1")]), "conv-fresh");
        assert.equal(await store.load("conv-fresh"), null);

        assert.deepEqual(await store.findRequestStream("req-1"), bound);
        // The refused commit can be made without the binding.
        assert.equal((await commitScripted(store, otherSecond, 1)).type, "committed");
      });

      it("binding a new request id releases the saved state of the conversation's other streams and keeps their rows", async (store) => {
        const OTHER = "conv-other";
        const commits = toScriptedCommits(CONVERSATION) as [
          ScriptedCommit,
          ScriptedCommit,
          ScriptedCommit,
          ScriptedCommit,
        ];
        const [otherFirst] = toScriptedCommits(OTHER) as [ScriptedCommit];
        const saved = (requestID: string, turnID: string, byte: number): RecordWrite => ({
          type: "request_stream",
          requestID,
          turnID,
          clientState: new Uint8Array(4096).fill(byte),
        });
        const stateOf = async (requestID: string) =>
          (await store.findRequestStream(requestID))?.clientState?.[0] ?? null;

        await commitScripted(store, otherFirst, 0, [saved("req-other", "turn-o", 9)]);
        await commitScripted(store, commits[0], 0, [saved("req-1", "turn-1", 1)]);
        const first = await store.findRequestStream("req-1");
        assert.equal(first?.clientState?.length, 4096);

        await commitScripted(store, commits[1], 1, [saved("req-2", "turn-2", 2)]);
        // Only the saved state goes: the binding (conversation, turn, time) stays as it was.
        assert.deepEqual(await store.findRequestStream("req-1"), {
          ...first,
          clientState: null,
        });
        assert.equal(await stateOf("req-2"), 2);
        assert.equal(
          await stateOf("req-other"),
          9,
          "another conversation's stream keeps its state",
        );

        // Binding a request id bound before (to this conversation) releases nothing.
        await commitScripted(store, commits[2], 2, [bind("req-1")]);
        assert.equal(await stateOf("req-2"), 2);

        // A commit that fails releases nothing: its binding rolls back with the rest.
        await assertStoreError(
          store,
          commitScripted(store, commits[3], 3, [saved("req-3", "turn-3", 3), bind("req-other")]),
          "request_bound_elsewhere",
        );
        assert.equal(await store.findRequestStream("req-3"), null);
        assert.equal(await stateOf("req-2"), 2);
        // Nor does one that loses the compare-and-swap.
        const stale = await commitScripted(store, commits[3], 2, [saved("req-3", "turn-3", 3)]);
        assert.equal(stale.type, "conflict");
        assert.equal(await stateOf("req-2"), 2);

        // A new binding with no state of its own still releases the earlier ones.
        await commitScripted(store, commits[3], 3, [bind("req-3")]);
        assert.equal(await stateOf("req-2"), null);
        assert.equal((await store.findRequestStream("req-2"))?.turnID, "turn-2");
        for (const requestID of ["req-1", "req-2", "req-3"]) {
          assert.equal((await store.findRequestStream(requestID))?.conversationID, CONVERSATION);
        }
        assert.equal(await stateOf("req-other"), 9);
        // A released request id is still bound: it cannot move to another conversation.
        const [fresh] = toScriptedCommits("conv-fresh") as [ScriptedCommit];
        await assertStoreError(
          store,
          commitScripted(store, fresh, 0, [bind("req-1")]),
          "request_bound_elsewhere",
        );
      });

      it("a request id must be a non-empty string", async (store) => {
        const [first] = toScriptedCommits(CONVERSATION) as [ScriptedCommit];
        for (const requestID of ["", 7, undefined]) {
          await assertStoreError(
            store,
            commitScripted(store, first, 0, [bind(requestID as string)]),
            "invalid_argument",
          );
        }
        assert.equal(await store.load(CONVERSATION), null);
      });

      describe("bound outside a commit (a stream that takes over the running turn)", () => {
        const state = (byte: number) => new Uint8Array(4096).fill(byte);
        const stateOf = async (store: Store, requestID: string) =>
          (await store.findRequestStream(requestID))?.clientState?.[0] ?? null;
        /** Turn one's commit binds req-1 (state 1); req-other in another conversation (9). */
        const setUp = async (store: Store) => {
          const [first] = toScriptedCommits(CONVERSATION) as [ScriptedCommit];
          const [otherFirst] = toScriptedCommits("conv-other") as [ScriptedCommit];
          await commitScripted(store, otherFirst, 0, [
            {
              type: "request_stream",
              requestID: "req-other",
              turnID: "t-o",
              clientState: state(9),
            },
          ]);
          await commitScripted(store, first, 0, [
            { type: "request_stream", requestID: "req-1", turnID: "turn-1", clientState: state(1) },
          ]);
          return (await store.findRequestStream("req-1")) as RequestStream;
        };
        const resume = (requestID: string, expectedVersion = 1, byte = 2) => ({
          conversationID: CONVERSATION,
          requestID,
          turnID: "turn-1",
          clientState: state(byte),
          expectedVersion,
        });

        it(
          "is found with its turn and state; the conversation's other streams are released, its version unchanged",
          async (store) => {
            const original = await setUp(store);
            clock = 5000;
            const saved = state(2);
            const result = await store.bindRequestStream({
              ...resume("req-2"),
              clientState: saved,
            });
            saved[0] = 7; // the store kept a copy
            const expected = {
              conversationID: CONVERSATION,
              turnID: "turn-1",
              clientState: state(2),
              createdAt: 5000,
            };
            assert.deepEqual(result, { type: "bound", stream: expected });
            assert.deepEqual(await store.findRequestStream("req-2"), expected);
            // The turn's own first stream keeps its binding, not its saved state.
            assert.deepEqual(await store.findRequestStream("req-1"), {
              ...original,
              clientState: null,
            });
            assert.equal(await stateOf(store, "req-other"), 9, "another conversation is untouched");
            assert.equal((await store.load(CONVERSATION))?.version, 1);

            // The next turn's commit (at the same version) releases it in turn.
            const [, second] = toScriptedCommits(CONVERSATION) as [ScriptedCommit, ScriptedCommit];
            const next = await commitScripted(store, second, 1, [
              { type: "request_stream", requestID: "req-3", turnID: "turn-2" },
            ]);
            assert.equal(next.type, "committed");
            assert.equal(await stateOf(store, "req-2"), null);
            assert.equal((await store.findRequestStream("req-2"))?.turnID, "turn-1");
          },
          ticking,
        );

        it("a version other than expected, or no conversation, is a conflict that writes nothing", async (store) => {
          await setUp(store);
          assert.deepEqual(await store.bindRequestStream(resume("req-2", 2)), {
            type: "conflict",
            conversationID: CONVERSATION,
            expectedVersion: 2,
            actualVersion: 1,
          });
          assert.deepEqual(
            await store.bindRequestStream({ ...resume("req-2"), conversationID: "conv-none" }),
            {
              type: "conflict",
              conversationID: "conv-none",
              expectedVersion: 1,
              actualVersion: 0,
            },
          );
          assert.equal(await store.findRequestStream("req-2"), null);
          assert.equal(await stateOf(store, "req-1"), 1, "nothing was released");
          assert.equal(await store.load("conv-none"), null);
        });

        it("a re-bind keeps the first binding and releases nothing; another conversation's request id is refused", async (store) => {
          const original = await setUp(store);
          // req-1 again (its own conversation): the first binding stays, state included.
          assert.deepEqual(await store.bindRequestStream(resume("req-1", 1, 5)), {
            type: "bound",
            stream: original,
          });
          await store.bindRequestStream(resume("req-2"));
          assert.deepEqual(await store.bindRequestStream(resume("req-2", 1, 6)), {
            type: "bound",
            stream: await store.findRequestStream("req-2"),
          });
          assert.equal(await stateOf(store, "req-2"), 2);
          await assertStoreError(
            store,
            store.bindRequestStream(resume("req-other")),
            "request_bound_elsewhere",
          );
          assert.equal(await stateOf(store, "req-2"), 2, "a refused binding releases nothing");
          assert.equal((await store.findRequestStream("req-other"))?.conversationID, "conv-other");
        });

        it("a binding that is not well formed is refused and writes nothing", async (store) => {
          await setUp(store);
          const bad: Record<string, unknown>[] = [
            { requestID: "" },
            { requestID: 7 },
            { conversationID: "" },
            { turnID: "" },
            { turnID: undefined },
            { clientState: "text" },
            { expectedVersion: 0 },
            { expectedVersion: 1.5 },
          ];
          for (const change of bad) {
            const binding = { ...resume("req-2"), ...change } as RequestStreamBinding;
            await assertStoreError(store, store.bindRequestStream(binding), "invalid_argument");
          }
          assert.equal(await store.findRequestStream("req-2"), null);
          assert.equal(await stateOf(store, "req-1"), 1);
        });
      });
    });

    it("a closed store refuses every call", async (store) => {
      await store.close();
      await assertStoreError(store, store.load(CONVERSATION), "closed");
      await assertStoreError(store, listUnfinished(store), "closed");
      await assertStoreError(store, store.findRequestStream("req-1"), "closed");
      await assertStoreError(
        store,
        store.bindRequestStream({
          conversationID: CONVERSATION,
          requestID: "req-1",
          turnID: "turn-1",
          expectedVersion: 1,
        }),
        "closed",
      );
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

function commitScripted(
  store: Store,
  commit: ScriptedCommit,
  version: number,
  records: readonly RecordWrite[] = [],
): Promise<CommitResult> {
  const input: InputCommit = {
    inputID: commit.inputID,
    expectedVersion: version,
    state: commit.state,
    result: commit.command,
    records,
  };
  return store.commitInput(input);
}

/** A model call as a runner would save it for the `call_llm` command of `commit`. */
export function toLLMCall(commit: ScriptedCommit, status: LLMCallStatus = "planned"): LLMCallInput {
  assert.equal(commit.command.type, "call_llm");
  const command = commit.command as CallLLMCommand;
  return {
    callID: command.callID,
    conversationID: commit.state.conversationID,
    turnID: commit.state.turnID,
    model: command.model,
    request: toCanonicalJSON({ model: command.model, ...command.request, stream: true }),
    messagesHash: command.messagesHash,
    messageCount: command.messageCount,
    lastMessageHash: command.lastMessageHash,
    status,
  };
}

/** The client operation for the `call_client` command of `commit`. */
export function toOperation(commit: ScriptedCommit): ClientOperationInput {
  assert.equal(commit.command.type, "call_client");
  const command = commit.command as Extract<ScriptedCommit["command"], { type: "call_client" }>;
  return {
    operationID: command.operationID,
    conversationID: commit.state.conversationID,
    turnID: commit.state.turnID,
    toolCallID: command.toolCall.id,
    request: command.toolCall,
    status: "planned",
  };
}

/** Base64 of `bytes` pseudo-random bytes (seeded): image data as a client sends it. */
export function testImage(bytes: number, seed: number): string {
  const data = Buffer.alloc(bytes);
  let x = seed * 2654435761;
  for (let i = 0; i < bytes; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    data[i] = x >>> 24;
  }
  return data.toString("base64");
}

/** A user message with text and one PNG image, as the Cursor dialect builds it. */
export function imageMessage(text: string, data: string): Message {
  return {
    role: "user",
    content: [
      { type: "text", text },
      { type: "image", data, mimeType: "image/png" },
    ],
    timestamp: 1,
  };
}

/** Request bodies carrying the image as each provider kind's wire format does. */
function wireRequests(image: string): string[] {
  return [
    JSON.stringify({
      model: "m",
      messages: [
        {
          role: "user",
          content: [{ type: "image_url", image_url: { url: `data:image/png;base64,${image}` } }],
        },
      ],
    }),
    JSON.stringify({
      model: "m",
      input: [
        {
          role: "user",
          content: [{ type: "input_image", image_url: `data:image/png;base64,${image}` }],
        },
      ],
    }),
    JSON.stringify({
      messages: [
        {
          role: "user",
          content: [
            { type: "image", source: { type: "base64", media_type: "image/png", data: image } },
          ],
        },
      ],
    }),
    JSON.stringify({
      contents: [{ role: "user", parts: [{ inlineData: { mimeType: "image/png", data: image } }] }],
    }),
    // A later request: the image twice (two user messages carry it) and an answer between.
    JSON.stringify({
      messages: [
        { role: "user", content: [{ type: "image", source: { data: image } }] },
        { role: "assistant", content: "I see a picture." },
        { role: "user", content: [{ type: "image", source: { data: image } }] },
      ],
    }),
  ];
}

function withMessages(state: ConversationState, messages: readonly Message[]): ConversationState {
  return { ...state, messages, hashes: hashHistory(messages) };
}

function cancelState(state: ConversationState, inputID: string): ConversationState {
  const step = transition(
    { committed: state, pending: null },
    { type: "cancel", inputID, at: 0, reason: "user" },
  );
  assert.equal(step.rejected, null);
  return step.state.committed;
}

function assertSameBytes(actual: readonly Message[], expected: readonly Message[]): void {
  assert.equal(actual.length, expected.length);
  actual.forEach((message, i) => {
    assert.deepEqual(
      toMessageBytes(message),
      toMessageBytes(expected[i] as Message),
      `message ${i}`,
    );
  });
}

async function assertStoreError(
  store: Store,
  promise: Promise<unknown>,
  code: StoreErrorCode,
): Promise<void> {
  await assert.rejects(promise, (error) => {
    assert.ok(isStoreError(error, code), `expected StoreError ${code}, got ${String(error)}`);
    assert.ok(error.message.includes(store.location), `message names ${store.location}`);
    return true;
  });
}

/** Everything the store says about a conversation (the test one by default), as one string. */
async function snapshot(store: Store, conversationID = CONVERSATION): Promise<string> {
  const loaded = await store.load(conversationID);
  const unfinished = await listUnfinished(store);
  return toCanonicalJSON({ loaded, unfinished });
}

function toJSON(value: unknown): unknown {
  return JSON.parse(toCanonicalJSON(value));
}

function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

function zeroUsage(): Extract<Message, { role: "assistant" }>["usage"] {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

const arbitraryText = fc.string({ unit: "binary", maxLength: 200 });

const arbitraryMessage: fc.Arbitrary<Message> = fc.oneof(
  fc.record({
    role: fc.constant("user" as const),
    content: arbitraryText,
    timestamp: fc.nat(),
  }),
  fc.record({
    role: fc.constant("assistant" as const),
    content: fc.array(
      fc.oneof(
        fc.record({ type: fc.constant("text" as const), text: arbitraryText }),
        fc.record({
          type: fc.constant("toolCall" as const),
          id: fc.string({ minLength: 1, maxLength: 20 }),
          name: fc.string({ minLength: 1, maxLength: 20 }),
          arguments: fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 3 })),
        }),
      ),
      { maxLength: 3 },
    ),
    api: fc.constant("openai-completions" as const),
    provider: fc.constant("test"),
    model: fc.constant("m"),
    usage: fc.constant(zeroUsage()),
    stopReason: fc.constant("stop" as const),
    timestamp: fc.nat(),
  }),
) as fc.Arbitrary<Message>;
