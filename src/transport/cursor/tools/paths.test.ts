import assert from "node:assert/strict";
import { test } from "node:test";
import { isWindowsPath, resolvePath } from "./paths.ts";

test("relative paths resolve against a POSIX root", () => {
  assert.equal(resolvePath("/home/dev/p", "src/a.ts"), "/home/dev/p/src/a.ts");
  assert.equal(resolvePath("/home/dev/p", "./src/../b.ts"), "/home/dev/p/b.ts");
  assert.equal(resolvePath("/home/dev/p", "/etc/hosts"), "/etc/hosts");
  assert.equal(resolvePath("/home/dev/p", ""), "/home/dev/p");
  assert.equal(resolvePath("/home/dev/p", "."), "/home/dev/p");
});

test("Windows roots resolve with Windows rules", () => {
  assert.equal(resolvePath("C:\\Users\\dev\\p", "src\\a.ts"), "C:\\Users\\dev\\p\\src\\a.ts");
  assert.equal(resolvePath("C:\\Users\\dev\\p", "D:\\x.txt"), "D:\\x.txt");
  assert.ok(isWindowsPath("\\\\server\\share"));
  assert.ok(!isWindowsPath("/c/x"));
});

test("without a root the path is passed through", () => {
  assert.equal(resolvePath("", " src/a.ts "), "src/a.ts");
});
