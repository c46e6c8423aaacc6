import assert from "node:assert/strict";
import { createServer, request as httpRequest, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { createStreamResponses, kHoldResponse } from "./stream-responses.ts";

/** A server whose requests are all tracked and answered by the test; `open()` starts one. */
async function serveTracked() {
  const responses = createStreamResponses();
  const arrived: { response: ServerResponse; hold: () => Promise<void> }[] = [];
  let onArrival: (() => void) | null = null;
  const server = createServer((request, response) => {
    responses.track(response);
    responses.viaConnect(request, response);
    const hold = responses.contextValues(request).get(kHoldResponse);
    assert.ok(hold !== undefined);
    response.writeHead(200);
    response.flushHeaders();
    arrived.push({ response, hold });
    onArrival?.();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    responses,
    /** Starts a request; resolves with its server side once it arrived. */
    async open() {
      const count = arrived.length;
      const arrivedNow = new Promise<void>((resolve) => {
        onArrival = resolve;
      });
      const client = httpRequest({ port, host: "127.0.0.1", method: "POST", agent: false });
      client.on("error", () => {});
      client.on("response", (response) => response.resume().on("error", () => {}));
      client.end();
      await arrivedNow;
      return arrived[count] as (typeof arrived)[number];
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

test("settled waits for every response that is neither held nor closed", async () => {
  const served = await serveTracked();
  try {
    const ending = await served.open();
    const held = await served.open();
    assert.equal(served.responses.size, 2);
    let settled = false;
    const settling = served.responses.settled(60_000).then(() => {
      settled = true;
    });
    const gone = held.hold();
    assert.equal(served.responses.size, 1, "a held response is not waited for");
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, false);
    ending.response.end();
    await settling;
    assert.equal(served.responses.size, 0);
    // The held one's hook resolves once its connection is gone.
    let closed = false;
    void gone.then(() => {
      closed = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(closed, false);
    held.response.destroy();
    await gone;
  } finally {
    await served.close();
  }
});

test("settled gives up after its limit (a client that does not read its end)", async () => {
  const served = await serveTracked();
  try {
    await served.open();
    await served.responses.settled(5);
    assert.equal(served.responses.size, 1);
  } finally {
    await served.close();
  }
});

test("without tracked responses settled resolves at once; untracked requests get no hook", () => {
  const responses = createStreamResponses();
  assert.equal(responses.size, 0);
  const request = {} as Parameters<typeof responses.contextValues>[0];
  assert.equal(responses.contextValues(request).get(kHoldResponse), undefined);
  return responses.settled(60_000);
});
