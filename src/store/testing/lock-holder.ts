/**
 * Test-only child process for data-lock.test.ts: takes the lock of the database `argv[2]`, prints
 * `LOCKED`, and holds it until it is killed.
 */
import { lockDatabase } from "../data-lock.ts";

const path = process.argv[2];
if (path === undefined) throw new Error("usage: lock-holder.ts <database file>");
// Kept referenced: an unreferenced lock's database handle may be collected, which frees the lock.
const lock = lockDatabase(path);
process.stdout.write("LOCKED\n");
setInterval(() => lock, 60_000);
