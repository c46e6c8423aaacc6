/**
 * The journal of IDE mode: what `ide setup` changed, so that `ide undo` can put each thing back
 * and `serve` knows to run the proxy. Kept in `<data directory>/ide/setup.json`, written before
 * each change it records (a crash mid-setup leaves a journal undo can act on), atomically.
 */
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { writeAtomically } from "./ca.ts";
import type { KeyChange } from "./settings-file.ts";
import type { TrustStep } from "./trust.ts";

export const JOURNAL_VERSION = 1;

export interface SettingsRecord {
  readonly file: string;
  /** The file existed before setup. */
  readonly existed: boolean;
  /** SHA-256 of the file before setup (absent when it did not exist). */
  readonly originalSha256?: string;
  /** SHA-256 of the file as setup wrote it: when it still matches, undo restores the backup. */
  readonly writtenSha256: string;
  /** A byte-for-byte copy of the file before setup. */
  readonly backupFile?: string;
  readonly changes: readonly KeyChange[];
}

export interface IdeJournal {
  readonly version: number;
  readonly createdAt: string;
  /** What Cursor's `http.proxy` points at. */
  readonly proxyUrl: string;
  readonly ca: {
    readonly certFile: string;
    readonly sha256: string;
    readonly sha1: string;
    readonly serial: string;
  };
  readonly settings?: SettingsRecord;
  /** Trust steps, recorded before each is carried out. */
  readonly trust: readonly TrustStep[];
}

export const JOURNAL_FILE = "setup.json";

export function toIdeDirectory(dataDirectory: string): string {
  return path.join(dataDirectory, "ide");
}

export type JournalRead =
  | { readonly type: "none" }
  | { readonly type: "ok"; readonly journal: IdeJournal }
  | { readonly type: "bad"; readonly problem: string };

export function readJournal(ideDirectory: string): JournalRead {
  const file = path.join(ideDirectory, JOURNAL_FILE);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { type: "none" };
    return {
      type: "bad",
      problem: `${file} cannot be read (${(error as NodeJS.ErrnoException).code})`,
    };
  }
  try {
    const journal = JSON.parse(text) as IdeJournal;
    if (journal.version !== JOURNAL_VERSION || typeof journal.proxyUrl !== "string") {
      return { type: "bad", problem: `${file} is not a journal this version understands` };
    }
    return { type: "ok", journal };
  } catch {
    return { type: "bad", problem: `${file} is damaged (not JSON)` };
  }
}

export function writeJournal(ideDirectory: string, journal: IdeJournal): void {
  writeAtomically(
    path.join(ideDirectory, JOURNAL_FILE),
    `${JSON.stringify(journal, null, 2)}\n`,
    0o600,
  );
}

export function removeJournal(ideDirectory: string): void {
  rmSync(path.join(ideDirectory, JOURNAL_FILE), { force: true });
}
