import assert from "node:assert/strict";
import { test } from "node:test";
import { execOf, execReply, type Reply, resultText, runTool, WORKSPACE } from "../testing.ts";
import { replaceText } from "./edit-file.ts";

const BEFORE = "function add(a, b) {\n  return a - b;\n}\n";

const readOk =
  (content: string): Reply =>
  (state) =>
    execReply(state, {
      case: "readResult",
      value: {
        result: { case: "success", value: { output: { case: "content", value: content } } },
      },
    });

const writeOk: Reply = (state) =>
  execReply(state, {
    case: "writeResult",
    value: { result: { case: "success", value: { linesCreated: 3 } } },
  });

test("edit = read → replace on the server → write, one operation", () => {
  const run = runTool(
    "edit_file",
    { path: "src/math.ts", old_string: "a - b", new_string: "a + b" },
    [readOk(BEFORE), writeOk],
  );
  assert.equal(run.requests.length, 2);
  const read = execOf(run.requests[0]);
  const write = execOf(run.requests[1]);
  assert.equal(read.case, "readArgs");
  assert.equal(write.case, "writeArgs");
  if (write.case === "writeArgs") {
    assert.equal(write.value.path, `${WORKSPACE}/src/math.ts`);
    assert.equal(write.value.fileText, "function add(a, b) {\n  return a + b;\n}\n");
  }
  assert.equal(
    resultText(run.result),
    `Edited ${WORKSPACE}/src/math.ts: replaced 1 occurrence (+1 -1 lines).`,
  );
  assert.equal(run.result.isError, false);
  // Two execs of one operation: different numeric ids and exec ids.
  assert.ok(
    run.requests[0]?.message.case === "execServerMessage" &&
      run.requests[1]?.message.case === "execServerMessage",
  );
  assert.notEqual(run.requests[0].message.value.id, run.requests[1].message.value.id);
  assert.notEqual(run.requests[0].message.value.execId, run.requests[1].message.value.execId);
});

test("the completed UI edit carries before, after and a diff", () => {
  const run = runTool(
    "edit_file",
    { path: "src/math.ts", old_string: "a - b", new_string: "a + b" },
    [readOk(BEFORE), writeOk],
  );
  const completed = run.messages.flatMap((message) =>
    message.message.case === "interactionUpdate" &&
    message.message.value.message.case === "toolCallCompleted"
      ? [message.message.value.message.value]
      : [],
  );
  const tool = completed[0]?.toolCall?.tool;
  assert.ok(tool?.case === "editToolCall");
  const result = tool.value.result?.result;
  assert.ok(result?.case === "success");
  assert.equal(result.value.beforeFullFileContent, BEFORE);
  assert.equal(result.value.afterFullFileContent, "function add(a, b) {\n  return a + b;\n}\n");
  assert.match(result.value.diffString ?? "", /- {2}return a - b;\n\+ {2}return a \+ b;/);
});

test("missing old text: a clear error, and nothing is written", () => {
  const run = runTool("edit_file", { path: "m.ts", old_string: "a * b", new_string: "x" }, [
    readOk(BEFORE),
  ]);
  assert.equal(run.requests.length, 1, "only the read");
  assert.equal(run.result.isError, true);
  assert.match(resultText(run.result), /old_string was not found in .*m.ts/);
});

test("ambiguous old text: a clear error unless replace_all", () => {
  const text = "x = 1;\nx = 1;\n";
  const ambiguous = runTool(
    "edit_file",
    { path: "m.ts", old_string: "x = 1;", new_string: "x = 2;" },
    [readOk(text)],
  );
  assert.equal(ambiguous.result.isError, true);
  assert.match(resultText(ambiguous.result), /occurs 2 times .*set replace_all to true/);
  const all = runTool(
    "edit_file",
    { path: "m.ts", old_string: "x = 1;", new_string: "x = 2;", replace_all: true },
    [readOk(text), writeOk],
  );
  assert.match(resultText(all.result), /replaced 2 occurrences/);
});

test("empty or unchanged old text is refused before anything is sent", () => {
  for (const args of [
    { path: "m.ts", old_string: "", new_string: "x" },
    { path: "m.ts", old_string: "same", new_string: "same" },
  ]) {
    const run = runTool("edit_file", args, []);
    assert.equal(run.requests.length, 0);
    assert.equal(run.result.isError, true);
  }
});

test("a truncated, ranged or binary read is never written back", () => {
  const replies: Reply[] = [
    (state) =>
      execReply(state, {
        case: "readResult",
        value: {
          result: {
            case: "success",
            value: { output: { case: "content", value: BEFORE }, truncated: true },
          },
        },
      }),
    (state) =>
      execReply(state, {
        case: "readResult",
        value: {
          result: {
            case: "success",
            value: { output: { case: "content", value: BEFORE }, rangeApplied: true },
          },
        },
      }),
    (state) =>
      execReply(state, {
        case: "readResult",
        value: {
          result: {
            case: "success",
            value: { output: { case: "data", value: new Uint8Array([1]) } },
          },
        },
      }),
  ];
  for (const reply of replies) {
    const run = runTool("edit_file", { path: "m.ts", old_string: "a - b", new_string: "a + b" }, [
      reply,
    ]);
    assert.equal(run.requests.length, 1);
    assert.equal(run.result.isError, true);
  }
});

test("read and write failures are isError results", () => {
  const notFound = runTool("edit_file", { path: "nope.ts", old_string: "a", new_string: "b" }, [
    (state) =>
      execReply(state, {
        case: "readResult",
        value: { result: { case: "fileNotFound", value: {} } },
      }),
  ]);
  assert.match(resultText(notFound.result), /^File not found: /);
  const denied = runTool("edit_file", { path: "m.ts", old_string: "a - b", new_string: "a + b" }, [
    readOk(BEFORE),
    (state) =>
      execReply(state, {
        case: "writeResult",
        value: { result: { case: "permissionDenied", value: { error: "EROFS" } } },
      }),
  ]);
  assert.equal(denied.result.isError, true);
  assert.match(resultText(denied.result), /Permission denied writing .*EROFS/);
});

test("replacement is literal ($ patterns are not special) and handles CRLF files", () => {
  assert.deepEqual(
    replaceText("cost = 1", { path: "p", oldString: "1", newString: "$&$1", replaceAll: false }),
    {
      ok: true,
      text: "cost = $&$1",
      count: 1,
    },
  );
  const crlf = "a\r\nb\r\nc\r\n";
  assert.deepEqual(
    replaceText(crlf, { path: "p", oldString: "a\nb", newString: "x\ny", replaceAll: false }),
    {
      ok: true,
      text: "x\r\ny\r\nc\r\n",
      count: 1,
    },
  );
});
