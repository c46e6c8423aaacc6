import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { lockDatabase } from "./data-lock.ts";
import { isStoreError } from "./errors.ts";
import { createTempDirectory } from "./testing/temp-directory.ts";

const HOLDER = fileURLToPath(new URL("./testing/lock-holder.ts", import.meta.url));

test("a second server is refused, naming the first; a crash of the first frees the lock", async () => {
  const directory = createTempDirectory();
  const path = join(directory.path, "cursor-byok.db");
  const holder = spawn(process.execPath, [HOLDER, path], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise((resolve) => holder.once("exit", resolve));
  try {
    await new Promise<void>((resolve, reject) => {
      holder.stdout.on("data", (chunk: Buffer) => {
        if (chunk.toString().includes("LOCKED")) resolve();
      });
      holder.once("exit", (code) => reject(new Error(`the holder exited (${code})`)));
    });
    assert.throws(
      () => lockDatabase(path),
      (error) =>
        isStoreError(error, "locked") &&
        error.message.includes(`pid ${holder.pid}`) &&
        error.message.includes(path),
    );
    holder.kill("SIGKILL"); // no clean-up runs
    await exited;
    const lock = lockDatabase(path);
    lock.release();
    assert.equal(existsSync(`${path}.owner`), false, "a clean release removes the owner file");
    lockDatabase(path).release(); // and the lock can be taken again
  } finally {
    holder.kill("SIGKILL");
    directory.remove();
  }
});

test("within one process, a second lock of the same database is refused too", () => {
  const directory = createTempDirectory();
  try {
    const path = join(directory.path, "cursor-byok.db");
    const lock = lockDatabase(path);
    assert.throws(
      () => lockDatabase(path),
      (error) => isStoreError(error, "locked"),
    );
    lock.release();
    lockDatabase(path).release();
  } finally {
    directory.remove();
  }
});
