/**
 * Test-only child process for bad-input.test.ts: opens the SQLite store at `argv[2]` (a file the
 * process cannot write) and prints, as one JSON line, what opening it gave. Run as another user
 * when the test runs as root, since root ignores file permissions.
 */
import { isStoreError } from "../errors.ts";
import { openSqliteStore } from "../sqlite-store.ts";

const path = process.argv[2];
if (path === undefined) throw new Error("usage: read-only-probe.ts <database file>");
try {
  const store = openSqliteStore({ path });
  await store.close();
  process.stdout.write(`${JSON.stringify({ opened: true })}\n`);
} catch (error) {
  if (!isStoreError(error)) throw error;
  process.stdout.write(
    `${JSON.stringify({ opened: false, code: error.code, message: error.message })}\n`,
  );
}
