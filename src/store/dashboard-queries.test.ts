/**
 * The dashboard's reads cost a fixed number of table reads (each one statement on SQLite, two for
 * `listSummaries` on a first page: the page and the count), whatever the number of
 * conversations. Counted on the shared store logic over a counting backend, with 3 and with 300
 * conversations.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { T0, text } from "../loop/testing.ts";
import { createStore } from "./create-store.ts";
import { createMemoryBackend } from "./memory-store.ts";
import type { Backend, Tables } from "./tables.ts";
import { answer, driveTurn } from "./testing/dashboard-contract.ts";
import type { Store } from "./types.ts";

function countingStore(): { store: Store; calls: string[] } {
  const backend = createMemoryBackend();
  const calls: string[] = [];
  const counted = (tables: Tables): Tables =>
    new Proxy(tables, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        return typeof value === "function"
          ? (...args: unknown[]) => {
              calls.push(String(name));
              return value.apply(target, args);
            }
          : value;
      },
    });
  const wrapped: Backend = {
    location: backend.location,
    write: (work) => backend.write(work),
    read: (work) => backend.read((tables) => work(counted(tables))),
    close: () => backend.close(),
  };
  return { store: createStore(wrapped), calls };
}

async function readsOf(conversations: number): Promise<Record<string, string[]>> {
  const { store, calls } = countingStore();
  for (let i = 0; i < conversations; i++) {
    await driveTurn(store, `c${i}`, `task ${i}`, [
      answer([text("ok")], { input: 1, output: 1 }, T0 + i),
    ]);
  }
  const reads: Record<string, string[]> = {};
  const measure = async (name: string, read: () => Promise<unknown>) => {
    calls.length = 0;
    await read();
    reads[name] = [...calls];
  };
  await measure("list", () => store.listConversations({ limit: 2 }));
  const { nextCursor } = await store.listConversations({ limit: 2 });
  await measure("next page", () => store.listConversations({ limit: 2, cursor: nextCursor ?? "" }));
  await measure("search", () => store.listConversations({ search: "task 1" }));
  await measure("detail", () => store.readConversationDetail("c1"));
  await measure("messages", () => store.listMessages("c1"));
  await measure("usage", () => store.listUsage());
  return reads;
}

test("every dashboard read is the same few table reads with 3 or 300 conversations", async () => {
  const small = await readsOf(3);
  assert.deepEqual(small, {
    list: ["listSummaries"],
    "next page": ["listSummaries"],
    search: ["listSummaries"],
    detail: [
      "readSummary",
      "listCallUsageOf",
      "listCallsOf",
      "readConversation",
      "listOperationsOf",
    ],
    messages: ["readMessagesFrom"],
    usage: ["listDailyUsage"],
  });
  assert.deepEqual(await readsOf(300), small);
});
