/**
 * The install's path-encryption keys (GetServerConfig `indexing_config` 9/10,
 * docs/protocol-coverage.md §5): made once, kept in the data directory, the same on every start and
 * for every server process that shares the directory.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { PathEncryptionKeys } from "./cursor/index.ts";

export const PATH_KEYS_FILE = "path-encryption-keys.json";

/** Two fresh keys: 32 random bytes each, base64url (the form the client itself generates). */
export function createPathEncryptionKeys(): PathEncryptionKeys {
  return {
    user: randomBytes(32).toString("base64url"),
    team: randomBytes(32).toString("base64url"),
  };
}

/**
 * Reads `<dataDirectory>/path-encryption-keys.json`, creating it (and the directory) on first
 * use. The file is written exclusively, so of two processes starting at once one writes and both
 * read the same keys. A damaged file is an error, never silently replaced: new keys would
 * invalidate what clients derived from the old ones.
 * @throws Error naming the file
 */
export function loadPathEncryptionKeys(dataDirectory: string): PathEncryptionKeys {
  const file = path.join(dataDirectory, PATH_KEYS_FILE);
  mkdirSync(dataDirectory, { recursive: true });
  try {
    writeFileSync(file, `${JSON.stringify(createPathEncryptionKeys(), null, 2)}\n`, {
      flag: "wx",
      mode: 0o600,
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  return readKeys(file);
}

function readKeys(file: string): PathEncryptionKeys {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new Error(`${file}: not valid JSON (${(error as Error).message}); restore or delete it`);
  }
  const { user, team } = (value ?? {}) as Record<string, unknown>;
  if (typeof user !== "string" || user === "" || typeof team !== "string" || team === "") {
    throw new Error(`${file}: must hold non-empty strings "user" and "team"; restore or delete it`);
  }
  return { user, team };
}
