/**
 * MCP resources and state (exec 17, 18, 36): list the resources the client's MCP servers offer,
 * read one, and see the servers themselves (status, tools, instructions). Offered whenever the
 * client reported MCP servers (catalogue.ts); read-only, so in every mode.
 */
import { create } from "@bufbuild/protobuf";
import {
  type ListMcpResourcesExecArgs,
  ListMcpResourcesExecArgsSchema,
  type ListMcpResourcesExecResult,
  McpStateExecArgsSchema,
  type McpStateExecResult,
  type ReadMcpResourceExecArgs,
  ReadMcpResourceExecArgsSchema,
  type ReadMcpResourceExecResult,
  ReadMcpResourceExecResultSchema,
} from "../gen/agent/v1/exec_mcp_pb.js";
import {
  ListMcpResourcesToolCallSchema,
  McpToolCallSchema,
  ReadMcpResourceToolCallSchema,
} from "../gen/agent/v1/tool_call_pb.js";
import { sniffImageType } from "../user-message.ts";
import { parseArgs } from "./args.ts";
import { toOutput, toUnexpectedReply } from "./output.ts";
import { truncateMiddle } from "./text.ts";
import type { ToolHandler, ToolOutput, UiTool } from "./types.ts";

const MAX_CHARS = 100_000;
const ALL_MODES = ["agent", "ask", "plan", "debug"] as const;

export const listMcpResources: ToolHandler<{ readonly server: string | undefined }, null> = {
  name: "list_mcp_resources",
  definition: {
    name: "list_mcp_resources",
    description:
      "List the resources (documents, records, files) the user's MCP servers offer, with their URIs. Read one with read_mcp_resource.",
    parameters: {
      type: "object",
      properties: {
        server: { type: "string", description: "Only this MCP server's resources. Default: all." },
      },
    },
  },
  modes: ALL_MODES,
  parse: (args) => parseArgs(args, (read) => ({ server: read.optionalString("server") })),
  preview: () => ({
    case: "listMcpResourcesToolCall",
    value: create(ListMcpResourcesToolCallSchema),
  }),
  started: (args) => listUi(toListArgs(args)),
  start: (args) => ({
    type: "request",
    stage: "list",
    data: null,
    request: { type: "exec", exec: { case: "listMcpResourcesExecArgs", value: toListArgs(args) } },
  }),
  resume: (args, _stage, _data, reply) => {
    if (reply.type !== "exec" || reply.result.case !== "listMcpResourcesExecResult") {
      return {
        type: "done",
        output: toOutput(toUnexpectedReply(reply), listUi(toListArgs(args)), { isError: true }),
      };
    }
    return { type: "done", output: fromList(toListArgs(args), reply.result.value) };
  },
  failed: (args, error) =>
    toOutput(`The MCP resources could not be listed: ${error}`, listUi(toListArgs(args)), {
      isError: true,
    }),
};

export interface ReadResourceArgs {
  readonly server: string;
  readonly uri: string;
}

export const readMcpResource: ToolHandler<ReadResourceArgs, null> = {
  name: "read_mcp_resource",
  definition: {
    name: "read_mcp_resource",
    description: "Read one resource of an MCP server by its URI (from list_mcp_resources).",
    parameters: {
      type: "object",
      properties: {
        server: { type: "string", description: "The MCP server the resource belongs to." },
        uri: { type: "string", description: "The resource's URI." },
      },
      required: ["server", "uri"],
    },
  },
  modes: ALL_MODES,
  parse: (args) =>
    parseArgs(args, (read) => ({ server: read.string("server"), uri: read.string("uri") })),
  preview: () => ({
    case: "readMcpResourceToolCall",
    value: create(ReadMcpResourceToolCallSchema),
  }),
  started: (args, env) => readUi(toReadArgs(args, env.toolCallID)),
  start: (args, env) => ({
    type: "request",
    stage: "read",
    data: null,
    request: {
      type: "exec",
      exec: { case: "readMcpResourceExecArgs", value: toReadArgs(args, env.toolCallID) },
    },
  }),
  resume: (args, _stage, _data, reply, env) => {
    const execArgs = toReadArgs(args, env.toolCallID);
    if (reply.type !== "exec" || reply.result.case !== "readMcpResourceExecResult") {
      return { type: "done", output: readFailure(execArgs, toUnexpectedReply(reply)) };
    }
    return { type: "done", output: fromRead(execArgs, reply.result.value) };
  },
  failed: (args, error, env) =>
    readFailure(toReadArgs(args, env.toolCallID), `The resource could not be read: ${error}`),
};

export const mcpState: ToolHandler<{ readonly servers: readonly string[] }, null> = {
  name: "mcp_servers",
  definition: {
    name: "mcp_servers",
    description:
      "Show the user's MCP servers as the editor sees them now: status, tools and instructions. Use it when an MCP tool fails or seems missing.",
    parameters: {
      type: "object",
      properties: {
        servers: {
          type: "array",
          items: { type: "string" },
          description: "Only these server identifiers. Default: all.",
        },
      },
    },
  },
  modes: ALL_MODES,
  parse: (args) =>
    parseArgs(args, (read) => ({ servers: read.optionalStringArray("servers") ?? [] })),
  preview: () => stateUi(),
  started: () => stateUi(),
  start: (args) => ({
    type: "request",
    stage: "state",
    data: null,
    request: {
      type: "exec",
      exec: {
        case: "mcpStateExecArgs",
        value: create(McpStateExecArgsSchema, { serverIdentifiers: [...args.servers] }),
      },
    },
  }),
  resume: (_args, _stage, _data, reply) => {
    if (reply.type !== "exec" || reply.result.case !== "mcpStateExecResult") {
      return {
        type: "done",
        output: toOutput(toUnexpectedReply(reply), stateUi(), { isError: true }),
      };
    }
    return { type: "done", output: fromState(reply.result.value) };
  },
  failed: (_args, error) =>
    toOutput(`The MCP servers could not be listed: ${error}`, stateUi(), { isError: true }),
};

function toListArgs(args: { readonly server: string | undefined }): ListMcpResourcesExecArgs {
  return create(
    ListMcpResourcesExecArgsSchema,
    args.server === undefined ? {} : { server: args.server },
  );
}

function listUi(args: ListMcpResourcesExecArgs, result?: ListMcpResourcesExecResult): UiTool {
  return {
    case: "listMcpResourcesToolCall",
    value: create(ListMcpResourcesToolCallSchema, { args, result }),
  };
}

function fromList(args: ListMcpResourcesExecArgs, result: ListMcpResourcesExecResult): ToolOutput {
  const branch = result.result;
  const ui = listUi(args, result);
  switch (branch.case) {
    case "success": {
      const resources = [...branch.value.resources].sort((a, b) =>
        a.server === b.server ? (a.uri < b.uri ? -1 : 1) : a.server < b.server ? -1 : 1,
      );
      if (resources.length === 0) return toOutput("No MCP resources are offered.", ui);
      const lines = resources.map((resource) => {
        const about = [resource.name, resource.mimeType, resource.description]
          .filter((part) => part !== undefined && part !== "")
          .join(" · ");
        return `- [${resource.server}] ${resource.uri}${about === "" ? "" : ` — ${about}`}`;
      });
      return toOutput(truncateMiddle(lines.join("\n"), MAX_CHARS), ui);
    }
    case "error":
      return toOutput(`Listing MCP resources failed: ${branch.value.error}`, ui, { isError: true });
    case "rejected":
      return toOutput(`The user declined listing MCP resources: ${branch.value.reason}`, ui, {
        isError: true,
      });
    case undefined:
      return toOutput("The client sent an empty result.", ui, { isError: true });
  }
}

function toReadArgs(args: ReadResourceArgs, toolCallID: string): ReadMcpResourceExecArgs {
  return create(ReadMcpResourceExecArgsSchema, {
    server: args.server,
    uri: args.uri,
    toolCallId: toolCallID,
  });
}

function readUi(args: ReadMcpResourceExecArgs, result?: ReadMcpResourceExecResult): UiTool {
  return {
    case: "readMcpResourceToolCall",
    value: create(ReadMcpResourceToolCallSchema, { args, result }),
  };
}

function readFailure(args: ReadMcpResourceExecArgs, error: string): ToolOutput {
  const result = create(ReadMcpResourceExecResultSchema, {
    result: { case: "error", value: { uri: args.uri, error } },
  });
  return toOutput(error, readUi(args, result), { isError: true });
}

function fromRead(args: ReadMcpResourceExecArgs, result: ReadMcpResourceExecResult): ToolOutput {
  const branch = result.result;
  const ui = readUi(args, result);
  switch (branch.case) {
    case "success": {
      const content = branch.value.content;
      const mimeType = branch.value.mimeType ?? "";
      if (content.case === "text") {
        return toOutput(truncateMiddle(content.value, MAX_CHARS), ui);
      }
      if (content.case === "blob") {
        const type = mimeType !== "" ? mimeType : sniffImageType(content.value);
        if (type.startsWith("image/")) {
          return toOutput(`The resource ${args.uri} is an image (${type}).`, ui, {
            images: [
              {
                type: "image",
                data: Buffer.from(content.value).toString("base64"),
                mimeType: type,
              },
            ],
          });
        }
        return toOutput(
          `The resource ${args.uri} is ${content.value.length} bytes of ${type || "binary data"}; it cannot be shown as text.`,
          ui,
        );
      }
      const saved = branch.value.outputLocation?.filePath ?? branch.value.downloadPath;
      return toOutput(
        saved === undefined || saved === ""
          ? `The resource ${args.uri} has no content.`
          : `The resource ${args.uri} was saved to ${saved}; read it with read_file.`,
        ui,
      );
    }
    case "notFound":
      return toOutput(`No resource ${args.uri} on MCP server ${args.server}.`, ui, {
        isError: true,
      });
    case "error":
      return toOutput(`Reading ${args.uri} failed: ${branch.value.error}`, ui, { isError: true });
    case "rejected":
      return toOutput(`The user declined reading ${args.uri}: ${branch.value.reason}`, ui, {
        isError: true,
      });
    case undefined:
      return toOutput("The client sent an empty result.", ui, { isError: true });
  }
}

/** The MCP state call has no UI variant of its own; it shows as a generic MCP call. */
function stateUi(): UiTool {
  return {
    case: "mcpToolCall",
    value: create(McpToolCallSchema, { args: { name: "mcp_servers", toolName: "mcp_servers" } }),
  };
}

function fromState(result: McpStateExecResult): ToolOutput {
  const branch = result.result;
  switch (branch.case) {
    case "success": {
      if (branch.value.servers.length === 0)
        return toOutput("No MCP servers are configured.", stateUi());
      const parts = [...branch.value.servers]
        .sort((a, b) => (a.serverName < b.serverName ? -1 : 1))
        .map((server) => {
          const tools = server.tools.map((tool) => tool.toolName || tool.name).sort();
          const instructions = server.instructions
            .map((entry) => entry.instructions.trim())
            .filter((text) => text !== "");
          return [
            `${server.serverName} (${server.serverIdentifier}): ${server.status ?? "status unknown"}`,
            `  tools: ${tools.length === 0 ? "none" : tools.join(", ")}`,
            ...instructions.map((text) => `  instructions: ${text}`),
          ].join("\n");
        });
      return toOutput(truncateMiddle(parts.join("\n"), MAX_CHARS), stateUi());
    }
    case "error":
      return toOutput(`Reading the MCP state failed: ${branch.value.error}`, stateUi(), {
        isError: true,
      });
    case "rejected":
      return toOutput(`The client declined: ${branch.value.reason}`, stateUi(), { isError: true });
    case undefined:
      return toOutput("The client sent an empty result.", stateUi(), { isError: true });
  }
}
