import assert from "node:assert/strict";
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import {
  applySettings,
  readKeys,
  readSettingsText,
  revertSettings,
  SettingsError,
  toProxySettings,
  toSettingsPath,
  writeSettingsText,
} from "./settings-file.ts";

const FILE = "/home/u/.config/Cursor/User/settings.json";
const PROXY = toProxySettings("http://127.0.0.1:8766");

const JSONC = `{
    // Font: keep it big.
    "editor.fontSize": 15,
    /* block comment */
    "http.proxy": "http://corp.example:3128", // the company proxy
    "files.exclude": {
        "**/.git": true,
    },
}
`;

describe("Cursor's settings file", () => {
  test("per-OS paths", () => {
    assert.equal(
      toSettingsPath({ platform: "darwin", env: {}, homeDir: "/Users/u" }),
      "/Users/u/Library/Application Support/Cursor/User/settings.json",
    );
    assert.equal(
      toSettingsPath({
        platform: "win32",
        env: { APPDATA: "C:\\Users\\u\\AppData\\Roaming" },
        homeDir: "C:\\Users\\u",
      }),
      "C:\\Users\\u\\AppData\\Roaming\\Cursor\\User\\settings.json",
    );
    assert.equal(toSettingsPath({ platform: "linux", env: {}, homeDir: "/home/u" }), FILE);
    assert.equal(
      toSettingsPath({ platform: "linux", env: { XDG_CONFIG_HOME: "/x" }, homeDir: "/home/u" }),
      "/x/Cursor/User/settings.json",
    );
  });

  test("setting the keys keeps comments, trailing commas and other settings", () => {
    const { text, changes } = applySettings(FILE, JSONC, PROXY);
    for (const kept of [
      "// Font: keep it big.",
      "/* block comment */",
      '"editor.fontSize": 15',
      '"**/.git": true,',
    ]) {
      assert.ok(text.includes(kept), `kept: ${kept}`);
    }
    const now = readKeys(FILE, text, Object.keys(PROXY));
    assert.deepEqual(now.get("http.proxy"), { present: true, value: "http://127.0.0.1:8766" });
    assert.deepEqual(now.get("cursor.general.disableHttp2"), { present: true, value: true });
    assert.deepEqual(changes.find((c) => c.key === "http.proxy")?.previous, {
      present: true,
      value: "http://corp.example:3128",
    });
    assert.deepEqual(changes.find((c) => c.key === "http.proxySupport")?.previous, {
      present: false,
    });
    assert.ok(!text.includes("proxyStrictSSL"), "never turns off certificate checks");
    // The file's own indentation (4 spaces) is used for added keys.
    assert.match(text, /\n {4}"http\.proxySupport": "on"/);
  });

  test("reverting restores each key's previous value and removes added keys", () => {
    const { text, changes } = applySettings(FILE, JSONC, PROXY);
    const reverted = revertSettings(FILE, text, changes);
    assert.deepEqual(reverted.keptByUser, []);
    const now = readKeys(FILE, reverted.text, Object.keys(PROXY));
    assert.deepEqual(now.get("http.proxy"), { present: true, value: "http://corp.example:3128" });
    assert.deepEqual(now.get("http.proxySupport"), { present: false });
    assert.ok(reverted.text.includes("// the company proxy"));
  });

  test("a key the user changed after setup is left as the user set it", () => {
    const { text, changes } = applySettings(FILE, JSONC, PROXY);
    const edited = text.replace('"http.proxySupport": "on"', '"http.proxySupport": "fallback"');
    const reverted = revertSettings(FILE, edited, changes);
    assert.deepEqual(reverted.keptByUser, ["http.proxySupport"]);
    assert.deepEqual(
      readKeys(FILE, reverted.text, ["http.proxySupport"]).get("http.proxySupport"),
      {
        present: true,
        value: "fallback",
      },
    );
    assert.deepEqual(readKeys(FILE, reverted.text, ["http.proxy"]).get("http.proxy"), {
      present: true,
      value: "http://corp.example:3128",
    });
  });

  test("a file with a syntax error is refused with its line and column", () => {
    const broken = '{\n  "a": 1\n  "b": 2\n}\n';
    assert.throws(
      () => applySettings(FILE, broken, PROXY),
      (error: unknown) =>
        error instanceof SettingsError && /settings\.json: 3:3: Comma expected/.test(error.message),
    );
  });

  test("a file whose top level is not an object is refused", () => {
    assert.throws(() => applySettings(FILE, "[1, 2]", PROXY), /top level is not an object/);
  });

  test("a missing file in an existing folder is created; a missing folder is refused", () => {
    const dir = mkdtempSync(join(tmpdir(), "cursor-byok-settings-"));
    try {
      assert.equal(readSettingsText(join(dir, "settings.json")), undefined);
      assert.throws(
        () => readSettingsText(join(dir, "Cursor", "User", "settings.json")),
        /not found, and neither is its folder .*Is Cursor installed/,
      );
      const created = applySettings(FILE, undefined, PROXY);
      assert.deepEqual(JSON.parse(created.text), PROXY);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("an unreadable file gets a clear message", {
    skip: process.getuid?.() === 0 && "root reads any file",
  }, () => {
    const dir = mkdtempSync(join(tmpdir(), "cursor-byok-settings-"));
    try {
      const file = join(dir, "settings.json");
      writeFileSync(file, "{}");
      chmodSync(file, 0o000);
      assert.throws(() => readSettingsText(file), /permission denied/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a directory where the file should be gets a clear message", () => {
    const dir = mkdtempSync(join(tmpdir(), "cursor-byok-settings-"));
    try {
      mkdirSync(join(dir, "settings.json"));
      assert.throws(() => readSettingsText(join(dir, "settings.json")), /is a directory/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a blank file and a file with a byte-order mark are settings files too", () => {
    for (const blank of ["", "  \n"]) {
      const { text } = applySettings(FILE, blank, PROXY);
      assert.deepEqual(JSON.parse(text), PROXY);
    }
    const withBom = '\uFEFF{\n  // kept\n  "a": 1\n}\n';
    const { text, changes } = applySettings(FILE, withBom, PROXY);
    assert.ok(text.startsWith("\uFEFF{"), "the mark stays");
    assert.ok(text.includes("// kept"));
    assert.equal(revertSettings(FILE, text, changes).text, withBom);
  });

  test("a symbolic link is followed: its target changes, the link stays", () => {
    const dir = mkdtempSync(join(tmpdir(), "cursor-byok-settings-"));
    try {
      const target = join(dir, "dotfiles-settings.json");
      const link = join(dir, "settings.json");
      writeFileSync(target, "{}\n");
      symlinkSync(target, link);
      writeSettingsText(link, '{ "a": 1 }\n');
      assert.equal(lstatSync(link).isSymbolicLink(), true);
      assert.equal(readFileSync(target, "utf8"), '{ "a": 1 }\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
