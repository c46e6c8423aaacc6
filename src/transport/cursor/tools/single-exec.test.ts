import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import {
  ReadArgsSchema,
  ReadResultSchema,
  WriteResultSchema,
} from "../gen/agent/v1/exec_files_pb.js";
import { toOutput, toUnexpectedReply } from "./output.ts";
import { singleExec, toExecResult } from "./single-exec.ts";
import type { ClientReply, ToolEnv } from "./types.ts";

const env: ToolEnv = {
  workspaceRoot: "/work",
  toolCallID: "toolu_01",
  at: 0,
  todos: [],
  mode: "agent",
  terminalsFolder: "",
  askWebApproval: true,
};

const none = { case: undefined, value: undefined } as const;

const handler = singleExec<{ readonly path: string }, "readResult">({
  stage: "read",
  exec: (args, toolEnv) => ({
    case: "readArgs",
    value: create(ReadArgsSchema, { path: args.path, toolCallId: toolEnv.toolCallID }),
  }),
  result: "readResult",
  fromResult: (args, result) => toOutput(`read ${args.path}: ${result.result.case}`, none),
  toFailure: (_args, message) => toOutput(message, none, { isError: true }),
  couldNot: (args) => `The client could not read ${args.path}`,
});

const readReply: ClientReply = {
  type: "exec",
  result: {
    case: "readResult",
    value: create(ReadResultSchema, { result: { case: "fileNotFound", value: {} } }),
  },
};
const writeReply: ClientReply = {
  type: "exec",
  result: { case: "writeResult", value: create(WriteResultSchema) },
};

test("a single-exec tool sends its one exec and waits in its stage", () => {
  const progress = handler.start({ path: "a.ts" }, env);
  assert.equal(progress.type, "request");
  if (progress.type !== "request") return;
  assert.equal(progress.stage, "read");
  assert.equal(progress.data, null);
  assert.equal(progress.request.type, "exec");
  if (progress.request.type === "exec") {
    assert.equal(progress.request.exec.case, "readArgs");
    assert.equal(progress.request.exec.value.toolCallId, "toolu_01");
  }
});

test("the result of the expected kind is read; any other reply fails the call, saying what came", () => {
  const done = handler.resume({ path: "a.ts" }, "read", null, readReply, env);
  assert.deepEqual(done.type === "done" && [done.output.text, done.output.isError], [
    "read a.ts: fileNotFound",
    false,
  ]);
  const wrong = handler.resume({ path: "a.ts" }, "read", null, writeReply, env);
  assert.deepEqual(wrong.type === "done" && [wrong.output.text, wrong.output.isError], [
    toUnexpectedReply(writeReply),
    true,
  ]);
  assert.equal(toExecResult(writeReply, "readResult"), null);
  assert.equal(toExecResult(readReply, "readResult")?.result.case, "fileNotFound");
});

test("an exec the client could not run fails with the tool's words and the client's error", () => {
  const output = handler.failed({ path: "a.ts" }, "no such workspace", env);
  assert.equal(output.text, "The client could not read a.ts: no such workspace");
  assert.equal(output.isError, true);
});
