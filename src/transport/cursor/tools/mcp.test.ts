import assert from "node:assert/strict";
import { test } from "node:test";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { execOf, execReply, type Reply, resultText, runTool } from "../testing.ts";

type McpInit = (Parameters<typeof execReply>[1] & { case: "mcpResult" })["value"]["result"];

const ARGS = { title: "Bug", labels: ["p1"], count: 2, draft: false, meta: { team: "core" } };

function call(result: McpInit, extra: Reply[] = []) {
  return runTool("mcp__github__create_issue", ARGS, [
    ...extra,
    (state) => execReply(state, { case: "mcpResult", value: { result } }),
  ]);
}

test("model arguments → mcp_args: client names, JSON arguments as protobuf Values", () => {
  const run = call({
    case: "success",
    value: { content: [{ content: { case: "text", value: { text: "created #12" } } }] },
  });
  const exec = execOf(run.requests[0]);
  assert.ok(exec.case === "mcpArgs");
  assert.equal(exec.value.name, "github-create_issue");
  assert.equal(exec.value.providerIdentifier, "github");
  assert.equal(exec.value.toolName, "create_issue");
  assert.equal(exec.value.toolCallId, "toolu_01");
  const args = Object.fromEntries(
    Object.entries(exec.value.args).map(([key, value]) => [key, toJson(ValueSchema, value)]),
  );
  assert.deepEqual(args, ARGS);
  assert.equal(resultText(run.result), "created #12");
  assert.equal(run.result.isError, false);
});

test("images, structured content and the tool's own is_error", () => {
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47]);
  const image = call({
    case: "success",
    value: {
      content: [{ content: { case: "image", value: { data: png, mimeType: "image/png" } } }],
    },
  });
  assert.deepEqual(image.result.content[1], {
    type: "image",
    data: Buffer.from(png).toString("base64"),
    mimeType: "image/png",
  });
  const structured = call({ case: "success", value: { structuredContent: { id: 12 } } });
  assert.equal(resultText(structured.result), '{"id":12}');
  const failed = call({
    case: "success",
    value: { isError: true, content: [{ content: { case: "text", value: { text: "no repo" } } }] },
  });
  assert.equal(failed.result.isError, true);
});

test("an approval acknowledgement waits for the real result", () => {
  const run = call(
    { case: "success", value: { content: [{ content: { case: "text", value: { text: "ok" } } }] } },
    [
      (state) =>
        execReply(state, { case: "mcpResult", value: { result: { case: "approved", value: {} } } }),
    ],
  );
  assert.equal(resultText(run.result), "ok");
});

test("each failure branch is an isError result", () => {
  const cases: [McpInit, RegExp][] = [
    [{ case: "error", value: { error: "server crashed" } }, /server crashed/],
    [{ case: "rejected", value: { reason: "no" } }, /declined the call to create_issue: no/],
    [
      { case: "permissionDenied", value: { error: "denied" } },
      /Permission denied calling create_issue: denied/,
    ],
    [
      { case: "toolNotFound", value: { name: "create_issue", availableTools: ["list"] } },
      /not found; available: list/,
    ],
    [{ case: "serverNotFound", value: { name: "github" } }, /MCP server github not found/],
  ];
  for (const [result, pattern] of cases) {
    const run = call(result);
    assert.equal(run.result.isError, true);
    assert.match(resultText(run.result), pattern);
  }
});
