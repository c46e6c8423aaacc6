/**
 * The test client's MCP servers, as far as the server can see them without calling a tool:
 * their resources (exec 17 list, 18 read) and their state (exec 36). Plain data given to the
 * client (`mcpServers`); answered the way the IDE reports them (docs/protocol.md §2.7).
 */
import { create } from "@bufbuild/protobuf";
import {
  type ListMcpResourcesExecArgs,
  type ListMcpResourcesExecResult,
  ListMcpResourcesExecResultSchema,
  type McpStateExecArgs,
  type McpStateExecResult,
  McpStateExecResultSchema,
  type ReadMcpResourceExecArgs,
  type ReadMcpResourceExecResult,
  ReadMcpResourceExecResultSchema,
} from "../cursor/gen/agent/v1/exec_mcp_pb.js";

export interface TestMcpResource {
  readonly uri: string;
  readonly name?: string;
  readonly mimeType?: string;
  readonly description?: string;
  /** Text content, or bytes for a binary resource. */
  readonly content: string | Uint8Array;
}

export interface TestMcpServer {
  readonly name: string;
  readonly identifier: string;
  readonly status: string;
  readonly tools: readonly string[];
  readonly resources: readonly TestMcpResource[];
}

export function runListResources(
  args: ListMcpResourcesExecArgs,
  servers: readonly TestMcpServer[],
): ListMcpResourcesExecResult {
  const chosen = servers.filter(
    (server) => args.server === undefined || server.name === args.server,
  );
  if (args.server !== undefined && chosen.length === 0) {
    return create(ListMcpResourcesExecResultSchema, {
      result: { case: "error", value: { error: `no MCP server named ${args.server}` } },
    });
  }
  return create(ListMcpResourcesExecResultSchema, {
    result: {
      case: "success",
      value: {
        resources: chosen.flatMap((server) =>
          server.resources.map((resource) => ({
            uri: resource.uri,
            server: server.name,
            ...(resource.name === undefined ? {} : { name: resource.name }),
            ...(resource.mimeType === undefined ? {} : { mimeType: resource.mimeType }),
            ...(resource.description === undefined ? {} : { description: resource.description }),
          })),
        ),
      },
    },
  });
}

export function runReadResource(
  args: ReadMcpResourceExecArgs,
  servers: readonly TestMcpServer[],
): ReadMcpResourceExecResult {
  const resource = servers
    .find((server) => server.name === args.server)
    ?.resources.find((entry) => entry.uri === args.uri);
  if (resource === undefined) {
    return create(ReadMcpResourceExecResultSchema, {
      result: { case: "notFound", value: { uri: args.uri } },
    });
  }
  return create(ReadMcpResourceExecResultSchema, {
    result: {
      case: "success",
      value: {
        uri: args.uri,
        ...(resource.mimeType === undefined ? {} : { mimeType: resource.mimeType }),
        content:
          typeof resource.content === "string"
            ? { case: "text", value: resource.content }
            : { case: "blob", value: resource.content },
      },
    },
  });
}

export function runMcpState(
  args: McpStateExecArgs,
  servers: readonly TestMcpServer[],
): McpStateExecResult {
  const chosen = servers.filter(
    (server) =>
      args.serverIdentifiers.length === 0 || args.serverIdentifiers.includes(server.identifier),
  );
  return create(McpStateExecResultSchema, {
    result: {
      case: "success",
      value: {
        servers: chosen.map((server) => ({
          serverName: server.name,
          serverIdentifier: server.identifier,
          status: server.status,
          tools: server.tools.map((tool) => ({
            name: `${server.identifier}-${tool}`,
            toolName: tool,
            providerIdentifier: server.identifier,
          })),
        })),
      },
    },
  });
}
