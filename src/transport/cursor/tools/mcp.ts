/**
 * MCP tools: the client's MCP servers' tools (from the run request's `mcp_tools`), offered to the
 * model under sanitised names and run with the `mcp_args` exec.
 */
import { create, fromJson, type JsonValue as ProtoJsonValue } from "@bufbuild/protobuf";
import { type Value, ValueSchema } from "@bufbuild/protobuf/wkt";
import type { ImageContent, JsonObject } from "../../../llm/types.ts";
import { McpArgsSchema, type McpResult, McpToolResultSchema } from "../gen/agent/v1/exec_mcp_pb.js";
import { McpToolCallSchema } from "../gen/agent/v1/tool_call_pb.js";
import { toOutput, toUnexpectedReply } from "./output.ts";
import { truncateMiddle } from "./text.ts";
import type { ToolEnv, ToolHandler, ToolOutput } from "./types.ts";

/** One MCP tool of the client, as the model sees it and as the client names it. */
export interface McpToolRef {
  /** The model-facing name (`mcp__<server>__<tool>`, sanitised, unique). */
  readonly name: string;
  /** `McpToolDefinition.name`, sent back as `McpArgs.name`. */
  readonly definitionName: string;
  readonly providerIdentifier: string;
  readonly toolName: string;
  readonly description: string;
  /** The input JSON schema, keys sorted so the tool list is byte-stable. */
  readonly parameters: JsonObject;
  /** The client's MCP descriptor marks the tool read-only (`annotations.readOnlyHint`). */
  readonly readOnly?: boolean;
}

export interface McpCallArgs {
  readonly arguments: JsonObject;
}

/** Most characters of MCP output shown; more is cut in the middle (stated). */
export const MAX_MCP_CHARS = 100_000;

export function createMcpTool(ref: McpToolRef): ToolHandler<McpCallArgs, null> {
  const toArgs = (args: McpCallArgs, env: ToolEnv) =>
    create(McpArgsSchema, {
      name: ref.definitionName,
      args: toValueMap(args.arguments),
      toolCallId: env.toolCallID,
      providerIdentifier: ref.providerIdentifier,
      toolName: ref.toolName,
    });
  const ui = (args: McpCallArgs, env: ToolEnv, result?: McpResult) => ({
    case: "mcpToolCall" as const,
    value: create(McpToolCallSchema, {
      args: toArgs(args, env),
      description: ref.description === "" ? undefined : ref.description,
      ...(result === undefined ? {} : { result: toUiResult(result) }),
    }),
  });
  const fail = (args: McpCallArgs, env: ToolEnv, message: string): ToolOutput => {
    const result = create(McpToolResultSchema, {
      result: { case: "error", value: { error: message } },
    });
    return toOutput(
      message,
      {
        case: "mcpToolCall",
        value: create(McpToolCallSchema, { args: toArgs(args, env), result }),
      },
      { isError: true },
    );
  };
  return {
    name: ref.name,
    definition: { name: ref.name, description: ref.description, parameters: ref.parameters },
    modes: ["agent", "debug"],
    parse: (args) => ({ ok: true, args: { arguments: args } }),
    preview: () => ({ case: "mcpToolCall", value: create(McpToolCallSchema) }),
    started: (args, env) => ui(args, env),
    start: (args, env) => ({
      type: "request",
      stage: "call",
      data: null,
      request: { type: "exec", exec: { case: "mcpArgs", value: toArgs(args, env) } },
    }),
    resume: (args, _stage, data, reply, env) => {
      if (reply.type !== "exec" || reply.result.case !== "mcpResult") {
        return { type: "done", output: fail(args, env, toUnexpectedReply(reply)) };
      }
      const result = reply.result.value;
      // `approved` acknowledges the user's approval; the actual result follows.
      if (result.result.case === "approved") return { type: "wait", data, updates: [] };
      return { type: "done", output: fromMcpResult(ref, result, ui(args, env, result)) };
    },
    failed: (args, error, env) =>
      fail(args, env, `The client could not call ${ref.toolName}: ${error}`),
  };
}

function toValueMap(args: JsonObject): Record<string, Value> {
  const map: Record<string, Value> = {};
  for (const [key, value] of Object.entries(args)) {
    map[key] = fromJson(ValueSchema, value as ProtoJsonValue);
  }
  return map;
}

function toUiResult(result: McpResult) {
  const branch = result.result;
  switch (branch.case) {
    case "success":
      return create(McpToolResultSchema, { result: { case: "success", value: branch.value } });
    case "rejected":
      return create(McpToolResultSchema, { result: { case: "rejected", value: branch.value } });
    case "permissionDenied":
      return create(McpToolResultSchema, {
        result: { case: "permissionDenied", value: branch.value },
      });
    default:
      return create(McpToolResultSchema, {
        result: { case: "error", value: { error: describeFailure(result) } },
      });
  }
}

function describeFailure(result: McpResult): string {
  const branch = result.result;
  switch (branch.case) {
    case "error":
      return branch.value.error;
    case "toolNotFound":
      return `Tool ${branch.value.name} not found; available: ${branch.value.availableTools.join(", ") || "none"}.`;
    case "serverNotFound":
      return `MCP server ${branch.value.name} not found; available: ${branch.value.availableServers.join(", ") || "none"}.`;
    default:
      return "The client sent an empty MCP result.";
  }
}

function fromMcpResult(ref: McpToolRef, result: McpResult, ui: ToolOutput["ui"]): ToolOutput {
  const branch = result.result;
  switch (branch.case) {
    case "success": {
      const texts: string[] = [];
      const images: ImageContent[] = [];
      for (const item of branch.value.content) {
        if (item.content.case === "text") texts.push(item.content.value.text);
        else if (item.content.case === "image") {
          images.push({
            type: "image",
            data: Buffer.from(item.content.value.data).toString("base64"),
            mimeType: item.content.value.mimeType,
          });
        }
      }
      if (texts.length === 0 && branch.value.structuredContent !== undefined) {
        texts.push(JSON.stringify(branch.value.structuredContent));
      }
      const text = truncateMiddle(texts.join("\n"), MAX_MCP_CHARS);
      const fallback =
        images.length > 0
          ? `${ref.toolName} returned ${images.length} image(s).`
          : `${ref.toolName} returned no content.`;
      return toOutput(text === "" ? fallback : text, ui, { images, isError: branch.value.isError });
    }
    case "rejected":
      return toOutput(
        `The user declined the call to ${ref.toolName}${branch.value.reason ? `: ${branch.value.reason}` : "."}`,
        ui,
        { isError: true },
      );
    case "permissionDenied":
      return toOutput(`Permission denied calling ${ref.toolName}: ${branch.value.error}`, ui, {
        isError: true,
      });
    default:
      return toOutput(describeFailure(result), ui, { isError: true });
  }
}
