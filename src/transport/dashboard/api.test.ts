/**
 * The dashboard's HTTP surface without a browser: the API against the store after real turns,
 * the access token, the host check, the security headers and the fixed file table.
 */
import assert from "node:assert/strict";
import { request } from "node:http";
import { after, before, describe, test } from "node:test";
import { CONTENT_SECURITY_POLICY } from "./dashboard.ts";
import { ACCESS_TOKEN, type DashboardFixture, MODEL, startDashboardFixture } from "./testing.ts";

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** A raw HTTP/1.1 request, so the Host header and method can be anything. */
function get(
  url: string,
  path: string,
  options: { token?: string; host?: string; method?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url);
    const call = request(
      {
        hostname,
        port,
        path,
        method: options.method ?? "GET",
        headers: {
          ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
          ...(options.host === undefined ? {} : { host: options.host }),
        },
      },
      (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          body += chunk;
        });
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body }),
        );
      },
    );
    call.on("error", reject);
    call.end();
  });
}

describe("dashboard API with an access token", () => {
  let fixture: DashboardFixture;
  /** `null`: no authorization header. */
  const api = (path: string, token: string | null = ACCESS_TOKEN) =>
    get(fixture.server.url, `/ui/api${path}`, token === null ? {} : { token });

  before(async () => {
    fixture = await startDashboardFixture();
    fixture.reply(
      {
        toolCalls: [{ id: "call_ls", name: "list_dir", arguments: { path: "." } }],
        usage: { prompt: 1000, completion: 20 },
      },
      { text: "The folder is empty.", usage: { prompt: 1100, completion: 8, cached: 1000 } },
    );
    const result = await fixture.client().startTurn({
      conversationId: "2d1c7a10-0000-4000-8000-000000000001",
      text: "What is in this folder?",
      modelId: MODEL,
    }).done;
    assert.equal(result.error, undefined);
  });
  after(() => fixture.close());

  test("without the token, every API path is refused and reveals nothing", async () => {
    for (const path of [
      "/conversations",
      "/usage",
      "/setup",
      "/calls/x/request",
      "/operations/x/result",
    ]) {
      for (const token of [null, "wrong-token", `${ACCESS_TOKEN}x`]) {
        const answer = await api(path, token);
        assert.equal(answer.status, 401, `${path} with ${token}`);
        assert.doesNotMatch(answer.body, /folder/);
      }
    }
  });

  test("the page's files load without the token (they hold no data), with a strict CSP", async () => {
    for (const path of ["/ui/", "/ui/app.js", "/ui/style.css", "/ui/vendor/uPlot.esm.js"]) {
      const answer = await get(fixture.server.url, path);
      assert.equal(answer.status, 200, path);
      assert.equal(answer.headers["content-security-policy"], CONTENT_SECURITY_POLICY);
      assert.equal(answer.headers["x-content-type-options"], "nosniff");
      assert.doesNotMatch(answer.body, /What is in this folder/);
    }
    assert.match(CONTENT_SECURITY_POLICY, /default-src 'none'/);
    assert.doesNotMatch(CONTENT_SECURITY_POLICY, /unsafe|https?:|\*/);
    const redirect = await get(fixture.server.url, "/ui");
    assert.equal(redirect.status, 308);
    assert.equal(redirect.headers.location, "/ui/");
  });

  test("only the fixed files are served: no path reaches the file system", async () => {
    for (const path of [
      "/ui/../package.json",
      "/ui/%2e%2e/package.json",
      "/ui/testing.ts",
      "/ui/vendor/../../api.ts",
      "/ui/nope.js",
    ]) {
      const answer = await get(fixture.server.url, path);
      assert.equal(answer.status, 404, path);
    }
  });

  test("the API is read-only", async () => {
    const answer = await get(fixture.server.url, "/ui/api/conversations", {
      token: ACCESS_TOKEN,
      method: "POST",
    });
    assert.equal(answer.status, 405);
  });

  test("conversations, detail, messages and usage equal the store's figures", async () => {
    const list = JSON.parse((await api("/conversations")).body);
    assert.deepEqual(list, JSON.parse(JSON.stringify(await fixture.store.listConversations())));
    assert.equal(list.total, 1);
    const [item] = list.items;
    assert.equal(item.title, "What is in this folder?");
    assert.equal(item.modelCalls, 2);
    assert.equal(item.usage.cacheRead, 1000);
    // pi-ai counts cached tokens apart from the uncached input.
    assert.equal(item.usage.input, 1000 + 100);
    assert.ok(item.usage.cost > 0);
    const id = encodeURIComponent(item.conversationID);
    const detail = JSON.parse((await api(`/conversations/${id}`)).body);
    assert.deepEqual(
      detail,
      JSON.parse(JSON.stringify(await fixture.store.readConversationDetail(item.conversationID))),
    );
    assert.equal(detail.calls.length, 2);
    for (const call of detail.calls) {
      assert.ok(call.firstEventAt >= call.createdAt, "first event timed");
      assert.ok(call.endedAt >= call.firstEventAt);
    }
    assert.equal(detail.operations.length, 1);
    assert.equal(detail.operations[0].status, "completed");
    const operationID = detail.operations[0].operationID;
    assert.deepEqual(
      JSON.parse((await api(`/operations/${encodeURIComponent(operationID)}/result`)).body),
      JSON.parse(
        JSON.stringify({ result: (await fixture.store.getClientOperation(operationID))?.result }),
      ),
    );
    assert.equal((await api("/operations/nope/result")).status, 404);
    const messages = JSON.parse((await api(`/conversations/${id}/messages?from=1&limit=2`)).body);
    assert.deepEqual(
      messages.messages.map((m: { seq: number }) => m.seq),
      [1, 2],
    );
    assert.equal(messages.nextFrom, 3);
    // Nothing streams once the turn ended: the pending response is gone.
    assert.deepEqual(JSON.parse((await api(`/conversations/${id}/pending`)).body), {
      pending: null,
    });
    const usage = JSON.parse((await api("/usage")).body);
    assert.deepEqual(usage.rows, JSON.parse(JSON.stringify(await fixture.store.listUsage())));
  });

  test("a model call's exact request body, byte for byte, also as a download", async () => {
    const [item] = (await fixture.store.listConversations()).items;
    const detail = await fixture.store.readConversationDetail(item?.conversationID ?? "");
    for (const call of detail?.calls ?? []) {
      const saved = await fixture.store.getLLMCall(call.callID);
      const answer = await api(`/calls/${encodeURIComponent(call.callID)}/request`);
      assert.equal(answer.status, 200);
      assert.equal(answer.body, saved?.request);
      assert.equal(answer.headers["cache-control"], "no-store");
      const download = await api(`/calls/${encodeURIComponent(call.callID)}/request?download=1`);
      assert.match(
        String(download.headers["content-disposition"]),
        /^attachment; filename="request-[A-Za-z0-9._-]+\.json"$/,
      );
      assert.equal(download.body, saved?.request);
    }
    assert.equal((await api("/calls/nope/request")).status, 404);
  });

  test("the set-up shows models and checks, never a key or the token", async () => {
    const answer = await api("/setup");
    const setup = JSON.parse(answer.body);
    assert.equal(setup.tokenRequired, true);
    assert.equal(setup.setup.models[0].name, MODEL);
    assert.ok(setup.clients.length >= 1, "the Cursor test client was seen");
    assert.doesNotMatch(answer.body, /sk-dashboard|dashboard-test-token/);
  });

  test("bad parameters are a 400 that says which; unknown paths a 404", async () => {
    for (const path of [
      "/conversations?limit=0",
      "/conversations?limit=x",
      "/conversations?cursor=zzz",
      "/usage?from=today",
      "/conversations/x/messages?from=-1",
    ]) {
      const answer = await api(path);
      assert.equal(answer.status, 400, path);
      assert.equal(JSON.parse(answer.body).error.code, "invalid_argument");
    }
    assert.equal((await api("/conversations/nobody")).status, 404);
    assert.equal((await api("/nothing")).status, 404);
    assert.equal((await api("/conversations/%E0%A4%A")).status, 400);
  });
});

describe("dashboard without an access token (loopback)", () => {
  let fixture: DashboardFixture;
  before(async () => {
    fixture = await startDashboardFixture({ accessToken: null });
  });
  after(() => fixture.close());

  test("the API answers loopback names, and refuses other host names (DNS rebinding)", async () => {
    const url = fixture.server.url;
    assert.equal((await get(url, "/ui/api/conversations")).status, 200);
    assert.equal((await get(url, "/ui/api/conversations", { host: "localhost:1234" })).status, 200);
    const rebound = await get(url, "/ui/api/conversations", { host: "evil.example:8765" });
    assert.equal(rebound.status, 421);
    assert.equal((await get(url, "/ui/", { host: "evil.example" })).status, 421);
  });

  test("every other route refuses other host names too; loopback names and the bound address work", async () => {
    const url = fixture.server.url;
    const procedure = "/aiserver.v1.ServerConfigService/GetServerConfig";
    const call = (host?: string) =>
      get(url, procedure, {
        method: "POST",
        ...(host === undefined ? {} : { host }),
      });
    const rebound = await call("attacker.example:8765");
    assert.equal(rebound.status, 421);
    assert.match(rebound.body, /failed_precondition/);
    assert.notEqual((await call()).status, 421, "the address the server listens on");
    assert.notEqual((await call("localhost:8765")).status, 421);
    assert.notEqual((await call("[::1]:8765")).status, 421);
  });
});
