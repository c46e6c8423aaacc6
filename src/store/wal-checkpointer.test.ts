import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, test } from "node:test";
import { openSqliteStore, type SqliteStoreOptions } from "./sqlite-store.ts";
import { toScriptedCommits } from "./testing/scripted-conversation.ts";
import { createTempDirectory } from "./testing/temp-directory.ts";
import type { Store } from "./types.ts";
import type { CheckpointEvent } from "./wal-checkpointer.ts";

// A WAL file is a 32-byte header, then frames of a 24-byte header and one page (4096 here).
const PAGE = 4096;
const walFrames = (path: string): number => {
  const size = statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
  return size === 0 ? 0 : (size - 32) / (PAGE + 24);
};
const fileSize = (path: string): number => statSync(path).size;

// Each commit starts a conversation bound to a run request whose client state is 300 KB, as an
// IDE's later turns are (≈ 75 pages per commit).
const CLIENT_STATE_BYTES = 300_000;

async function commitBig(store: Store, index: number): Promise<Uint8Array> {
  const [first] = toScriptedCommits(`conv-${index}`);
  assert.ok(first !== undefined);
  const clientState = new Uint8Array(randomBytes(CLIENT_STATE_BYTES));
  const result = await store.commitInput({
    inputID: first.inputID,
    expectedVersion: 0,
    state: first.state,
    result: first.command,
    records: [{ type: "request_stream", requestID: `request-${index}`, clientState }],
  });
  assert.equal(result.type, "committed");
  return clientState;
}

/** Events of a store's checkpointer, and a way to wait for the first one that matches. */
function recordEvents() {
  const events: CheckpointEvent[] = [];
  const waiting: { match: (event: CheckpointEvent) => boolean; resolve: () => void }[] = [];
  return {
    events,
    onEvent(event: CheckpointEvent) {
      events.push(event);
      for (const waiter of [...waiting]) {
        if (waiter.match(event)) {
          waiting.splice(waiting.indexOf(waiter), 1);
          waiter.resolve();
        }
      }
    },
    next(match: (event: CheckpointEvent) => boolean): Promise<void> {
      return new Promise((resolve) => waiting.push({ match, resolve }));
    },
  };
}

function threadCount(): number {
  const match = /Threads:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"));
  return Number(match?.[1]);
}

async function withStore<T>(
  options: SqliteStoreOptions,
  body: (store: Store, path: string) => Promise<T>,
): Promise<T> {
  const directory = createTempDirectory();
  const path = join(directory.path, "store.db");
  const store = openSqliteStore({ ...options, path });
  try {
    return await body(store, path);
  } finally {
    await store.close();
    directory.remove();
  }
}

describe("WAL checkpoints in a worker (wal-checkpointer.ts)", { timeout: 60_000 }, () => {
  test("by default, commits checkpoint the WAL at SQLite's 1,000 pages", async () => {
    await withStore({}, async (store, path) => {
      const before = fileSize(path);
      for (let i = 0; i < 20; i++) await commitBig(store, i);
      assert.ok(fileSize(path) > before + 10 * CLIENT_STATE_BYTES, "pages were copied");
      assert.ok(walFrames(path) < 1200, `the WAL stayed near 1,000 pages: ${walFrames(path)}`);
    });
  });

  test("with background checkpoints, the store's commits never checkpoint", async () => {
    // The worker runs, but its first checkpoint is an hour away.
    await withStore(
      { backgroundCheckpoints: { intervalMs: 3_600_000, onEvent: () => {} } },
      async (store, path) => {
        const before = fileSize(path);
        let frames = walFrames(path);
        for (let i = 0; i < 20; i++) {
          await commitBig(store, i);
          const now = walFrames(path);
          assert.ok(Number.isInteger(now) && now > frames, "each commit appends to the WAL");
          frames = now;
        }
        assert.ok(frames > 1200, `the WAL grew past 1,000 pages: ${frames}`);
        assert.equal(fileSize(path), before, "nothing was copied into the database file");
      },
    );
  });

  test("the worker checkpoints the WAL, which then restarts; all is there after reopening", async () => {
    const directory = createTempDirectory();
    const path = join(directory.path, "store.db");
    try {
      const recorded = recordEvents();
      const store = openSqliteStore({
        path,
        backgroundCheckpoints: { intervalMs: 0, onEvent: recorded.onEvent },
      });
      const saved: Uint8Array[] = [];
      // A complete checkpoint that began after the 20th commit was signalled.
      const backfilled = recorded.next(
        (event) =>
          event.type === "checkpointed" &&
          event.commits >= 20 &&
          !event.busy &&
          event.backfilledFrames === event.walFrames,
      );
      for (let i = 0; i < 20; i++) saved.push(await commitBig(store, i));
      await backfilled;
      assert.ok(fileSize(path) > 20 * CLIENT_STATE_BYTES, "the pages are in the database file");
      // The WAL was backfilled completely, so the next commit writes it from its start again.
      const restarted = recorded.next(
        (event) =>
          event.type === "checkpointed" &&
          !event.busy &&
          event.backfilledFrames === event.walFrames &&
          event.walFrames < 200,
      );
      saved.push(await commitBig(store, 20));
      await restarted;
      assert.ok(
        recorded.events.every((event) => event.type === "checkpointed"),
        "no failure reported",
      );
      await store.close();
      assert.equal(existsSync(`${path}-wal`), false, "the last connection's close removed the WAL");

      const reopened = openSqliteStore({ path });
      try {
        for (const [index, clientState] of saved.entries()) {
          const stream = await reopened.findRequestStream(`request-${index}`);
          assert.deepEqual(stream?.clientState, clientState);
          assert.ok((await reopened.load(`conv-${index}`)) !== null);
        }
      } finally {
        await reopened.close();
      }
    } finally {
      directory.remove();
    }
  });

  for (const [name, file, reason] of [
    ["cannot start", "checkpoint-worker-throws.ts", /cannot start/],
    ["dies", "checkpoint-worker-exits.ts", /exit code 3/],
  ] as const) {
    test(`a worker that ${name}: commits checkpoint again, and the failure is reported`, async () => {
      const recorded = recordEvents();
      const failed = recorded.next((event) => event.type === "worker_failed");
      await withStore(
        {
          backgroundCheckpoints: {
            intervalMs: 0,
            onEvent: recorded.onEvent,
            workerURL: new URL(`./testing/${file}`, import.meta.url),
          },
        },
        async (store, path) => {
          if (name === "dies") await commitBig(store, 100);
          await failed;
          const failure = recorded.events.find((event) => event.type === "worker_failed");
          assert.match(failure?.type === "worker_failed" ? failure.message : "", reason);
          const before = fileSize(path);
          for (let i = 0; i < 20; i++) await commitBig(store, i);
          assert.ok(fileSize(path) > before + 10 * CLIENT_STATE_BYTES, "pages were copied");
          assert.ok(walFrames(path) < 1200, `the WAL stayed bounded: ${walFrames(path)}`);
        },
      );
    });
  }

  test("when the worker is behind, commits finish its checkpoint so that the WAL restarts", async () => {
    const recorded = recordEvents();
    const started = recorded.next((event) => event.type === "checkpointed");
    await withStore(
      {
        backgroundCheckpoints: {
          onEvent: recorded.onEvent,
          workerURL: new URL("./testing/checkpoint-worker-behind.ts", import.meta.url),
        },
      },
      async (store, path) => {
        await started;
        const before = fileSize(path);
        for (let i = 0; i < 20; i++) await commitBig(store, i);
        assert.ok(fileSize(path) > before + 10 * CLIENT_STATE_BYTES, "pages were copied");
        // The file keeps its high-water mark (the schema's pages and one commit), not 20 commits.
        assert.ok(walFrames(path) < 400, `the WAL restarted at each commit: ${walFrames(path)}`);
        assert.equal(recorded.events.length, 1, "no warning");
      },
    );
  });

  test("a reader holding an old snapshot: the WAL grows, and a warning says so", async () => {
    const recorded = recordEvents();
    const warnings: string[] = [];
    const started = recorded.next((event) => event.type === "checkpointed");
    await withStore(
      {
        backgroundCheckpoints: {
          maxWalBytes: 2_000_000,
          onEvent: recorded.onEvent,
          onWarning: (message) => warnings.push(message),
          workerURL: new URL("./testing/checkpoint-worker-behind.ts", import.meta.url),
        },
      },
      async (store, path) => {
        await started;
        await commitBig(store, 0);
        const reader = new DatabaseSync(path, { readOnly: true });
        try {
          reader.exec("begin");
          reader.prepare("select count(*) from request_streams").get();
          for (let i = 1; i < 20; i++) await commitBig(store, i);
          assert.ok(walFrames(path) > 1200, "no checkpoint can pass the reader's snapshot");
          const overLimit = recorded.events.filter((event) => event.type === "wal_over_limit");
          assert.equal(overLimit.length, 1);
          assert.equal(warnings.length, 1);
          assert.match(warnings[0] ?? "", /write-ahead log is \d+ bytes/);
          reader.exec("commit");
        } finally {
          reader.close();
        }
        // The reader is gone: the next commit checkpoints it all and the one after restarts it.
        await commitBig(store, 20);
        await commitBig(store, 21);
        assert.ok(walFrames(path) * (PAGE + 24) <= 2_000_000 / 4 + 2 * CLIENT_STATE_BYTES);
      },
    );
  });

  test("close stops the worker before closing the store's connection, and leaks no thread", {
    skip: process.platform === "linux" ? false : "counts threads in /proc",
  }, async () => {
    const directory = createTempDirectory();
    try {
      const open = () =>
        openSqliteStore({ path: join(directory.path, "a.db"), backgroundCheckpoints: true });
      await (await open()).close();
      const threads = threadCount();
      for (let round = 0; round < 8; round++) {
        const store = open();
        assert.equal(threadCount(), threads + 1, "one thread while open");
        await commitBig(store, round);
        await store.close();
        // The worker's connection was closed first: the store's was the last, so its close
        // checkpointed the WAL and removed it.
        assert.equal(existsSync(join(directory.path, "a.db-wal")), false);
        assert.equal(threadCount(), threads, "the worker's thread is gone");
      }
    } finally {
      directory.remove();
    }
  });

  test("the worker does not keep the process alive; what was committed survives", async () => {
    const directory = createTempDirectory();
    try {
      const path = join(directory.path, "store.db");
      // A process that commits and ends without closing its stores.
      const script =
        `import { openSqliteStore } from ${JSON.stringify(new URL("./sqlite-store.ts", import.meta.url).href)};` +
        `import { toScriptedCommits } from ${JSON.stringify(new URL("./testing/scripted-conversation.ts", import.meta.url).href)};` +
        `const store = openSqliteStore({ path: ${JSON.stringify(path)}, backgroundCheckpoints: true });` +
        "const [first] = toScriptedCommits('conv-child');" +
        "const result = await store.commitInput({ inputID: first.inputID, expectedVersion: 0, " +
        "state: first.state, result: first.command, records: [{ type: 'request_stream', " +
        "requestID: 'request-child', clientState: new Uint8Array(300000).fill(7) }] });" +
        "process.stdout.write(result.type);" +
        // A second store that never commits, its worker reporting (listeners on its port).
        `openSqliteStore({ path: ${JSON.stringify(`${path}-idle`)}, backgroundCheckpoints: { onEvent() {} } });`;
      // From a file: with `-e`, node exits even with a worker's port still ref'd.
      const scriptPath = join(directory.path, "child.mjs");
      writeFileSync(scriptPath, script);
      const child = spawn(process.execPath, [scriptPath], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      let out = "";
      child.stdout.on("data", (chunk) => {
        out += String(chunk);
      });
      // A watchdog, not a wait: a child the worker keeps alive is killed, and the test fails.
      const watchdog = setTimeout(() => child.kill("SIGKILL"), 20_000);
      const code = await new Promise((resolve) => child.once("exit", resolve));
      clearTimeout(watchdog);
      assert.equal(code, 0);
      assert.equal(out, "committed");
      const store = openSqliteStore({ path });
      try {
        const stream = await store.findRequestStream("request-child");
        assert.deepEqual(stream?.clientState, new Uint8Array(300000).fill(7));
      } finally {
        await store.close();
      }
    } finally {
      directory.remove();
    }
  });
});
