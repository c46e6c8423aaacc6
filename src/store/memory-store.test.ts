import { createMemoryStore } from "./memory-store.ts";
import { runStoreContract } from "./testing/contract.ts";
import { runDashboardContract } from "./testing/dashboard-contract.ts";

runStoreContract("in-memory", async (options) => ({
  store: createMemoryStore(options),
  async cleanup() {},
}));

runDashboardContract("in-memory", async (options) => ({
  store: createMemoryStore(options),
  async cleanup() {},
}));
