import assert from "node:assert/strict";
import net from "node:net";
import { test } from "node:test";
import { toIdeProxyStartProblem } from "./ide-proxy.ts";

/** The error a real listen on a taken port gives. */
async function listenOnTakenPort(): Promise<{ error: unknown; port: number }> {
  const first = net.createServer();
  await new Promise<void>((resolve) => first.listen(0, "127.0.0.1", resolve));
  const port = (first.address() as net.AddressInfo).port;
  const second = net.createServer();
  const error = await new Promise<unknown>((resolve) => {
    second.once("error", resolve);
    second.listen(port, "127.0.0.1");
  });
  await new Promise<void>((resolve) => first.close(() => resolve()));
  return { error, port };
}

test("a taken proxy port names the port, where Cursor points, and what to do", async () => {
  const { error, port } = await listenOnTakenPort();
  const problem = toIdeProxyStartProblem(error, `http://127.0.0.1:${port}`);
  assert.equal(
    problem,
    `the IDE proxy's port ${port} is in use (Cursor's settings point at http://127.0.0.1:${port}). ` +
      "Stop what uses it, or run `cursor-byok ide undo` and set up again with --proxy-port.",
  );
});

test("any other failure is told in the system's words", () => {
  const problem = toIdeProxyStartProblem(new Error("no CA"), "http://127.0.0.1:8766");
  assert.equal(problem, "could not start the IDE proxy: no CA");
});
