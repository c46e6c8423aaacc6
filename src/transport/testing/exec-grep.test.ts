import assert from "node:assert/strict";
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  GrepArgsSchema,
  type GrepResult,
  type GrepUnionResult,
} from "../cursor/gen/agent/v1/exec_files_pb.js";
import { runGrep } from "./exec-grep.ts";

let workspace = "";

before(async () => {
  workspace = await realpath(await mkdtemp(join(tmpdir(), "exec-grep-")));
  await mkdir(join(workspace, "src", "util"), { recursive: true });
  await mkdir(join(workspace, ".hidden"));
  await writeFile(join(workspace, "src", "a.ts"), "const alpha = 1;\nconst beta = 2;\nalpha();\n");
  await writeFile(join(workspace, "src", "util", "b.ts"), "export const Alpha = 3;\n");
  await writeFile(join(workspace, "src", "c.py"), "alpha = 4\n");
  await writeFile(join(workspace, "README.md"), "# alpha\nline\nline\nbeta\n");
  await writeFile(join(workspace, "empty.ts"), "");
  await writeFile(join(workspace, ".hidden", "h.ts"), "alpha\n");
  await writeFile(join(workspace, "bin.dat"), Buffer.from([0x61, 0x6c, 0x70, 0x68, 0x61, 0, 1]));
});

after(() => rm(workspace, { recursive: true, force: true }));

async function grep(args: MessageInitShape<typeof GrepArgsSchema>): Promise<GrepUnionResult> {
  const result: GrepResult = await runGrep(create(GrepArgsSchema, args), workspace);
  assert.equal(result.result.case, "success", JSON.stringify(result.result.value));
  const success = result.result.value as { workspaceResults: Record<string, GrepUnionResult> };
  assert.deepEqual(Object.keys(success.workspaceResults), [workspace]);
  return success.workspaceResults[workspace] as GrepUnionResult;
}

test("files_with_matches: sorted relative paths; hidden and binary files skipped", async () => {
  const union = await grep({ pattern: "alpha", outputMode: "files_with_matches" });
  assert.equal(union.result.case, "files");
  assert.deepEqual(union.result.value?.files, ["README.md", "src/a.ts", "src/c.py"]);
  assert.equal(union.result.value?.totalFiles, 3);
});

test("case_insensitive, type and an absolute path (absolute output)", async () => {
  const union = await grep({
    pattern: "alpha",
    caseInsensitive: true,
    type: "ts",
    path: join(workspace, "src"),
    outputMode: "files_with_matches",
  });
  assert.deepEqual(union.result.case === "files" && union.result.value.files, [
    join(workspace, "src", "a.ts"),
    join(workspace, "src", "util", "b.ts"),
  ]);
});

test("content mode: line numbers and context lines", async () => {
  const union = await grep({ pattern: "beta", context: 1, glob: "*.md" });
  assert.equal(union.result.case, "content");
  const content = union.result.value;
  assert.equal(content?.matches.length, 1);
  const file = content?.matches[0];
  assert.equal(file?.file, "README.md");
  assert.deepEqual(
    file?.matches.map((match) => [match.lineNumber, match.content, match.isContextLine]),
    [
      [3, "line", true],
      [4, "beta", false],
    ],
  );
  assert.equal(content?.totalMatchedLines, 1);
  assert.equal(content?.totalLines, 2);
});

test("count mode, and head_limit / offset cut the entries", async () => {
  const counts = await grep({ pattern: "alpha", outputMode: "count" });
  assert.equal(counts.result.case, "count");
  assert.deepEqual(
    counts.result.value?.counts.map((entry) => [entry.file, entry.count]),
    [
      ["README.md", 1],
      ["src/a.ts", 2],
      ["src/c.py", 1],
    ],
  );
  assert.equal(counts.result.value?.totalMatches, 4);

  const limited = await grep({
    pattern: "alpha",
    outputMode: "files_with_matches",
    offset: 1,
    headLimit: 1,
  });
  assert.equal(limited.result.case, "files");
  assert.deepEqual(limited.result.value?.files, ["src/a.ts"]);
  assert.equal(limited.result.value?.clientTruncated, true);
  assert.equal(limited.result.value?.totalFiles, 3);
});

test("a glob search (empty pattern, files mode) lists matching non-empty files", async () => {
  const union = await grep({ pattern: "", glob: "**/*.ts", outputMode: "files_with_matches" });
  assert.deepEqual(union.result.case === "files" && union.result.value.files, [
    "src/a.ts",
    "src/util/b.ts",
  ]);
});

test("multiline patterns match across lines", async () => {
  const union = await grep({ pattern: "alpha = 1;\\nconst beta", multiline: true });
  assert.equal(union.result.case, "content");
  assert.deepEqual(
    union.result.value?.matches.map((file) => [file.file, file.matches.map((m) => m.lineNumber)]),
    [["src/a.ts", [1, 2]]],
  );
});

test("errors: a bad regex, an unknown type, a missing path", async () => {
  for (const args of [
    { pattern: "(" },
    { pattern: "a", type: "klingon" },
    { pattern: "a", path: "missing" },
  ]) {
    const result = await runGrep(create(GrepArgsSchema, args), workspace);
    assert.equal(result.result.case, "error", JSON.stringify(args));
  }
});
