/**
 * `cursor-byok agent --team`'s loopback relay (docs/team.md "Clients"), run as a real process
 * with a stand-in cursor-agent (a Node script) and a team server faked on 127.0.0.1 that records
 * what reaches it:
 * - cursor-agent's environment holds neither the team token nor the admin token (its shell tool
 *   runs the model's commands there);
 * - a request naming the relay by another host name (DNS rebinding) is refused and not relayed;
 * - only the procedures a cursor-byok server answers are relayed; telemetry is answered locally;
 * - the relayed call carries the team token and none of the client's Cursor identity headers.
 */
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { test } from "node:test";
import { createTempHome, runCliProcess } from "./testing.ts";

const TEAM_TOKEN = "cbk_secret_team_token_for_the_relay_test";
const ADMIN_TOKEN = "admin-secret-token-for-the-relay-test-0123";

test("agent --team: cursor-agent gets no tokens, the relay answers loopback names and served procedures only, and withholds identity headers", async () => {
  const seen: { path: string; headers: IncomingHttpHeaders }[] = [];
  const team = createServer((request, response) => {
    seen.push({ path: request.url ?? "", headers: request.headers });
    request.resume();
    response.writeHead(200, { "content-type": "application/json" });
    response.end("{}");
  });
  await new Promise<void>((resolve) => team.listen(0, "127.0.0.1", resolve));
  const teamUrl = `http://127.0.0.1:${(team.address() as AddressInfo).port}`;
  const home = createTempHome();
  const bin = path.join(home.dir, "bin");
  const record = path.join(home.dir, "record.json");
  mkdirSync(bin, { recursive: true });
  writeFileSync(
    path.join(bin, "cursor-agent"),
    `#!${process.execPath}
const http = require("node:http");
const endpoint = new URL(process.argv[process.argv.indexOf("--endpoint") + 1]);
const call = (path, headers) => new Promise((resolve, reject) => {
  const outgoing = http.request({ host: endpoint.hostname, port: endpoint.port, path, method: "POST",
    headers: { "content-type": "application/json", ...headers } }, (answer) => {
    answer.resume();
    answer.on("end", () => resolve(answer.statusCode));
  });
  outgoing.on("error", reject);
  outgoing.end("{}");
});
(async () => {
  const served = "/aiserver.v1.AiService/GetServerConfig";
  const result = {
    env: {
      team: process.env.CURSOR_BYOK_TEAM_TOKEN ?? null,
      admin: process.env.CURSOR_BYOK_TOKEN ?? null,
      kept: process.env.KEPT_VARIABLE ?? null,
    },
    rebound: await call(served, { host: "evil.example:" + endpoint.port }),
    other: await call("/some.other.Service/AnyProcedure", {}),
    telemetry: await call("/v1/traces", {}),
    served: await call(served, {
      authorization: "Bearer cursor-sign-in",
      cookie: "WorkosCursorSessionToken=x",
      "x-request-id": "r-1",
      "x-session-id": "6f1c3c1e-5f0b-5d7e-9a8e-000000000001",
      "x-cursor-checksum": "checksum-with-machine-id",
      "x-client-key": "client-key",
      "x-cursor-client-version": "1.0.0",
      traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    }),
  };
  require("node:fs").writeFileSync(${JSON.stringify(record)}, JSON.stringify(result));
})();
`,
  );
  chmodSync(path.join(bin, "cursor-agent"), 0o755);
  try {
    const run = await runCliProcess(["agent", "--team", teamUrl], {
      env: {
        ...home.env,
        PATH: `${bin}:${home.env.PATH}`,
        CURSOR_BYOK_TEAM_TOKEN: TEAM_TOKEN,
        CURSOR_BYOK_TOKEN: ADMIN_TOKEN,
        KEPT_VARIABLE: "kept",
      },
    });
    assert.equal(run.code, 0, run.stderr);
    const result = JSON.parse(readFileSync(record, "utf8"));
    assert.deepEqual(result.env, { team: null, admin: null, kept: "kept" });
    assert.equal(result.rebound, 421);
    assert.equal(result.other, 404);
    assert.equal(result.telemetry, 200);
    assert.equal(result.served, 200);
    // Only the served call reached the team server, with the team token in place of the
    // client's credentials and without the client's Cursor account and machine identifiers.
    assert.deepEqual(
      seen.map((entry) => entry.path),
      ["/aiserver.v1.AiService/GetServerConfig"],
    );
    const headers = seen[0]?.headers ?? {};
    assert.equal(headers.authorization, `Bearer ${TEAM_TOKEN}`);
    assert.equal(headers["x-request-id"], "r-1");
    assert.equal(headers["x-cursor-client-version"], "1.0.0");
    for (const withheld of [
      "cookie",
      "x-session-id",
      "x-cursor-checksum",
      "x-client-key",
      "traceparent",
    ]) {
      assert.equal(headers[withheld], undefined, withheld);
    }
  } finally {
    team.close();
    home.cleanup();
  }
});
