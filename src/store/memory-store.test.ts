import { createMemoryStore } from "./memory-store.ts";
import { runStoreContract } from "./testing/contract.ts";

runStoreContract("in-memory", async (options) => ({
  store: createMemoryStore(options),
  async cleanup() {},
}));
