import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type TestContext, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import {
  DeleteArgsSchema,
  DiagnosticsArgsSchema,
  LsArgsSchema,
  ReadArgsSchema,
  WriteArgsSchema,
} from "../cursor/gen/agent/v1/exec_files_pb.js";
import { runDelete, runDiagnostics, runLs, runRead, runWrite } from "./exec-files.ts";

async function workspaceFor(t: TestContext): Promise<string> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), "exec-files-")));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test("read: text content with line count and size; a range; binary as data; not found", async (t) => {
  const ws = await workspaceFor(t);
  await writeFile(join(ws, "a.txt"), "l1\nl2\nl3");
  await writeFile(join(ws, "b.bin"), Buffer.from([1, 0, 2]));

  const whole = await runRead(create(ReadArgsSchema, { path: "a.txt" }), ws);
  assert.equal(whole.result.case, "success");
  assert.deepEqual(whole.result.value?.output, { case: "content", value: "l1\nl2\nl3" });
  assert.equal(whole.result.value?.totalLines, 3);
  assert.equal(whole.result.value?.fileSize, 8n);
  assert.equal(whole.result.value?.rangeApplied, false);

  const ranged = await runRead(create(ReadArgsSchema, { path: "a.txt", offset: 2, limit: 1 }), ws);
  assert.equal(ranged.result.case === "success" && ranged.result.value.output.value, "l2");
  assert.equal(ranged.result.case === "success" && ranged.result.value.rangeApplied, true);

  const binary = await runRead(create(ReadArgsSchema, { path: join(ws, "b.bin") }), ws);
  assert.equal(binary.result.case === "success" && binary.result.value.output.case, "data");

  const missing = await runRead(create(ReadArgsSchema, { path: "nope.txt" }), ws);
  assert.deepEqual(missing.result.case === "fileNotFound" && missing.result.value.path, "nope.txt");

  const directory = await runRead(create(ReadArgsSchema, { path: "." }), ws);
  assert.equal(directory.result.case, "invalidFile");
});

test("write: creates parent directories; reports lines and size", async (t) => {
  const ws = await workspaceFor(t);
  const result = await runWrite(
    create(WriteArgsSchema, {
      path: "deep/er/f.txt",
      fileText: "a\nb\n",
      returnFileContentAfterWrite: true,
    }),
    ws,
  );
  assert.equal(result.result.case, "success");
  assert.equal(result.result.value?.linesCreated, 2);
  assert.equal(result.result.value?.fileSize, 4);
  assert.equal(result.result.value?.fileContentAfterWrite, "a\nb\n");
  assert.equal(await readFile(join(ws, "deep", "er", "f.txt"), "utf8"), "a\nb\n");
});

test("delete: removes a file and returns its content; not found; a directory", async (t) => {
  const ws = await workspaceFor(t);
  await writeFile(join(ws, "gone.txt"), "bye");
  await mkdir(join(ws, "dir"));
  const deleted = await runDelete(create(DeleteArgsSchema, { path: "gone.txt" }), ws);
  assert.equal(deleted.result.case, "success");
  assert.equal(deleted.result.value?.prevContent, "bye");
  assert.equal(deleted.result.value?.fileSize, 3n);
  await assert.rejects(stat(join(ws, "gone.txt")));
  const again = await runDelete(create(DeleteArgsSchema, { path: "gone.txt" }), ws);
  assert.equal(again.result.case, "fileNotFound");
  const dir = await runDelete(create(DeleteArgsSchema, { path: "dir" }), ws);
  assert.equal(dir.result.case, "notFile");
});

test("ls: a sorted tree with file counts per extension; .git and ignore globs left out", async (t) => {
  const ws = await workspaceFor(t);
  await mkdir(join(ws, "src", "lib"), { recursive: true });
  await mkdir(join(ws, ".git"));
  await mkdir(join(ws, "dist"));
  await writeFile(join(ws, "src", "b.ts"), "");
  await writeFile(join(ws, "src", "a.ts"), "");
  await writeFile(join(ws, "src", "lib", "c.js"), "");
  await writeFile(join(ws, "README"), "");
  await writeFile(join(ws, "dist", "out.js"), "");
  await writeFile(join(ws, ".git", "HEAD"), "");

  const result = await runLs(create(LsArgsSchema, { path: ws, ignore: ["dist"] }), ws);
  assert.equal(result.result.case, "success");
  const root = result.result.value?.directoryTreeRoot;
  assert.equal(root?.absPath, ws);
  assert.deepEqual(
    root?.childrenDirs.map((dir) => dir.absPath),
    [join(ws, "src")],
  );
  assert.deepEqual(
    root?.childrenFiles.map((file) => file.name),
    ["README"],
  );
  const src = root?.childrenDirs[0];
  assert.deepEqual(
    src?.childrenFiles.map((file) => file.name),
    ["a.ts", "b.ts"],
  );
  assert.equal(src?.childrenWereProcessed, true);
  assert.equal(root?.numFiles, 4);
  assert.deepEqual(root?.fullSubtreeExtensionCounts, { "": 1, ".ts": 2, ".js": 1 });

  const missing = await runLs(create(LsArgsSchema, { path: "nope" }), ws);
  assert.equal(missing.result.case, "error");
});

test("diagnostics: none for an existing file; file_not_found otherwise", async (t) => {
  const ws = await workspaceFor(t);
  await writeFile(join(ws, "x.ts"), "");
  const ok = await runDiagnostics(create(DiagnosticsArgsSchema, { path: "x.ts" }), ws);
  assert.equal(ok.result.case, "success");
  assert.equal(ok.result.value?.totalDiagnostics, 0);
  const missing = await runDiagnostics(create(DiagnosticsArgsSchema, { path: "y.ts" }), ws);
  assert.equal(missing.result.case, "fileNotFound");
});
