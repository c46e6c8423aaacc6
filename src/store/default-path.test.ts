import assert from "node:assert/strict";
import { test } from "node:test";
import { toDefaultDatabasePath } from "./default-path.ts";

const cases: [string, Parameters<typeof toDefaultDatabasePath>[0], string][] = [
  [
    "Linux with an absolute XDG_DATA_HOME",
    { env: { XDG_DATA_HOME: "/data/me" }, platform: "linux", homeDir: "/home/me" },
    "/data/me/cursor-byok/cursor-byok.db",
  ],
  [
    "Linux without XDG_DATA_HOME",
    { env: {}, platform: "linux", homeDir: "/home/me" },
    "/home/me/.local/share/cursor-byok/cursor-byok.db",
  ],
  [
    "Linux with a relative XDG_DATA_HOME (invalid by the XDG rules, so ignored)",
    { env: { XDG_DATA_HOME: "data" }, platform: "linux", homeDir: "/home/me" },
    "/home/me/.local/share/cursor-byok/cursor-byok.db",
  ],
  [
    "Linux with an empty XDG_DATA_HOME",
    { env: { XDG_DATA_HOME: "" }, platform: "linux", homeDir: "/home/me" },
    "/home/me/.local/share/cursor-byok/cursor-byok.db",
  ],
  [
    "FreeBSD follows the XDG rules",
    { env: {}, platform: "freebsd", homeDir: "/usr/home/me" },
    "/usr/home/me/.local/share/cursor-byok/cursor-byok.db",
  ],
  [
    "macOS ignores XDG_DATA_HOME",
    { env: { XDG_DATA_HOME: "/data/me" }, platform: "darwin", homeDir: "/Users/me" },
    "/Users/me/Library/Application Support/cursor-byok/cursor-byok.db",
  ],
  [
    "Windows with APPDATA",
    {
      env: { APPDATA: "C:\\Users\\me\\AppData\\Roaming" },
      platform: "win32",
      homeDir: "C:\\Users\\me",
    },
    "C:\\Users\\me\\AppData\\Roaming\\cursor-byok\\cursor-byok.db",
  ],
  [
    "Windows without APPDATA",
    { env: {}, platform: "win32", homeDir: "C:\\Users\\me" },
    "C:\\Users\\me\\AppData\\Roaming\\cursor-byok\\cursor-byok.db",
  ],
];

for (const [name, inputs, expected] of cases) {
  test(`default database path: ${name}`, () => {
    assert.equal(toDefaultDatabasePath(inputs), expected);
  });
}
