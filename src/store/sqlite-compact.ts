/**
 * Compacting a SQLite database file: SQLite reuses the pages a deletion or an update frees, but
 * never gives them back to the file system by itself. `VACUUM` rebuilds the file without them.
 * Worth it once after an upgrade that released much data (migration 7 releases the saved run
 * requests of all but each conversation's newest request stream: docs/architecture.md "The
 * Cursor transport"), not routinely.
 *
 * The caller holds the database's lock (`lockDatabase`): `VACUUM` needs the file to itself for
 * as long as it runs, and writes a new copy of the whole file first (up to its size again, free).
 */
import { statSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import { fromSQLiteError } from "./sqlite-errors.ts";

export interface CompactResult {
  /** The file and its WAL, in bytes, before and after. */
  readonly before: number;
  readonly after: number;
  /** Pages that were free before (each `page_size` bytes). */
  readonly freePages: number;
}

export function compactSqliteDatabase(path: string): CompactResult {
  const before = sizeOf(path);
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(path, { timeout: 5_000 });
  } catch (error) {
    throw fromSQLiteError(error, path);
  }
  try {
    const freePages = Number(
      (db.prepare("pragma freelist_count").get() as { freelist_count: number }).freelist_count,
    );
    db.exec("vacuum");
    // Copy what the rebuild wrote to the WAL into the file, and empty the WAL.
    db.exec("pragma wal_checkpoint(truncate)");
    return { before, after: sizeOf(path), freePages };
  } catch (error) {
    // A failed VACUUM leaves the file as it was (it is one transaction).
    throw fromSQLiteError(error, path);
  } finally {
    db.close();
  }
}

/** The database file and its WAL, in bytes (a missing WAL counts 0). */
function sizeOf(path: string): number {
  const size = (file: string) => statSync(file, { throwIfNoEntry: false })?.size ?? 0;
  return size(path) + size(`${path}-wal`);
}
