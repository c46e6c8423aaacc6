/** `doctor --live` against a fake OpenAI-compatible provider on 127.0.0.1. */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { after, test } from "node:test";
import packageJson from "../../package.json" with { type: "json" };
import { toChatCompletionSse } from "../llm/testing/chat-completions-sse.ts";
import { runCli } from "./run-cli.ts";
import { createTempHome, createTestIO, type FakeReply, startFakeProvider } from "./testing.ts";

const home = createTempHome();
after(() => home.cleanup());
const SECRET = "sk-fake-secret-0123456789";

async function doctorLive(reply: FakeReply, env: Record<string, string> = {}) {
  const provider = await startFakeProvider(() => reply);
  try {
    const file = path.join(home.dir, "live.yaml");
    const entry = (name: string) =>
      `  - name: ${name}\n    api: openai-compatible\n    provider: fake\n    baseUrl: ${provider.baseUrl}\n    model: fake-1\n    apiKeyEnv: FAKE_KEY\n`;
    writeFileSync(file, `models:\n${entry("fake")}${entry("fake-too")}`);
    const io = createTestIO({ home: home.dir, env: { ...home.env, FAKE_KEY: SECRET, ...env } });
    const code = await runCli(
      [
        "doctor",
        "--live",
        "--config",
        file,
        "--port",
        "0",
        "--data-dir",
        home.dir,
        "--timeout",
        "10",
      ],
      io,
      { version: packageJson.version },
    );
    return { code, out: io.out(), requests: provider.requests };
  } finally {
    await provider.close();
  }
}

test("a provider that answers passes; models sharing an endpoint cost one request", async () => {
  const { code, out, requests } = await doctorLive({
    type: "sse",
    body: toChatCompletionSse({ text: "OK", usage: { prompt: 12, completion: 1 } }),
  });
  assert.equal(code, 0, out);
  assert.match(
    out,
    /^ok {4}live {6}fake at http:\/\/127\.0\.0\.1:\d+\/v1 \(model fake\) answered in \d+\.\d s$/m,
  );
  assert.equal(requests.length, 1);
  assert.equal(requests[0]?.headers.authorization, `Bearer ${SECRET}`);
  assert.equal(requests[0]?.body.model, "fake-1");
  assert.ok(!out.includes(SECRET));
});

test("what the server would warn about its provider transport is said with the result", async () => {
  const { code, out } = await doctorLive(
    {
      type: "sse",
      body: toChatCompletionSse({ text: "OK", usage: { prompt: 12, completion: 1 } }),
    },
    { CURSOR_BYOK_UPSTREAM_FETCH: "undici" },
  );
  assert.equal(code, 0, out);
  assert.match(
    out,
    /^ok {4}live {6}fake at .* answered in \d+\.\d s \(warning: CURSOR_BYOK_UPSTREAM_FETCH="undici" is not "global": ignored\)$/m,
  );
});

test("a provider that refuses the key fails, with the variable to check", async () => {
  const { code, out } = await doctorLive({
    type: "json",
    status: 401,
    body: { error: { message: "Incorrect API key provided.", type: "invalid_request_error" } },
  });
  assert.equal(code, 1, out);
  assert.match(
    out,
    /^FAIL {2}live {6}fake at http:\/\/127\.0\.0\.1:\d+\/v1 \(model fake\): .*401/m,
  );
  assert.match(out, /^ {16}fix: the provider refused the key: check FAKE_KEY$/m);
  assert.ok(!out.includes(SECRET));
});

test("an unreachable provider fails, with the URL to check", async () => {
  const file = path.join(home.dir, "unreachable.yaml");
  writeFileSync(
    file,
    "models:\n  - {name: gone, api: openai-compatible, provider: fake, baseUrl: 'http://127.0.0.1:1/v1', model: m}\n",
  );
  const io = createTestIO({ home: home.dir, env: home.env });
  const code = await runCli(
    ["doctor", "--live", "--config", file, "--port", "0", "--data-dir", home.dir],
    io,
    { version: packageJson.version },
  );
  assert.equal(code, 1);
  assert.match(
    io.out(),
    /^ {16}fix: cannot reach http:\/\/127\.0\.0\.1:1\/v1: check the base URL and the network$/m,
  );
});
