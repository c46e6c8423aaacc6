/** `/healthz` and `/readyz` (health.ts) on a real server: probes need no token and no host name. */
import assert from "node:assert/strict";
import { request } from "node:http";
import { test } from "node:test";
import { createLLM } from "../llm/index.ts";
import { createRunner } from "../runner/runner.ts";
import { createMemoryStore } from "../store/index.ts";
import { silentLog } from "./log.ts";
import { DEFAULT_SERVER_OPTIONS, startServer } from "./server.ts";

/** GET with a Host header a browser would never send to us (a load balancer's probe). */
function probe(url: string, path: string): Promise<{ status: number; body: unknown }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      { host: "127.0.0.1", port, path, headers: { host: "10.0.0.7:8765" } },
      (response) => {
        let text = "";
        response.setEncoding("utf8").on("data", (chunk: string) => {
          text += chunk;
        });
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }),
        );
      },
    );
    outgoing.on("error", reject);
    outgoing.end();
  });
}

test("healthz is 200; readyz is 200 while the store answers and 503 once it does not", async () => {
  const store = createMemoryStore();
  const llm = createLLM({ models: [] });
  const server = await startServer(
    { store, llm, runner: createRunner({ store, llm }), log: silentLog },
    { ...DEFAULT_SERVER_OPTIONS, port: 0, accessToken: "a-long-random-token-for-tests-0123456789" },
  );
  try {
    assert.deepEqual(await probe(server.url, "/healthz"), { status: 200, body: { status: "ok" } });
    assert.deepEqual(await probe(server.url, "/readyz"), {
      status: 200,
      body: { status: "ready" },
    });
    await store.close();
    assert.deepEqual(await probe(server.url, "/readyz"), {
      status: 503,
      body: { status: "store failing" },
    });
    assert.equal((await probe(server.url, "/healthz")).status, 200);
  } finally {
    await server.close();
  }
});
