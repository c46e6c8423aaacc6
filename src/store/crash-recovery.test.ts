/**
 * Crash recovery on the SQLite store and on the PostgreSQL store (when a PostgreSQL is available,
 * testing/postgres-server.ts). The scripted conversation runs in a child process
 * (testing/crash-driver.ts) that is SIGKILLed at each checkpoint in turn — before and after every
 * store write, and in the middle of each model stream — then resumed on the same file. For every
 * kill point the finished database must equal the one an uninterrupted run leaves.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { toMessageBytes } from "../loop/history-hash.ts";
import type { DriverLogLine } from "./testing/crash-driver.ts";
import { getTestPostgres } from "./testing/postgres-server.ts";
import { toScriptedResponse } from "./testing/scripted-conversation.ts";
import { createTempDirectory, type TempDirectory } from "./testing/temp-directory.ts";

const DRIVER = fileURLToPath(new URL("./testing/crash-driver.ts", import.meta.url));
const CHILD_TIMEOUT_MS = 30_000;

interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
}

function runDriver(database: string, log: string, killAt: number): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--disable-warning=ExperimentalWarning", DRIVER, database, log, String(killAt)],
      { stdio: ["ignore", "ignore", "pipe"], timeout: CHILD_TIMEOUT_MS },
    );
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stderr }));
  });
}

function readLog(path: string): DriverLogLine[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as DriverLogLine);
}

/** What a finished run leaves in the database, as comparable plain data. */
interface Outcome {
  readonly messages: string[];
  readonly conversation: Record<string, unknown>;
  readonly inputs: unknown[];
  readonly operations: Record<string, unknown>[];
  readonly calls: Record<string, unknown>[];
}

/** Where the driver keeps its conversation: a SQLite file, or a PostgreSQL schema. */
interface Target {
  readonly name: string;
  /** A new, empty database for the run named `label`: what the driver is given. */
  create(directory: TempDirectory, label: string): Promise<string>;
  readOutcome(database: string): Promise<Outcome>;
  /** Removes what `create` made outside the directory. */
  cleanup(): Promise<void>;
}

const SQLITE: Target = {
  name: "SQLite",
  async create(directory, label) {
    return join(directory.path, `${label}.db`);
  },
  async readOutcome(path) {
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      return outcomeOf((sql) =>
        db
          .prepare(sql)
          .all()
          .map((row) => ({ ...row })),
      );
    } finally {
      db.close();
    }
  },
  async cleanup() {},
};

const postgres = await getTestPostgres();
const schemas: (() => Promise<void>)[] = [];
const POSTGRES: Target | null =
  postgres.type === "unavailable"
    ? null
    : {
        name: "PostgreSQL",
        async create() {
          const schema = await postgres.server.createSchema();
          schemas.push(schema.drop);
          return schema.url;
        },
        async cleanup() {
          for (const drop of schemas.splice(0)) await drop();
        },
        async readOutcome(url) {
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          try {
            const rows = new Map<string, Record<string, unknown>[]>();
            for (const sql of OUTCOME_QUERIES) rows.set(sql, (await client.query(sql)).rows);
            return outcomeOf((sql) => rows.get(sql) ?? []);
          } finally {
            await client.end();
          }
        },
      };

const OUTCOME_QUERIES = [
  "select json from messages order by seq",
  "select conversation_id, version, message_count, chain_hash, state_json from conversations",
  "select input_id, version, message_count, chain_hash from input_commits order by version",
  "select operation_id, status, request_json, result_json from client_operations",
  "select call_id, status, request_hash, messages_hash, message_count from llm_calls " +
    "order by call_id",
] as const;

function outcomeOf(all: (sql: string) => Record<string, unknown>[]): Outcome {
  {
    const [messages, conversation, inputs, operations, calls] = OUTCOME_QUERIES;
    return {
      messages: all(messages).map((row) => String(row.json)),
      conversation: all(conversation)[0] as Record<string, unknown>,
      inputs: all(inputs),
      operations: all(operations),
      calls: all(calls),
    };
  }
}

/** Runs `work` for each item, at most `limit` at a time. */
async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next] as T;
      next += 1;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: limit }, lane));
}

runCrashMatrix(SQLITE);
if (POSTGRES === null) {
  const reason = postgres.type === "unavailable" ? postgres.reason : "";
  test(`crash recovery (PostgreSQL): skipped, ${reason}`, { skip: reason }, () => {});
} else {
  runCrashMatrix(POSTGRES);
}

function runCrashMatrix(target: Target): void {
  describe(`crash recovery (${target.name}, SIGKILL at every checkpoint)`, () => {
    let directory: TempDirectory;
    let reference: Outcome;
    let labels: string[];

    before(async () => {
      directory = createTempDirectory("cursor-byok-crash-");
      const database = await target.create(directory, "reference");
      const log = join(directory.path, "reference.log");
      const exit = await runDriver(database, log, 0);
      assert.equal(exit.code, 0, exit.stderr);
      reference = await target.readOutcome(database);
      labels = readLog(log).flatMap((line) => (line.event === "checkpoint" ? [line.label] : []));
    });

    after(async () => {
      directory.remove();
      await target.cleanup();
    });

    test("the uninterrupted run finishes the scripted conversation", () => {
      const assistants = reference.messages.filter((json) => JSON.parse(json).role === "assistant");
      assert.equal(reference.messages.length, 4);
      assert.deepEqual(
        assistants,
        [0, 1].map((step) => toJSONText(step)),
      );
      assert.equal(reference.operations.length, 1);
      assert.equal(reference.operations[0]?.status, "completed");
      assert.deepEqual(
        reference.calls.map((call) => call.status),
        ["committed", "committed"],
      );
      assert.ok(labels.length >= 20, `${labels.length} checkpoints`);
      assert.ok(labels.some((label) => label.startsWith("mid-stream")));
    });

    test("killed at any checkpoint and resumed, the run ends exactly as the uninterrupted one", async () => {
      const failures: string[] = [];
      const points = labels.map((label, i) => ({ killAt: i + 1, label }));
      await forEachLimited(points, 2, async ({ killAt, label }) => {
        try {
          checkKillPoint(directory, killAt, label, await runKillPoint(directory, killAt));
        } catch (error) {
          failures.push(`#${killAt} (${label}): ${error instanceof Error ? error.message : error}`);
        }
      });
      assert.deepEqual(failures, []);
    });

    async function runKillPoint(dir: TempDirectory, killAt: number): Promise<Outcome> {
      const database = await target.create(dir, `kill-${killAt}`);
      const log = join(dir.path, `kill-${killAt}.log`);
      const killed = await runDriver(database, log, killAt);
      assert.equal(killed.signal, "SIGKILL", `the driver was not killed: ${killed.stderr}`);
      const resumed = await runDriver(database, log, 0);
      assert.equal(resumed.code, 0, `the resumed driver failed: ${resumed.stderr}`);
      return target.readOutcome(database);
    }

    function checkKillPoint(
      dir: TempDirectory,
      killAt: number,
      label: string,
      outcome: Outcome,
    ): void {
      // 1. The final message log, the state and the commits are byte-identical.
      assert.deepEqual(outcome.messages, reference.messages, "message log differs");
      assert.deepEqual(outcome.conversation, reference.conversation, "conversation differs");
      assert.deepEqual(outcome.inputs, reference.inputs, "input commits differ");

      // 2. Each tool operation has exactly one record, completed, with the reference result.
      assert.deepEqual(outcome.operations, reference.operations, "operations differ");

      // 3. No partial assistant message: each is exactly the one its call's `done` carried.
      const assistants = outcome.messages.filter((json) => JSON.parse(json).role === "assistant");
      assert.deepEqual(
        assistants,
        [0, 1].map((step) => toJSONText(step)),
        "assistant messages",
      );

      // 4. Every stream of a call was opened with the call's saved request bytes.
      // The request bytes embed the pid of the process that saved them, so only they may differ.
      const withoutRequest = (calls: Record<string, unknown>[]) =>
        calls.map(({ request_hash: _, ...call }) => call);
      assert.deepEqual(
        withoutRequest(outcome.calls),
        withoutRequest(reference.calls),
        "model calls",
      );
      const log = readLog(join(dir.path, `kill-${killAt}.log`));
      const opened = log.filter((line) => line.event === "open_stream");
      for (const line of opened) {
        const saved = outcome.calls.find((call) => call.call_id === line.callID);
        assert.equal(line.requestHash, saved?.request_hash, `call ${line.callID} sent other bytes`);
      }
      // A call whose stream the killed process opened but did not commit was retried by the
      // resumed process (with the same bytes, checked above).
      const killedPid = log[0]?.pid;
      const interrupted = opened.filter(
        (line) =>
          line.pid === killedPid &&
          !log.some(
            (other) =>
              other.event === "checkpoint" &&
              other.pid === killedPid &&
              other.label === `after commitInput ${line.callID}`,
          ),
      );
      if (label.startsWith("mid-stream")) assert.equal(interrupted.length, 1, "a stream was cut");
      for (const cut of interrupted) {
        const retries = opened.filter(
          (line) => line.callID === cut.callID && line.pid !== killedPid,
        );
        assert.equal(retries.length, 1, `call ${cut.callID} is retried once after the crash`);
      }
    }
  });
}

function toJSONText(step: number): string {
  return Buffer.from(toMessageBytes(toScriptedResponse(step))).toString("utf8");
}
