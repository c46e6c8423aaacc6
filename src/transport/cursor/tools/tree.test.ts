import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { LsDirectoryTreeNodeSchema } from "../gen/agent/v1/common_pb.js";
import { renderTree } from "./tree.ts";

const root = create(LsDirectoryTreeNodeSchema, {
  absPath: "/w",
  childrenWereProcessed: true,
  childrenFiles: [{ name: "z.txt" }, { name: "a.txt" }],
  childrenDirs: [
    { absPath: "/w/src", childrenWereProcessed: true, childrenFiles: [{ name: "main.ts" }] },
    {
      absPath: "/w/node_modules",
      childrenWereProcessed: false,
      numFiles: 1200,
      fullSubtreeExtensionCounts: { ".js": 1000, ".ts": 200 },
    },
  ],
});

test("directories first with '/', sorted, indented; unexpanded directories summarised", () => {
  assert.equal(
    renderTree(root, 100),
    [
      "/w/",
      "  node_modules/ (1200 files: 1000 .js, 200 .ts)",
      "  src/",
      "    main.ts",
      "  a.txt",
      "  z.txt",
    ].join("\n"),
  );
});

test("a listing longer than the budget is cut and the cut is counted", () => {
  const text = renderTree(root, 3);
  assert.equal(text.split("\n").length, 4);
  assert.match(text, /\[… 3 more entries not shown\]/);
});
