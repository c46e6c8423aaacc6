import assert from "node:assert/strict";
import { test } from "node:test";
import {
  type PlatformInputs,
  toAbsolutePath,
  toConfigLocation,
  toDefaultConfigPath,
} from "./paths.ts";

const defaults: [string, PlatformInputs, string][] = [
  [
    "Linux with an absolute XDG_CONFIG_HOME",
    { env: { XDG_CONFIG_HOME: "/conf/me" }, platform: "linux", homeDir: "/home/me" },
    "/conf/me/cursor-byok/config.yaml",
  ],
  [
    "Linux without XDG_CONFIG_HOME",
    { env: {}, platform: "linux", homeDir: "/home/me" },
    "/home/me/.config/cursor-byok/config.yaml",
  ],
  [
    "Linux with a relative XDG_CONFIG_HOME (invalid by the XDG rules, so ignored)",
    { env: { XDG_CONFIG_HOME: "conf" }, platform: "linux", homeDir: "/home/me" },
    "/home/me/.config/cursor-byok/config.yaml",
  ],
  [
    "macOS ignores XDG_CONFIG_HOME",
    { env: { XDG_CONFIG_HOME: "/conf/me" }, platform: "darwin", homeDir: "/Users/me" },
    "/Users/me/Library/Application Support/cursor-byok/config.yaml",
  ],
  [
    "Windows with APPDATA",
    { env: { APPDATA: "D:\\Roaming" }, platform: "win32", homeDir: "C:\\Users\\me" },
    "D:\\Roaming\\cursor-byok\\config.yaml",
  ],
  [
    "Windows without APPDATA",
    { env: {}, platform: "win32", homeDir: "C:\\Users\\me" },
    "C:\\Users\\me\\AppData\\Roaming\\cursor-byok\\config.yaml",
  ],
];

for (const [name, inputs, expected] of defaults) {
  test(`default config path: ${name}`, () => {
    assert.equal(toDefaultConfigPath(inputs), expected);
  });
}

const linux = { platform: "linux", homeDir: "/home/me", cwd: "/work" } as const;

test("--config wins over CURSOR_BYOK_CONFIG, which wins over the default", () => {
  const env = { CURSOR_BYOK_CONFIG: "/etc/byok.yaml" };
  assert.deepEqual(toConfigLocation("mine.yaml", { ...linux, env }), {
    path: "/work/mine.yaml",
    namedBy: "--config",
  });
  assert.deepEqual(toConfigLocation(undefined, { ...linux, env }), {
    path: "/etc/byok.yaml",
    namedBy: "CURSOR_BYOK_CONFIG",
  });
  assert.deepEqual(toConfigLocation(undefined, { ...linux, env: { CURSOR_BYOK_CONFIG: " " } }), {
    path: "/home/me/.config/cursor-byok/config.yaml",
    namedBy: undefined,
  });
});

test("paths: ~ is the home directory, relative paths resolve against the base", () => {
  assert.equal(toAbsolutePath("~", "/base", linux), "/home/me");
  assert.equal(toAbsolutePath("~/data", "/base", linux), "/home/me/data");
  assert.equal(toAbsolutePath("data", "/base", linux), "/base/data");
  assert.equal(toAbsolutePath("/abs/data", "/base", linux), "/abs/data");
  assert.equal(toAbsolutePath("~user/x", "/base", linux), "/base/~user/x");
  assert.equal(
    toAbsolutePath("~\\data", "C:\\base", { platform: "win32", homeDir: "C:\\Users\\me" }),
    "C:\\Users\\me\\data",
  );
});
