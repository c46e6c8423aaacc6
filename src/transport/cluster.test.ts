/**
 * Routing between instances (cluster.ts) on a real PostgreSQL directory: a stream's requests are
 * served by its owner wherever they land, over HTTP/1.1 and HTTP/2; the version-2 forwarding
 * marker names the instance a request is meant for, so a client cannot forge it to skip routing
 * and an instance whose advertised address reaches another cannot make two instances serve one
 * stream; an earlier version's marker is routed like an unmarked request, so instances of this
 * version and of the earlier ones (testing/cluster-routing-v0.ts, -v1.ts, the real code of those
 * versions) serve each other's streams during a rolling upgrade; an instance that refuses
 * connections at its advertised address while alive keeps its streams. Skipped, with the
 * reason, without PostgreSQL (store/testing/postgres-server.ts).
 */
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { connect as http2Connect } from "node:http2";
import { createServer as createNetServer } from "node:net";
import { after, before, describe, test } from "node:test";
import { type ClusterDirectory, openClusterDirectory, openPostgresStore } from "../store/index.ts";
import { getTestPostgres } from "../store/testing/postgres-server.ts";
import { createClusterRouting, FORWARDED_TO_HEADER, LEGACY_FORWARDED_HEADER } from "./cluster.ts";
import { type Listener, listen } from "./http/listen.ts";
import { createRecordingLog } from "./log.ts";
import * as routingV0 from "./testing/cluster-routing-v0.ts";
import * as routingV1 from "./testing/cluster-routing-v1.ts";

const postgres = await getTestPostgres();
/** A test fails after this long instead of hanging a run (a stream held open, say). */
const TEST_LIMIT_MS = 120_000;
const RUN_SSE = "/agent.v1.AgentService/RunSSE";
const APPEND = "/aiserver.v1.BidiService/BidiAppend";
/**
 * Short, so a verdict on an unreachable owner comes within a test's patience, yet long enough
 * that a heartbeat (every lease/3) is not missed on a loaded machine.
 */
const LEASE_MS = 3_000;

type Version = "v0" | "v1" | "current";

interface Instance {
  readonly name: string;
  readonly url: string;
  readonly directory: ClusterDirectory;
  /** The request ids this instance served itself. */
  readonly served: string[];
  readonly lines: ReturnType<typeof createRecordingLog>["lines"];
  readonly listener: Listener;
}

async function startInstance(
  name: string,
  databaseUrl: string,
  version: Version = "current",
): Promise<Instance> {
  const directory = await openClusterDirectory({
    url: databaseUrl,
    instanceID: `${name}-id`,
    leaseMs: LEASE_MS,
  });
  const { log, lines } = createRecordingLog();
  // Earlier versions expired an unreachable owner at once; every owner answers in these tests.
  const earlier = { ...directory, markGone: async () => {} };
  const routing =
    version === "v0"
      ? routingV0.createClusterRouting(earlier, log)
      : version === "v1"
        ? routingV1.createClusterRouting(earlier, log)
        : createClusterRouting(directory, log);
  const served: string[] = [];
  const listener = await listen(
    (request, response) =>
      (routing.serve as ReturnType<typeof createClusterRouting>["serve"])(
        request,
        response,
        (local, answer) => {
          local.resume();
          served.push(String(local.headers["x-request-id"]));
          (answer as import("node:http").ServerResponse).writeHead(200, {
            "content-type": "text/plain",
          });
          answer.end(`served by ${name} over HTTP/${local.httpVersionMajor}`);
        },
      ),
    "127.0.0.1",
    0,
  );
  const url = `http://127.0.0.1:${listener.address.port}`;
  return { name, url, directory, served, lines, listener };
}

interface Answer {
  readonly status: number;
  readonly body: string;
}

function post(
  url: string,
  requestID: string,
  headers: Record<string, string> = {},
  path = RUN_SSE,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(new URL(path, url), {
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

/** The same over cleartext HTTP/2 (prior knowledge), as a client speaking h2c sends it. */
function postH2(url: string, requestID: string, path = APPEND): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const session = http2Connect(url);
    session.on("error", reject);
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "x-request-id": requestID,
      "content-type": "application/proto",
    });
    let status = 0;
    let body = "";
    stream.on("response", (headers) => {
      status = Number(headers[":status"]);
    });
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => (body += chunk));
    stream.on("end", () => {
      session.close();
      resolve({ status, body });
    });
    stream.on("error", reject);
    stream.end(Buffer.from([0, 0, 0, 0, 0]));
  });
}

async function closeInstance(instance: Instance): Promise<void> {
  instance.listener.destroy();
  await instance.listener.close();
  await instance.directory.close();
}

/** A loopback port nothing listens on: connections to it are refused. */
async function refusingUrl(): Promise<string> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

if (postgres.type === "unavailable") {
  test(`cluster routing: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  describe("cluster routing", { concurrency: 1 }, () => {
    let url: string;
    let drop: () => Promise<void>;
    let a: Instance;
    let b: Instance;
    const others: Instance[] = [];

    before(async () => {
      const schema = await postgres.server.createSchema();
      url = schema.url;
      drop = schema.drop;
      await (await openPostgresStore({ url: schema.url })).close();
      a = await startInstance("a", schema.url);
      b = await startInstance("b", schema.url);
      await b.directory.advertise(b.url);
    });

    after(async () => {
      for (const instance of [a, b, ...others]) await closeInstance(instance);
      await drop();
    });

    test("a stream is served by its owner wherever its requests land", {
      timeout: TEST_LIMIT_MS,
    }, async () => {
      await a.directory.advertise(a.url);
      assert.deepEqual(await post(b.url, "r-owned-by-b"), {
        status: 200,
        body: "served by b over HTTP/1",
      });
      assert.deepEqual(await post(a.url, "r-owned-by-b"), {
        status: 200,
        body: "served by b over HTTP/1",
      });
      assert.deepEqual(a.served, []);
    });

    test("over HTTP/2, an append reaching a non-owner is delivered to the owner", {
      timeout: TEST_LIMIT_MS,
    }, async () => {
      assert.deepEqual(await postH2(b.url, "r-h2", RUN_SSE), {
        status: 200,
        body: "served by b over HTTP/2",
      });
      // The append lands on a, which relays it to b (over HTTP/1.1 between instances).
      assert.deepEqual(await postH2(a.url, "r-h2", APPEND), {
        status: 200,
        body: "served by b over HTTP/1",
      });
      assert.deepEqual(
        b.served.filter((id) => id === "r-h2"),
        ["r-h2", "r-h2"],
      );
      assert.ok(!a.served.includes("r-h2"));
    });

    test("a version-2 marker forged by a client is not honoured", {
      timeout: TEST_LIMIT_MS,
    }, async () => {
      for (const marker of ["1", "b-id", "anything"]) {
        const answer = await post(a.url, "r-owned-by-b", { [FORWARDED_TO_HEADER]: marker });
        assert.equal(answer.status, 421, marker);
        assert.match(answer.body, /forwarded to another server instance/);
      }
      assert.deepEqual(a.served, []);
      assert.ok(a.lines.some((line) => line.message.includes("refused a request marked")));
    });

    test("an earlier version's marker grants nothing: routed like an unmarked request", {
      timeout: TEST_LIMIT_MS,
    }, async () => {
      // Whatever it names — the sender (as v0 sent), the target (as v1 sent), anything — the
      // stream is served by its owner only.
      for (const marker of ["a-id", "b-id", "anything"]) {
        assert.deepEqual(
          await post(a.url, "r-owned-by-b", { [LEGACY_FORWARDED_HEADER]: marker }),
          { status: 200, body: "served by b over HTTP/1" },
          marker,
        );
      }
      assert.deepEqual(a.served, []);
    });

    for (const version of ["v0", "v1"] as const) {
      test(`rolling upgrade: instances of ${version} and of this version serve each other's streams`, {
        timeout: TEST_LIMIT_MS,
      }, async () => {
        const old = await startInstance(`old-${version}`, url, version);
        others.push(old);
        await old.directory.advertise(old.url);
        // Earlier version → this version: the old instance forwards with its marker.
        const toNew = `r-${version}-owned-by-b`;
        assert.equal((await post(b.url, toNew)).body, "served by b over HTTP/1");
        assert.deepEqual(await post(old.url, toNew), {
          status: 200,
          body: "served by b over HTTP/1",
        });
        // This version → the earlier one: a forwards to the old owner.
        const toOld = `r-${version}-owned-by-old`;
        assert.equal((await post(old.url, toOld)).body, `served by old-${version} over HTTP/1`);
        assert.deepEqual(await post(a.url, toOld), {
          status: 200,
          body: `served by old-${version} over HTTP/1`,
        });
        assert.ok(!old.served.includes(toNew));
        assert.ok(!b.served.includes(toOld) && !a.served.includes(toOld));
      });
    }

    test("an advertised address that reaches another instance never makes two instances serve one stream", {
      timeout: TEST_LIMIT_MS,
    }, async () => {
      // a advertises b's address (two instances left on one default, say).
      await a.directory.advertise(b.url);
      assert.equal((await post(a.url, "r-owned-by-a")).body, "served by a over HTTP/1");
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

    test("an instance alive behind a wrong advertised port keeps its stream; the others answer 503", {
      timeout: TEST_LIMIT_MS,
    }, async () => {
      // a's heartbeat goes on, but its advertised port refuses connections.
      await a.directory.advertise(await refusingUrl());
      assert.equal((await post(a.url, "r-wrong-port")).body, "served by a over HTTP/1");
      for (const send of [() => post(b.url, "r-wrong-port"), () => postH2(b.url, "r-wrong-port")]) {
        const answer = await send();
        assert.equal(answer.status, 503);
        assert.match(answer.body, /"code":"unavailable"/);
      }
      assert.ok(!b.served.includes("r-wrong-port"));
      assert.ok(
        b.lines.some(
          (line) =>
            line.level === "error" &&
            line.message.includes("refuses connections") &&
            line.message.includes("server.advertiseUrl"),
        ),
      );
      assert.deepEqual(await a.directory.claim("r-wrong-port"), { type: "mine" });
      assert.equal((await post(a.url, "r-wrong-port")).body, "served by a over HTTP/1");
    });

    test("an owner that refuses connections and stops its heartbeat is taken over after its lease", {
      timeout: TEST_LIMIT_MS,
    }, async () => {
      const gone = await startInstance("gone", url);
      await gone.directory.advertise(gone.url);
      assert.equal((await post(gone.url, "r-crashed")).body, "served by gone over HTTP/1");
      // A crash: the port closes and the heartbeat stops (no leave).
      gone.listener.destroy();
      await gone.listener.close();
      await gone.directory.close();
      const answer = await post(b.url, "r-crashed");
      assert.deepEqual(answer, { status: 200, body: "served by b over HTTP/1" });
      assert.deepEqual(await b.directory.claim("r-crashed"), { type: "mine" });
    });
  });
}
