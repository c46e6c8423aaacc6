/**
 * Routing between instances (cluster.ts) on a real PostgreSQL directory: the forwarding marker
 * names the instance a request is meant for, so a client cannot forge it to skip routing, and an
 * instance whose advertised address reaches another instance cannot make two instances serve one
 * stream. Skipped, with the reason, without PostgreSQL (store/testing/postgres-server.ts).
 */
import assert from "node:assert/strict";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { type ClusterDirectory, openClusterDirectory, openPostgresStore } from "../store/index.ts";
import { getTestPostgres } from "../store/testing/postgres-server.ts";
import { createClusterRouting, FORWARDED_HEADER } from "./cluster.ts";
import { createRecordingLog } from "./log.ts";

const postgres = await getTestPostgres();
const RUN_SSE = "/agent.v1.AgentService/RunSSE";

interface Instance {
  readonly name: string;
  readonly url: string;
  readonly directory: ClusterDirectory;
  /** The request ids this instance served itself. */
  readonly served: string[];
  readonly lines: ReturnType<typeof createRecordingLog>["lines"];
  readonly server: Server;
}

async function startInstance(name: string, databaseUrl: string): Promise<Instance> {
  const directory = await openClusterDirectory({ url: databaseUrl, instanceID: `${name}-id` });
  const { log, lines } = createRecordingLog();
  const routing = createClusterRouting(directory, log);
  const served: string[] = [];
  const server = createServer((request, response) =>
    routing.serve(request, response, (local, answer) => {
      local.resume();
      served.push(String(local.headers["x-request-id"]));
      answer.writeHead(200, { "content-type": "text/plain" });
      answer.end(`served by ${name}`);
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { name, url, directory, served, lines, server };
}

function post(
  url: string,
  requestID: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(new URL(RUN_SSE, url), {
      method: "POST",
      headers: { "x-request-id": requestID, "content-type": "application/json", ...headers },
    });
    outgoing.on("response", (answer) => {
      let body = "";
      answer.setEncoding("utf8");
      answer.on("data", (chunk: string) => (body += chunk));
      answer.on("end", () => resolve({ status: answer.statusCode ?? 0, body }));
    });
    outgoing.on("error", reject);
    outgoing.end("{}");
  });
}

if (postgres.type === "unavailable") {
  test(`cluster routing: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  describe("cluster routing: the forwarding marker names its target", { concurrency: 1 }, () => {
    let drop: () => Promise<void>;
    let a: Instance;
    let b: Instance;

    before(async () => {
      const schema = await postgres.server.createSchema();
      drop = schema.drop;
      await (await openPostgresStore({ url: schema.url })).close();
      a = await startInstance("a", schema.url);
      b = await startInstance("b", schema.url);
      await b.directory.advertise(b.url);
    });

    after(async () => {
      for (const instance of [a, b]) {
        instance.server.closeAllConnections();
        await new Promise((resolve) => instance.server.close(resolve));
        await instance.directory.close();
      }
      await drop();
    });

    test("a stream is served by its owner wherever its requests land", async () => {
      await a.directory.advertise(a.url);
      assert.deepEqual(await post(b.url, "r-owned-by-b"), { status: 200, body: "served by b" });
      assert.deepEqual(await post(a.url, "r-owned-by-b"), { status: 200, body: "served by b" });
      assert.deepEqual(a.served, []);
    });

    test("a marker forged by a client is not honoured", async () => {
      for (const marker of ["1", "b-id", "anything"]) {
        const answer = await post(a.url, "r-owned-by-b", { [FORWARDED_HEADER]: marker });
        assert.equal(answer.status, 421, marker);
        assert.match(answer.body, /forwarded to another server instance/);
      }
      assert.deepEqual(a.served, []);
      assert.ok(a.lines.some((line) => line.message.includes("refused a request marked")));
    });

    test("an advertised address that reaches another instance never makes two instances serve one stream", async () => {
      // a advertises b's address (two instances left on one default, say).
      await a.directory.advertise(b.url);
      assert.deepEqual(await post(a.url, "r-owned-by-a"), { status: 200, body: "served by a" });
      // b forwards to "a" and reaches itself: refused, not served, and a is not declared gone.
      const answer = await post(b.url, "r-owned-by-a");
      assert.equal(answer.status, 503);
      assert.match(answer.body, /"code":"unavailable"/);
      assert.ok(!b.served.includes("r-owned-by-a"));
      assert.ok(
        b.lines.some(
          (line) => line.level === "error" && line.message.includes("set server.advertiseUrl"),
        ),
      );
      // a still owns its stream: b's claim finds a, a's claim finds itself.
      assert.deepEqual(await b.directory.claim("r-owned-by-a"), {
        type: "elsewhere",
        instanceID: "a-id",
        url: b.url,
      });
      assert.deepEqual(await a.directory.claim("r-owned-by-a"), { type: "mine" });
    });
  });
}
