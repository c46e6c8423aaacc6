/**
 * Cursor's own clients on a team server (docs/team.md "Clients"): they send their Cursor sign-in
 * token as the bearer token, so the team user's token is put in by this machine's relay. A real
 * team server process (PostgreSQL, users on) and a real `serve` in team-client mode running the
 * IDE proxy; the "IDE" is the Cursor test client going through that proxy with a fake Cursor
 * sign-in token, and Cursor's real host is a TLS stand-in on 127.0.0.1 that records what reaches
 * it. `cursor-byok agent --team` runs a stand-in `cursor-agent` through its loopback relay.
 * Skipped, with the reason, without PostgreSQL (store/testing/postgres-server.ts).
 */
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createSecureServer, type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import { createServer as createNetServer, connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { createServer as createTlsServer } from "node:tls";
import pg from "pg";
import {
  createCertificateAuthority,
  createLeafIssuer,
  writeCertificateAuthority,
} from "../ide/ca.ts";
import { JOURNAL_VERSION, toIdeDirectory, writeJournal } from "../ide/journal.ts";
import { toChatCompletionSse } from "../llm/testing/chat-completions-sse.ts";
import { type FakeProvider, startFakeProvider } from "../llm/testing/fake-provider.ts";
import { openPostgresStore, openPostgresUsers } from "../store/index.ts";
import { getTestPostgres } from "../store/testing/postgres-server.ts";
import { Http2Config } from "../transport/cursor/gen/aiserver/v1/server_config_pb.js";
import { createProxyAgent } from "../transport/proxy/connect-through.ts";
import { createCursorClient } from "../transport/testing/index.ts";
import { createTempHome, runCliProcess, type ServeProcess, startServeProcess } from "./testing.ts";

const postgres = await getTestPostgres();
const CURSOR_SIGN_IN = "Bearer cursor-sign-in-of-the-user";
const MODEL = "team-model";

async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface SeenUpstream {
  readonly path: string;
  readonly headers: Record<string, string | string[] | undefined>;
}

if (postgres.type === "unavailable") {
  test(`team clients: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  describe("Cursor's clients on a team server, through this machine's relay", {
    concurrency: 1,
  }, () => {
    let url: string;
    let drop: () => Promise<void>;
    let provider: FakeProvider;
    let team: { url: string; close(): Promise<unknown> };
    const teamHome = createTempHome();
    let token: string;
    const home = createTempHome();
    const workspace = mkdtempSync(path.join(tmpdir(), "cursor-byok-team-ws-"));
    const seen: SeenUpstream[] = [];
    let upstream: ReturnType<typeof createSecureServer>;
    let upstreamEnv: Record<string, string>;
    /** The team server behind TLS, as behind the team's reverse proxy: `https://localhost:…`. */
    let teamHttps: string;
    let tlsFront: ReturnType<typeof createTlsServer>;
    let teamCaFile: string;
    let ideCa: Awaited<ReturnType<typeof createCertificateAuthority>>;
    let proxyUrl: string;
    const serves: ServeProcess[] = [];

    const ideClient = () =>
      createCursorClient({
        baseUrl: "https://api2.cursor.sh",
        httpVersion: "1.1",
        workspace,
        agent: createProxyAgent({ proxyUrl, ca: [ideCa.certPem] }),
        timeoutMs: 20_000,
        headers: { authorization: CURSOR_SIGN_IN },
      });

    const startClient = async (env: Record<string, string>) => {
      const serve = await startServeProcess([], { env: { ...home.env, ...upstreamEnv, ...env } });
      serves.push(serve);
      return serve;
    };

    before(async () => {
      const schema = await postgres.server.createSchema();
      url = schema.url;
      drop = schema.drop;
      await (await openPostgresStore({ url })).close();
      const users = openPostgresUsers({ url });
      token = (await users.add("ann")).token;
      await users.close();
      provider = await startFakeProvider();
      provider.answer(() => ({
        type: "sse",
        body: toChatCompletionSse({ text: "hello from the team server" }),
      }));
      // The team server: `serve` with users on, as README "Running it for a team" sets it up.
      mkdirSync(path.dirname(teamHome.configPath), { recursive: true });
      writeFileSync(
        teamHome.configPath,
        [
          "server:",
          "  accessTokenEnv: ADMIN_TOKEN",
          "  users: true",
          "  http2: true # for cursor-agent; never offered to the IDE through its proxy",
          "data:",
          "  postgres:",
          `    url: ${url}`,
          "models:",
          `  - name: ${MODEL}`,
          "    api: openai-compatible",
          "    model: scripted-model",
          `    baseUrl: ${provider.url}`,
          "    apiKeyEnv: PROVIDER_KEY",
          "",
        ].join("\n"),
      );
      const teamServe = await startServeProcess(["--port", "0"], {
        env: { ...teamHome.env, ADMIN_TOKEN: "a".repeat(40), PROVIDER_KEY: "sk-test-not-real" },
      });
      team = { url: teamServe.url, close: () => teamServe.stop() };

      // Cursor's real host: a TLS server signed by a "public" test root the proxy trusts.
      const publicCa = await createCertificateAuthority({
        permittedDomains: [],
        commonName: "test public root",
      });
      const leaf = await createLeafIssuer(publicCa, { permittedDomains: [] }).certificateFor(
        "api2.cursor.sh",
      );
      upstream = createSecureServer({ allowHTTP1: true, key: leaf.keyPem, cert: leaf.certPem });
      upstream.on("request", (request: Http2ServerRequest, response: Http2ServerResponse) => {
        request.resume();
        seen.push({ path: request.url, headers: { ...request.headers } });
        response.writeHead(200, { "content-type": "application/json", "x-upstream": "yes" });
        response.end("{}");
      });
      await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
      const upstreamPort = (upstream.address() as { port: number }).port;
      const publicCaFile = path.join(home.dir, "public-ca.pem");
      writeFileSync(publicCaFile, publicCa.certPem);
      upstreamEnv = {
        CURSOR_BYOK_TEST_UPSTREAM: JSON.stringify({ "*": `127.0.0.1:${upstreamPort}` }),
        CURSOR_BYOK_TEST_UPSTREAM_CA: publicCaFile,
      };

      // TLS in front of the team server, for a certificate of a team CA the clients are given
      // by NODE_EXTRA_CA_CERTS; h2 or HTTP/1.1 by ALPN, passed on as bytes (the server speaks
      // both on one port).
      const teamCa = await createCertificateAuthority({
        permittedDomains: [],
        commonName: "team CA",
      });
      const teamLeaf = await createLeafIssuer(teamCa, { permittedDomains: [] }).certificateFor(
        "localhost",
      );
      teamCaFile = path.join(home.dir, "team-ca.pem");
      writeFileSync(teamCaFile, teamCa.certPem);
      const teamPort = Number(new URL(team.url).port);
      tlsFront = createTlsServer(
        { key: teamLeaf.keyPem, cert: teamLeaf.certPem, ALPNProtocols: ["h2", "http/1.1"] },
        (socket) => {
          const backend = netConnect(teamPort, "127.0.0.1");
          socket.pipe(backend).pipe(socket);
          socket.on("error", () => backend.destroy());
          backend.on("error", () => socket.destroy());
        },
      );
      await new Promise<void>((resolve) => tlsFront.listen(0, "127.0.0.1", resolve));
      teamHttps = `https://localhost:${(tlsFront.address() as { port: number }).port}`;

      // IDE mode as `ide setup` leaves it: the CA and the record naming the proxy's address.
      const dataDirectory = path.join(home.dir, "data", "cursor-byok");
      const ideDirectory = toIdeDirectory(dataDirectory);
      ideCa = await createCertificateAuthority();
      mkdirSync(ideDirectory, { recursive: true, mode: 0o700 });
      writeCertificateAuthority(ideDirectory, ideCa);
      proxyUrl = `http://127.0.0.1:${await freePort()}`;
      writeJournal(ideDirectory, {
        version: JOURNAL_VERSION,
        createdAt: new Date().toISOString(),
        proxyUrl,
        ca: {
          certFile: path.join(ideDirectory, "ca.pem"),
          sha256: ideCa.sha256,
          sha1: ideCa.sha1,
          serial: ideCa.serial,
        },
        trust: [],
      });
      mkdirSync(path.dirname(home.configPath), { recursive: true });
      writeFileSync(home.configPath, `team:\n  server: ${team.url}\n`);
    });

    after(async () => {
      for (const serve of serves) await serve.stop();
      upstream?.close();
      tlsFront?.close();
      await team?.close();
      await provider?.close();
      await drop?.();
      rmSync(workspace, { recursive: true, force: true });
      home.cleanup();
      teamHome.cleanup();
    });

    test("the IDE's agent runs on the team server as its user; its sign-in token stays with Cursor", async () => {
      const serve = await startClient({ CURSOR_BYOK_TEAM_TOKEN: token });
      try {
        await ideTurnAsAnn(serve);
      } finally {
        await serve.stop();
      }
      assert.ok(!serve.output().includes(token), "the log does not show the token");
    });

    async function ideTurnAsAnn(serve: ServeProcess): Promise<void> {
      assert.match(serve.output(), /the agent runs on http:\/\/127\.0\.0\.1:\d+/);
      assert.ok(!serve.output().includes(token), "the banner does not show the token");
      const client = ideClient();
      try {
        const result = await client.startTurn({
          conversationId: "ide-turn-of-ann",
          text: "hello",
          modelId: MODEL,
        }).done;
        assert.equal(result.error, undefined, result.error?.message);
        assert.match(result.view.text, /hello from the team server/);
        // The team server offers HTTP/2, but not to the IDE: its HTTP/2 would bypass the proxy.
        const config = await client.ai.getServerConfig({});
        assert.equal(config.http2Config, Http2Config.FORCE_ALL_DISABLED);
        // A call the server does not answer goes to Cursor, with the IDE's own credentials.
        const identity = await fetchThroughProxy("/aiserver.v1.AuthService/GetEmail");
        assert.equal(identity.headers.get("x-upstream"), "yes");
      } finally {
        await client.close();
      }
      assert.equal(await ownerOf(url, "ide-turn-of-ann"), "ann");
      assert.ok(seen.some((request) => request.path === "/aiserver.v1.AuthService/GetEmail"));
      for (const request of seen) {
        assert.equal(request.headers.authorization, CURSOR_SIGN_IN, request.path);
        assert.ok(
          !JSON.stringify(request.headers).includes(token),
          "the team token reached Cursor",
        );
      }
      assert.ok(
        !seen.some((request) => /RunSSE|BidiAppend/.test(request.path)),
        "the agent did not go to Cursor",
      );
    }

    test("the same with the team server behind TLS (https, the team's CA)", async () => {
      writeFileSync(home.configPath, `team:\n  server: ${teamHttps}\n`);
      const serve = await startClient({
        CURSOR_BYOK_TEAM_TOKEN: token,
        NODE_EXTRA_CA_CERTS: teamCaFile,
      });
      try {
        const client = ideClient();
        try {
          const result = await client.startTurn({
            conversationId: "ide-turn-over-tls",
            text: "hello",
            modelId: MODEL,
          }).done;
          assert.equal(result.error, undefined, result.error?.message);
          assert.match(result.view.text, /hello from the team server/);
        } finally {
          await client.close();
        }
      } finally {
        await serve.stop();
        writeFileSync(home.configPath, `team:\n  server: ${team.url}\n`);
      }
      assert.equal(await ownerOf(url, "ide-turn-over-tls"), "ann");
    });

    test("without the team token, the IDE shows what to set", async () => {
      const serve = await startClient({});
      assert.match(serve.output(), /NOT SET.*CURSOR_BYOK_TEAM_TOKEN/);
      const client = ideClient();
      try {
        const result = await client.startTurn({
          conversationId: "no-token",
          text: "hello",
          modelId: MODEL,
        }).done;
        assert.match(
          result.error?.message ?? "",
          /no team token: set CURSOR_BYOK_TEAM_TOKEN to the token `cursor-byok users add` printed/,
        );
      } finally {
        await client.close();
        await serve.stop();
      }
    });

    test("doctor checks the team token against the team server, without printing it", async () => {
      const good = await runCliProcess(["doctor"], {
        env: { ...home.env, CURSOR_BYOK_TEAM_TOKEN: token },
      });
      assert.match(good.stdout, /^ok +team +http:\/\/127\.0\.0\.1:\d+ accepts your team token$/m);
      assert.ok(!good.stdout.includes(token) && !good.stderr.includes(token));
      const wrong = await runCliProcess(["doctor"], {
        env: { ...home.env, CURSOR_BYOK_TEAM_TOKEN: "cbk_not-a-token-of-this-team" },
      });
      assert.equal(wrong.code, 1);
      assert.match(
        wrong.stdout,
        /^FAIL +team +.* refused your team token \(from CURSOR_BYOK_TEAM_TOKEN\)$/m,
      );
      const unset = await runCliProcess(["doctor"], { env: home.env });
      assert.match(unset.stdout, /^FAIL +team +CURSOR_BYOK_TEAM_TOKEN is not set/m);
    });

    describe("cursor-agent through `cursor-byok agent --team`", () => {
      const bin = path.join(home.dir, "bin");
      const record = path.join(home.dir, "agent-record");
      before(() => {
        mkdirSync(bin, { recursive: true });
        // A stand-in cursor-agent: one call to its endpoint with its own sign-in token.
        writeFileSync(
          path.join(bin, "cursor-agent"),
          `#!${process.execPath}
const endpoint = process.argv[process.argv.indexOf("--endpoint") + 1];
(async () => {
  const answer = await fetch(endpoint + "/aiserver.v1.AiService/GetServerConfig", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: ${JSON.stringify(CURSOR_SIGN_IN)} },
    body: "{}",
  });
  require("node:fs").writeFileSync(${JSON.stringify(record)}, answer.status + " " + endpoint);
})();
`,
        );
        chmodSync(path.join(bin, "cursor-agent"), 0o755);
      });

      test("its calls reach the team server with the user's token", async () => {
        const run = await runCliProcess(["agent", "--team", team.url], {
          env: { ...home.env, PATH: `${bin}:${home.env.PATH}`, CURSOR_BYOK_TEAM_TOKEN: token },
        });
        assert.equal(run.code, 0, run.stderr);
        const [status, endpoint] = readFileSync(record, "utf8").split(" ");
        assert.equal(status, "200");
        assert.match(endpoint ?? "", /^http:\/\/127\.0\.0\.1:\d+$/);
        assert.notEqual(endpoint, team.url);
        // The same over https, the team server's certificate from the team's CA.
        rmSync(record);
        const overTls = await runCliProcess(["agent", "--team", teamHttps], {
          env: {
            ...home.env,
            PATH: `${bin}:${home.env.PATH}`,
            CURSOR_BYOK_TEAM_TOKEN: token,
            NODE_EXTRA_CA_CERTS: teamCaFile,
          },
        });
        assert.equal(overTls.code, 0, overTls.stderr);
        assert.equal(readFileSync(record, "utf8").split(" ")[0], "200");
        // The same call with the sign-in token alone is refused by the team server.
        const direct = await fetch(`${team.url}/aiserver.v1.AiService/GetServerConfig`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: CURSOR_SIGN_IN },
          body: "{}",
        });
        assert.equal(direct.status, 401);
        // cursor-agent gets the team server's HTTP/2 offer as it is.
        const offered = await fetch(`${team.url}/aiserver.v1.AiService/GetServerConfig`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
          body: "{}",
        });
        assert.match(await offered.text(), /HTTP2_CONFIG_FORCE_ALL_ENABLED|"http2Config":\s*1/);
      });

      test("without the token it does not start cursor-agent, and says what to set", async () => {
        rmSync(record, { force: true });
        const run = await runCliProcess(["agent"], {
          env: { ...home.env, PATH: `${bin}:${home.env.PATH}` },
        });
        assert.equal(run.code, 1);
        assert.match(run.stderr, /no team token: set CURSOR_BYOK_TEAM_TOKEN/);
        assert.throws(() => readFileSync(record));
      });
    });

    /** A forwarded call through the IDE proxy, as the IDE makes it. */
    async function fetchThroughProxy(procedure: string): Promise<Response> {
      const { request } = await import("node:https");
      return new Promise((resolve, reject) => {
        const outgoing = request(
          {
            host: "api2.cursor.sh",
            path: procedure,
            method: "POST",
            agent: createProxyAgent({ proxyUrl, ca: [ideCa.certPem] }),
            headers: { "content-type": "application/proto", authorization: CURSOR_SIGN_IN },
          },
          (answer) => {
            answer.resume();
            answer.on("end", () =>
              resolve(
                new Response(null, {
                  status: answer.statusCode ?? 0,
                  headers: answer.headers as Record<string, string>,
                }),
              ),
            );
          },
        );
        outgoing.on("error", reject);
        outgoing.end();
      });
    }
  });
}

/** The name of the user a conversation belongs to on the team server. */
async function ownerOf(url: string, conversationID: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result = await client.query<{ name: string }>(
      "select u.name from conversation_users c join users u using (user_id) where c.conversation_id = $1",
      [conversationID],
    );
    return result.rows[0]?.name;
  } finally {
    await client.end();
  }
}
