import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import {
  createPathEncryptionKeys,
  loadPathEncryptionKeys,
  PATH_KEYS_FILE,
} from "./path-encryption-keys.ts";

const root = mkdtempSync(path.join(tmpdir(), "cursor-byok-keys-"));
after(() => rmSync(root, { recursive: true, force: true }));

test("keys are made once per data directory and read back unchanged", () => {
  const directory = path.join(root, "fresh", "data");
  const first = loadPathEncryptionKeys(directory);
  assert.match(first.user, /^[A-Za-z0-9_-]{43}$/);
  assert.match(first.team, /^[A-Za-z0-9_-]{43}$/);
  assert.notEqual(first.user, first.team);
  assert.deepEqual(loadPathEncryptionKeys(directory), first);
  const file = path.join(directory, PATH_KEYS_FILE);
  assert.deepEqual(JSON.parse(readFileSync(file, "utf8")), first);
  if (process.platform !== "win32") assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.notDeepEqual(loadPathEncryptionKeys(path.join(root, "other")), first);
});

test("a damaged key file is refused, not replaced", () => {
  const directory = path.join(root, "damaged");
  loadPathEncryptionKeys(directory);
  const file = path.join(directory, PATH_KEYS_FILE);
  writeFileSync(file, "{not json");
  assert.throws(
    () => loadPathEncryptionKeys(directory),
    /path-encryption-keys\.json: not valid JSON/,
  );
  writeFileSync(file, JSON.stringify({ user: "k" }));
  assert.throws(() => loadPathEncryptionKeys(directory), /must hold non-empty strings/);
  assert.equal(readFileSync(file, "utf8"), JSON.stringify({ user: "k" }));
});

test("fresh keys are 32 random bytes each", () => {
  const keys = createPathEncryptionKeys();
  assert.equal(Buffer.from(keys.user, "base64url").length, 32);
  assert.equal(Buffer.from(keys.team, "base64url").length, 32);
});
