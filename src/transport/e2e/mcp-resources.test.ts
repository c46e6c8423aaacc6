/**
 * MCP resources and state through the real server: with MCP servers on the client, the model is
 * offered list_mcp_resources, read_mcp_resource and mcp_servers (exec 17, 18, 36), and what the
 * client answers reaches the model; without MCP servers none of them is offered.
 */
import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import type { TestMcpServer } from "../testing/exec-mcp.ts";
import { type Harness, MODEL, startHarness } from "./test-harness.ts";

const CONVERSATION = "2a3b4c5d-8888-4a5b-8c6d-7e8f9a0b1c2d";

const SERVERS: TestMcpServer[] = [
  {
    name: "notes",
    identifier: "notes-server",
    status: "connected",
    tools: ["search"],
    resources: [
      {
        uri: "notes://team/roadmap",
        name: "Roadmap",
        mimeType: "text/markdown",
        content: "# Roadmap\nQ3: ship dark mode",
      },
    ],
  },
];

function bodies(harness: Harness) {
  return harness.provider.requests.map(
    (request) =>
      JSON.parse(request.body) as {
        messages: { role: string; content: unknown }[];
        tools?: { function: { name: string } }[];
      },
  );
}

describe("MCP resources end to end", () => {
  let harness: Harness;
  afterEach(async () => {
    await harness.close();
  });

  test("the model lists and reads a resource and sees the servers' state", async () => {
    harness = await startHarness();
    harness.reply(
      { toolCalls: [{ id: "call_list", name: "list_mcp_resources", arguments: {} }] },
      {
        toolCalls: [
          {
            id: "call_read",
            name: "read_mcp_resource",
            arguments: { server: "notes", uri: "notes://team/roadmap" },
          },
        ],
      },
      { toolCalls: [{ id: "call_state", name: "mcp_servers", arguments: {} }] },
      { text: "Dark mode ships in Q3." },
    );
    const result = await harness
      .client({ mcpServers: SERVERS })
      .startTurn({ conversationId: CONVERSATION, text: "What is on the roadmap?", modelId: MODEL })
      .done;
    assert.equal(result.error, undefined);
    const sent = bodies(harness);
    const names = (sent[0]?.tools ?? []).map((tool) => tool.function.name);
    for (const name of ["list_mcp_resources", "read_mcp_resource", "mcp_servers"]) {
      assert.ok(names.includes(name), `${name} offered`);
    }
    const results = (sent[3]?.messages ?? [])
      .filter((message) => message.role === "tool")
      .map((message) => JSON.stringify(message.content));
    assert.match(results[0] ?? "", /\[notes\] notes:\/\/team\/roadmap — Roadmap · text\/markdown/);
    assert.match(results[1] ?? "", /# Roadmap\\nQ3: ship dark mode/);
    assert.match(results[2] ?? "", /notes \(notes-server\): connected\\n {2}tools: search/);
  });

  test("without MCP servers the resource tools are not offered", async () => {
    harness = await startHarness();
    harness.reply({ text: "ok" });
    await harness.client().startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL })
      .done;
    const names = (bodies(harness)[0]?.tools ?? []).map((tool) => tool.function.name);
    assert.ok(!names.includes("list_mcp_resources"));
    assert.ok(!names.includes("mcp_servers"));
  });
});
