import assert from "node:assert/strict";
import { test } from "node:test";
import {
  callClient,
  execOf,
  execReply,
  resultText,
  runTool,
  T0,
  turnState,
  WORKSPACE,
} from "../testing.ts";
import { startToolCall } from "../tool-session.ts";

type ReadResultInit = Parameters<typeof execReply>[1] & { case: "readResult" };

function read(args: Record<string, string | number>, result: ReadResultInit["value"]["result"]) {
  return runTool("read_file", args, [
    (state) => execReply(state, { case: "readResult", value: { result } }),
  ]);
}

const FILE = "one\ntwo\nthree\nfour\nfive\n";

test("model arguments → read_args with the resolved path and the model's call id", () => {
  const run = read(
    { path: "src/a.ts" },
    { case: "success", value: { path: "", output: { case: "content", value: "" } } },
  );
  const exec = execOf(run.requests[0]);
  assert.equal(exec.case, "readArgs");
  if (exec.case === "readArgs") {
    assert.equal(exec.value.path, `${WORKSPACE}/src/a.ts`);
    assert.equal(exec.value.toolCallId, "toolu_01");
    assert.equal(exec.value.offset, undefined, "the range is applied on the server");
  }
});

test("success: numbered lines", () => {
  const run = read(
    { path: "a.txt" },
    { case: "success", value: { output: { case: "content", value: FILE } } },
  );
  assert.equal(resultText(run.result), "1|one\n2|two\n3|three\n4|four\n5|five");
  assert.equal(run.result.isError, false);
  assert.equal(run.result.toolCallId, "toolu_01");
  assert.equal(run.result.toolName, "read_file");
});

test("offset and limit select lines; the range is stated", () => {
  const run = read(
    { path: "a.txt", offset: 2, limit: 2 },
    { case: "success", value: { output: { case: "content", value: FILE } } },
  );
  assert.equal(
    resultText(run.result),
    "2|two\n3|three\n[Showing lines 2-3 of 5. Use offset and limit to read other lines.]",
  );
});

test("an offset past the end, an empty file and a client-truncated file say so", () => {
  const past = read(
    { path: "a.txt", offset: 9 },
    { case: "success", value: { output: { case: "content", value: FILE } } },
  );
  assert.match(resultText(past.result), /has 5 lines; offset 9 is past the end/);
  const empty = read(
    { path: "e.txt" },
    { case: "success", value: { output: { case: "content", value: "" } } },
  );
  assert.equal(resultText(empty.result), `${WORKSPACE}/e.txt is empty.`);
  const cut = read(
    { path: "big.txt" },
    { case: "success", value: { output: { case: "content", value: "x\n" }, truncated: true } },
  );
  assert.match(resultText(cut.result), /returned only part of this file/);
});

test("long lines and long files are cut, and the cuts are stated", () => {
  const long = read(
    { path: "l.txt" },
    { case: "success", value: { output: { case: "content", value: `${"y".repeat(3000)}\n` } } },
  );
  assert.match(resultText(long.result), /\[… line cut, 3000 characters\]/);
  const many = Array.from({ length: 2500 }, (_, i) => `line ${i + 1}`).join("\n");
  const run = read(
    { path: "m.txt" },
    { case: "success", value: { output: { case: "content", value: many } } },
  );
  const text = resultText(run.result);
  assert.match(text, /^ {3}1\|line 1\n/);
  assert.match(text, /\[Showing lines 1-2000 of 2500\./);
});

test("binary files are described; images are returned as images", () => {
  const bin = read(
    { path: "a.bin" },
    { case: "success", value: { output: { case: "data", value: new Uint8Array([0, 1, 2]) } } },
  );
  assert.match(resultText(bin.result), /binary file \(3 bytes\)/);
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1]);
  const image = read(
    { path: "logo.png" },
    { case: "success", value: { output: { case: "data", value: png } } },
  );
  assert.deepEqual(image.result.content[1], {
    type: "image",
    data: Buffer.from(png).toString("base64"),
    mimeType: "image/png",
  });
});

test("each error branch becomes an isError result naming the file", () => {
  const cases: [ReadResultInit["value"]["result"], RegExp][] = [
    [{ case: "fileNotFound", value: {} }, /^File not found: /],
    [{ case: "permissionDenied", value: {} }, /^Permission denied: /],
    [{ case: "invalidFile", value: { reason: "is a directory" } }, /is a directory/],
    [
      { case: "rejected", value: { reason: "outside workspace" } },
      /was rejected: outside workspace/,
    ],
    [{ case: "error", value: { error: "EIO" } }, /Could not read .*: EIO/],
    [{ case: undefined }, /empty read result/],
  ];
  for (const [result, pattern] of cases) {
    const run = read({ path: "x.txt" }, result);
    assert.equal(run.result.isError, true);
    assert.match(resultText(run.result), pattern);
  }
});

test("argument errors are isError results, and nothing is sent to the client", () => {
  const step = startToolCall(turnState(), callClient("read_file", { offset: 1 }), {
    at: T0,
    inputID: "i",
  });
  assert.deepEqual(step.messages, []);
  assert.ok(step.input !== null);
  assert.equal(step.input.message.isError, true);
  assert.match(
    resultText(step.input.message),
    /Invalid arguments for read_file: "path" is required/,
  );
});
