import assert from "node:assert/strict";
import { test } from "node:test";
import { execOf, execReply, resultText, runTool } from "../testing.ts";

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);

test("list: one server's resources, sorted; an empty list says so", () => {
  const run = runTool("list_mcp_resources", { server: "docs" }, [
    (state) =>
      execReply(state, {
        case: "listMcpResourcesExecResult",
        value: {
          result: {
            case: "success",
            value: {
              resources: [
                { uri: "docs://b", server: "docs" },
                { uri: "docs://a", server: "docs", name: "A", description: "first" },
              ],
            },
          },
        },
      }),
  ]);
  const exec = execOf(run.requests[0]);
  assert.ok(exec.case === "listMcpResourcesExecArgs");
  assert.equal(exec.value.server, "docs");
  assert.equal(resultText(run.result), "- [docs] docs://a — A · first\n- [docs] docs://b");
  const empty = runTool("list_mcp_resources", {}, [
    (state) =>
      execReply(state, {
        case: "listMcpResourcesExecResult",
        value: { result: { case: "success", value: { resources: [] } } },
      }),
  ]);
  assert.equal(resultText(empty.result), "No MCP resources are offered.");
});

test("read: text, an image as an image, binary named, missing as an error", () => {
  const read = (content: Parameters<typeof execReply>[1]) =>
    runTool("read_mcp_resource", { server: "docs", uri: "docs://a" }, [
      (state) => execReply(state, content),
    ]);
  const text = read({
    case: "readMcpResourceExecResult",
    value: {
      result: {
        case: "success",
        value: { uri: "docs://a", content: { case: "text", value: "hello" } },
      },
    },
  });
  assert.equal(resultText(text.result), "hello");
  const image = read({
    case: "readMcpResourceExecResult",
    value: {
      result: {
        case: "success",
        value: { uri: "docs://a", content: { case: "blob", value: PNG } },
      },
    },
  });
  assert.deepEqual(
    image.result.content.filter((block) => block.type === "image").map((block) => block.mimeType),
    ["image/png"],
  );
  const binary = read({
    case: "readMcpResourceExecResult",
    value: {
      result: {
        case: "success",
        value: {
          uri: "docs://a",
          mimeType: "application/zip",
          content: { case: "blob", value: new Uint8Array(9) },
        },
      },
    },
  });
  assert.match(
    resultText(binary.result),
    /9 bytes of application\/zip; it cannot be shown as text/,
  );
  const missing = read({
    case: "readMcpResourceExecResult",
    value: { result: { case: "notFound", value: { uri: "docs://a" } } },
  });
  assert.equal(missing.result.isError, true);
  assert.equal(resultText(missing.result), "No resource docs://a on MCP server docs.");
});

test("mcp_servers: each server's status, tools and instructions", () => {
  const run = runTool("mcp_servers", { servers: ["gh"] }, [
    (state) =>
      execReply(state, {
        case: "mcpStateExecResult",
        value: {
          result: {
            case: "success",
            value: {
              servers: [
                {
                  serverName: "github",
                  serverIdentifier: "gh",
                  status: "error: token expired",
                  tools: [{ toolName: "create_issue" }, { name: "list_prs" }],
                  instructions: [{ serverName: "github", instructions: "Use owner/repo." }],
                },
              ],
            },
          },
        },
      }),
  ]);
  const exec = execOf(run.requests[0]);
  assert.ok(exec.case === "mcpStateExecArgs");
  assert.deepEqual(exec.value.serverIdentifiers, ["gh"]);
  assert.equal(
    resultText(run.result),
    "github (gh): error: token expired\n  tools: create_issue, list_prs\n  instructions: Use owner/repo.",
  );
});
