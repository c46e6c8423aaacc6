/** `cursor-byok usage`: the store's daily figures as a table and as JSON; never creates a database. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { after, describe, test } from "node:test";
import packageJson from "../../package.json" with { type: "json" };
import { T0, text, toolCall } from "../loop/testing.ts";
import { openSqliteStore, type UsageRow } from "../store/index.ts";
import { migrate } from "../store/schema.ts";
import { answer, driveTurn } from "../store/testing/dashboard-contract.ts";
import { runCli } from "./run-cli.ts";
import { createTempHome, createTestIO } from "./testing.ts";

const home = createTempHome();
const DAY_MS = 86_400_000;

async function run(args: string[], at = home) {
  const io = createTestIO({ home: at.dir, env: at.env });
  const code = await runCli(args, io, { version: packageJson.version });
  return { code, out: io.out(), err: io.err() };
}

describe("cursor-byok usage", () => {
  let stored: UsageRow[];
  after(() => home.cleanup());

  test("without a database it says so and creates nothing", async () => {
    const { code, out } = await run(["usage"]);
    assert.equal(code, 0);
    assert.match(out, /No database yet at .*cursor-byok\.db/);
    assert.equal(existsSync(home.databasePath), false);
  });

  test("the table lists each day × model with totals equal to the store's", async () => {
    const store = openSqliteStore({ path: home.databasePath });
    await driveTurn(store, "a", "read it", [
      answer(
        [toolCall("call_0", "read", { path: "x" })],
        { input: 1200, output: 30, cacheWrite: 1000, cost: 0.0125 },
        T0 + 10,
      ),
      answer([text("done")], { input: 40, output: 12, cacheRead: 1200, cost: 0.0031 }, T0 + DAY_MS),
    ]);
    await driveTurn(store, "b", "other", [
      answer([text("hi")], { input: 7, output: 3, cost: 0.5 }, T0 + 20, "claude-x", "anthropic"),
    ]);
    stored = await store.listUsage();
    await store.close();

    const { code, out } = await run(["usage", "--from", "2026-01-01", "--to", "2026-01-02"]);
    assert.equal(code, 0);
    const lines = out.trimEnd().split("\n");
    assert.match(lines[0] ?? "", /^Usage from 2026-01-01 to 2026-01-02/);
    assert.match(
      lines[2] ?? "",
      /^day +provider +model +calls +input +cache read +cache write +output +cached +cost$/,
    );
    assert.match(
      lines[3] ?? "",
      /^2026-01-01 +anthropic +claude-x +1 +7 +0 +0 +3 +0\.0% +0\.5000$/,
    );
    assert.match(
      lines[4] ?? "",
      /^2026-01-01 +test +test-model +1 +1,200 +0 +1,000 +30 +0\.0% +0\.0125$/,
    );
    assert.match(
      lines[5] ?? "",
      /^2026-01-02 +test +test-model +1 +40 +1,200 +0 +12 +96\.8% +0\.0031$/,
    );
    assert.match(lines[6] ?? "", /^total +3 +1,247 +1,200 +1,000 +45 +34\.8% +0\.5156$/);
  });

  test("--json prints the store's rows; --days counts back from --to", async () => {
    const all = await run(["usage", "--from", "2026-01-01", "--to", "2026-01-02", "--json"]);
    assert.deepEqual(JSON.parse(all.out), stored);
    const last = await run(["usage", "--days", "1", "--to", "2026-01-02", "--json"]);
    assert.deepEqual(
      JSON.parse(last.out),
      stored.filter((row) => row.day === "2026-01-02"),
    );
    const none = await run(["usage", "--days", "3", "--to", "2025-12-01"]);
    assert.match(none.out, /No model calls in this period\./);
  });

  test("bad flags are a usage error (exit 2)", async () => {
    for (const args of [
      ["--days", "0"],
      ["--days", "x"],
      ["--from", "yesterday"],
      ["--from", "2026-01-01", "--days", "2"],
      ["--to", "2024-13-45"],
      ["--from", "2024-02-30"],
      ["--from", "2026-01-03", "--to", "2026-01-02"],
      ["--nope"],
    ]) {
      const { code, err } = await run(["usage", ...args]);
      assert.equal(code, 2, args.join(" "));
      assert.match(err, /^cursor-byok usage: .*\nRun `cursor-byok usage --help`/, args.join(" "));
    }
  });

  test("it reads the database without writing to it", async () => {
    const digest = () => createHash("sha256").update(readFileSync(home.databasePath)).digest("hex");
    const before = digest();
    assert.equal((await run(["usage", "--days", "3", "--to", "2026-01-02"])).code, 0);
    assert.equal(digest(), before);
  });

  test("it reads while a server holds the database open, commits not yet checkpointed included", async () => {
    const server = openSqliteStore({ path: home.databasePath });
    try {
      await driveTurn(server, "c", "while running", [
        answer([text("ok")], { input: 5, output: 1 }, T0 + 2 * DAY_MS),
      ]);
      const { code, out } = await run([
        "usage",
        "--from",
        "2026-01-03",
        "--to",
        "2026-01-03",
        "--json",
      ]);
      assert.equal(code, 0);
      assert.deepEqual(
        JSON.parse(out),
        JSON.parse(JSON.stringify(await server.listUsage({ fromDay: "2026-01-03" }))),
      );
      assert.equal(JSON.parse(out).length, 1);
    } finally {
      await server.close();
    }
  });

  test("a database of an older cursor-byok is refused, not upgraded", async () => {
    const old = createTempHome();
    try {
      mkdirSync(dirname(old.databasePath), { recursive: true });
      const db = new DatabaseSync(old.databasePath);
      migrate(db, 3);
      db.close();
      const { code, err } = await run(["usage"], old);
      assert.equal(code, 1);
      assert.match(err, /older cursor-byok .*Start the server once/s);
      const reopened = new DatabaseSync(old.databasePath, { readOnly: true });
      assert.equal(reopened.prepare("pragma user_version").get()?.user_version, 3);
      reopened.close();
    } finally {
      old.cleanup();
    }
  });
});
