import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import { stripVTControlCharacters } from "node:util";
import { createLog } from "./log.ts";

function capture(): { stream: Writable; text(): string } {
  let text = "";
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, text: () => text };
}

test("JSON lines when nobody watches a terminal", () => {
  const out = capture();
  const log = createLog({ level: "info", pretty: false, destination: out.stream });
  log.info({ conversation: "c1", inputTokens: 12 }, "turn ended");
  log.debug({}, "not at info");
  const lines = out.text().trim().split("\n");
  assert.equal(lines.length, 1);
  const entry = JSON.parse(lines[0] ?? "") as Record<string, unknown>;
  assert.equal(entry.msg, "turn ended");
  assert.equal(entry.conversation, "c1");
  assert.equal(entry.inputTokens, 12);
  assert.equal(entry.level, 30);
});

test("one human-readable line per event on a terminal", () => {
  const out = capture();
  const log = createLog({ level: "debug", pretty: true, destination: out.stream });
  log.info({ conversation: "c1" }, "turn started");
  log.debug({}, "details");
  const text = stripVTControlCharacters(out.text());
  assert.match(text, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: turn started \{"conversation":"c1"\}\n/);
  assert.match(text, /DEBUG: details/);
  assert.throws(() => JSON.parse(text.split("\n")[0] ?? ""));
});

test("credential fields are redacted wherever they appear", () => {
  const out = capture();
  const log = createLog({ level: "info", pretty: false, destination: out.stream });
  log.info(
    {
      apiKey: "sk-1",
      request: { authorization: "Bearer t-2", headers: { "x-api-key": "k-3" } },
      accessToken: "t-4",
      model: "claude",
    },
    "call",
  );
  const text = out.text();
  for (const secret of ["sk-1", "t-2", "k-3", "t-4"]) assert.ok(!text.includes(secret), secret);
  assert.match(text, /"model":"claude"/);
});
