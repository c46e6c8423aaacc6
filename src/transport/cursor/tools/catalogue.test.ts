import assert from "node:assert/strict";
import { test } from "node:test";
import { create, fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { toCanonicalJSON } from "../../../loop/canonical-json.ts";
import { McpToolDefinitionSchema } from "../gen/agent/v1/mcp_pb.js";
import { MODES } from "../mode.ts";
import {
  BUILT_IN_TOOLS,
  findTool,
  toConcurrentToolNames,
  toEffectFreeToolNames,
  toMcpToolRefs,
  toToolDefinitions,
} from "./catalogue.ts";

test("every built-in tool has a unique name, an object schema and a description", () => {
  const names = BUILT_IN_TOOLS.map((tool) => tool.name);
  assert.equal(new Set(names).size, names.length);
  for (const tool of BUILT_IN_TOOLS) {
    assert.equal(tool.definition.name, tool.name);
    assert.match(tool.name, /^[a-z_]{1,64}$/);
    assert.ok(tool.definition.description.length > 10);
    assert.equal((tool.definition.parameters as { type: string }).type, "object");
  }
});

test("modes offer the expected tools", () => {
  const names = (mode: (typeof MODES)[number]) =>
    toToolDefinitions(mode, []).map((tool) => tool.name);
  assert.deepEqual(names("ask"), [
    "read_file",
    "list_dir",
    "grep",
    "glob",
    "read_lints",
    "ask_question",
    "switch_mode",
    "task",
  ]);
  assert.deepEqual(names("plan"), [
    "read_file",
    "list_dir",
    "grep",
    "glob",
    "read_lints",
    "ask_question",
    "create_plan",
    "switch_mode",
    "task",
  ]);
  assert.deepEqual(names("agent"), names("debug"));
  assert.ok(!names("agent").includes("create_plan"));
  assert.equal(findTool("shell", "ask", []), null);
  assert.equal(findTool("shell", "agent", [])?.name, "shell");
});

test("tool definitions are byte-identical on every call", () => {
  for (const mode of MODES) {
    assert.equal(
      toCanonicalJSON(toToolDefinitions(mode, [])),
      toCanonicalJSON(toToolDefinitions(mode, [])),
    );
  }
});

test("MCP tools get provider-safe, unique names, sorted, with key-sorted schemas", () => {
  const refs = toMcpToolRefs([
    create(McpToolDefinitionSchema, {
      name: "web.search",
      providerIdentifier: "my server!",
      toolName: "web.search",
      inputSchema: fromJson(ValueSchema, {
        type: "object",
        properties: { q: { type: "string" } },
        required: ["q"],
      }),
    }),
    create(McpToolDefinitionSchema, { name: "a-x", providerIdentifier: "a", toolName: "x" }),
    create(McpToolDefinitionSchema, { name: "a-x again", providerIdentifier: "a", toolName: "x" }),
    create(McpToolDefinitionSchema, {
      name: "long",
      providerIdentifier: "p".repeat(80),
      toolName: "t",
    }),
    create(McpToolDefinitionSchema, {
      name: "bad",
      providerIdentifier: "b",
      toolName: "y",
      inputSchemaJson: "{not json",
    }),
  ]);
  assert.deepEqual(
    refs.map((ref) => ref.name),
    ["mcp__a__x", "mcp__b__y", "mcp__my_server__web_search", `mcp__${"p".repeat(59)}`],
  );
  for (const ref of refs) assert.match(ref.name, /^[A-Za-z0-9_-]{1,64}$/);
  const search = refs.find((ref) => ref.toolName === "web.search");
  assert.equal(
    JSON.stringify(search?.parameters),
    '{"properties":{"q":{"type":"string"}},"required":["q"],"type":"object"}',
  );
  assert.deepEqual(refs.find((ref) => ref.toolName === "y")?.parameters, {
    properties: {},
    type: "object",
  });
});

test("name collisions after sanitising get numbered suffixes", () => {
  const refs = toMcpToolRefs([
    create(McpToolDefinitionSchema, { name: "1", providerIdentifier: "s", toolName: "a.b" }),
    create(McpToolDefinitionSchema, { name: "2", providerIdentifier: "s", toolName: "a b" }),
  ]);
  assert.deepEqual(refs.map((ref) => ref.name).sort(), ["mcp__s__a_b", "mcp__s__a_b_2"]);
});

test("MCP tools are offered in agent and debug modes, after the built-ins", () => {
  const refs = toMcpToolRefs([
    create(McpToolDefinitionSchema, { name: "x", providerIdentifier: "s", toolName: "x" }),
  ]);
  assert.equal(toToolDefinitions("agent", refs).at(-1)?.name, "mcp__s__x");
  assert.ok(!toToolDefinitions("ask", refs).some((tool) => tool.name === "mcp__s__x"));
});

test("effect-free tools: the concurrent built-ins, never an MCP tool whatever its readOnlyHint", () => {
  const mcp = [
    {
      name: "mcp__db__drop_table",
      definitionName: "drop_table",
      providerIdentifier: "db",
      toolName: "drop_table",
      description: "drops a table",
      parameters: { type: "object" },
      readOnly: true,
    },
  ];
  // Batching trusts the hint; a read-only subagent and the effects lock do not.
  assert.ok(toConcurrentToolNames("agent", mcp).includes("mcp__db__drop_table"));
  assert.deepEqual(toEffectFreeToolNames("agent", mcp), [
    "read_file",
    "list_dir",
    "grep",
    "glob",
    "read_lints",
    "list_mcp_resources",
    "read_mcp_resource",
    "mcp_servers",
  ]);
});

test("without MCP tools, each mode's definitions and concurrent names are one frozen list per web offer, shared by every turn", () => {
  const web = { search: true, fetch: false, askApproval: true };
  for (const mode of MODES) {
    assert.equal(toToolDefinitions(mode, [], web), toToolDefinitions(mode, [], { ...web }));
    assert.equal(toConcurrentToolNames(mode, [], web), toConcurrentToolNames(mode, [], { ...web }));
    assert.ok(Object.isFrozen(toToolDefinitions(mode, [], web)));
    assert.ok(Object.isFrozen(toConcurrentToolNames(mode, [], web)));
    assert.notEqual(toToolDefinitions(mode, [], web), toToolDefinitions(mode, []));
  }
  const refs = toMcpToolRefs([
    create(McpToolDefinitionSchema, { name: "x", providerIdentifier: "s" }),
  ]);
  assert.notEqual(toToolDefinitions("agent", refs), toToolDefinitions("agent", refs));
  assert.deepEqual(toToolDefinitions("agent", refs), toToolDefinitions("agent", refs));
});

test("lists with MCP tools are new per call and not frozen, so the store keeps no text of them for a conversation's life", () => {
  // store/history.ts `toToolsText` keeps the text of a frozen list as long as the list; a
  // conversation keeps its MCP list in its settings, so a frozen one would keep ≈ 29 KiB of text.
  const refs = toMcpToolRefs([
    create(McpToolDefinitionSchema, { name: "x", providerIdentifier: "s" }),
  ]);
  for (const mode of ["agent", "debug"] as const) {
    const definitions = toToolDefinitions(mode, refs);
    assert.equal(Object.isFrozen(definitions), false);
    assert.equal(Object.isFrozen(toConcurrentToolNames(mode, refs)), false);
    assert.equal(definitions.at(-1)?.name, "mcp__s__x");
    // The definitions themselves stay the shared frozen ones.
    assert.equal(definitions[0], toToolDefinitions(mode, [])[0]);
    assert.deepEqual(
      toConcurrentToolNames(mode, refs).slice(0, toConcurrentToolNames(mode, []).length),
      toConcurrentToolNames(mode, []),
    );
  }
});
