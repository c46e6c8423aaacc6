/**
 * The tool catalogue: which tools a mode offers, in a fixed order with fixed definitions, plus
 * the client's MCP tools (sorted, schemas key-sorted). The same mode and MCP set always give
 * byte-identical tool definitions, so the provider's cached prefix survives across turns.
 */
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { JsonObject, JsonValue, Tool } from "../../../llm/types.ts";
import { deepFreeze } from "../deep-freeze.ts";
import type { McpDescriptor, McpToolDefinition } from "../gen/agent/v1/mcp_pb.js";
import type { Mode } from "../mode.ts";
import { askQuestion } from "./ask-question.ts";
import { createPlan } from "./create-plan.ts";
import { deleteFile } from "./delete-file.ts";
import { editFile } from "./edit-file.ts";
import { glob } from "./glob.ts";
import { grep } from "./grep.ts";
import { listDir } from "./list-dir.ts";
import { createMcpTool, type McpToolRef } from "./mcp.ts";
import { listMcpResources, mcpState, readMcpResource } from "./mcp-resources.ts";
import { readFile } from "./read-file.ts";
import { readLints } from "./read-lints.ts";
import { NO_WEB, type WebOffer } from "./server-work.ts";
import { shell } from "./shell.ts";
import { switchMode } from "./switch-mode.ts";
import { task } from "./task.ts";
import { todoWrite } from "./todo-write.ts";
import type {
  ClientReply,
  ParseResult,
  ToolEnv,
  ToolHandler,
  ToolOutput,
  ToolProgress,
  UiTool,
} from "./types.ts";
import { webFetch } from "./web-fetch.ts";
import { webSearch } from "./web-search.ts";
import { writeFile } from "./write-file.ts";
import { writeShellStdin } from "./write-shell-stdin.ts";

/** A handler with its argument and data types erased, so handlers can share one list. */
export interface AnyTool {
  readonly name: string;
  readonly definition: Tool;
  readonly modes: readonly Mode[];
  /**
   * Whether the call may be sent again when its outcome is unknown (it was sent, then the server
   * restarted before its result arrived): true for tools that only read or ask, false for tools
   * with effects (shell, write, edit, delete, MCP), which must never run twice.
   */
  readonly repeatable: boolean;
  /**
   * Whether calls to it may run at the same time as other such calls of one response (the loop's
   * `readOnlyTools`, src/loop/tool-batch.ts): tools that only read the workspace and change
   * nothing the model or the user sees. Narrower than `repeatable`: questions to the user, mode
   * switches, the todo list and the server's web work run alone.
   */
  readonly concurrent: boolean;
  parse(args: JsonObject, env: ToolEnv): ParseResult<unknown>;
  preview(): UiTool;
  started(args: unknown, env: ToolEnv): UiTool;
  start(args: unknown, env: ToolEnv): ToolProgress<unknown>;
  resume(
    args: unknown,
    stage: string,
    data: unknown,
    reply: ClientReply,
    env: ToolEnv,
  ): ToolProgress<unknown>;
  failed(args: unknown, error: string, env: ToolEnv): ToolOutput;
}

/**
 * Erases a handler's types. Sound because the session only ever passes a handler the arguments
 * its own `parse` returned and the data its own `start`/`resume` returned.
 */
function erase<A, D>(
  handler: ToolHandler<A, D>,
  effects: "read_only" | "effects",
  concurrent: "concurrent" | "alone" = "alone",
): AnyTool {
  return {
    name: handler.name,
    // Frozen, members too: shared by every turn's settings, so its canonical JSON is made once
    // (loop/canonical-json.ts `toCanonicalJSONOnce`, issue #19).
    definition: deepFreeze(handler.definition),
    modes: handler.modes,
    repeatable: effects === "read_only",
    concurrent: concurrent === "concurrent",
    parse: (args, env) => handler.parse(args, env),
    preview: () => handler.preview(),
    started: (args, env) => handler.started(args as A, env),
    start: (args, env) => handler.start(args as A, env),
    resume: (args, stage, data, reply, env) =>
      handler.resume(args as A, stage, data as D, reply, env),
    failed: (args, error, env) => handler.failed(args as A, error, env),
  };
}

export const BUILT_IN_TOOLS: readonly AnyTool[] = [
  erase(readFile, "read_only", "concurrent"),
  erase(editFile, "effects"),
  erase(writeFile, "effects"),
  erase(deleteFile, "effects"),
  erase(listDir, "read_only", "concurrent"),
  erase(grep, "read_only", "concurrent"),
  erase(glob, "read_only", "concurrent"),
  erase(shell, "effects"),
  erase(writeShellStdin, "effects"),
  erase(readLints, "read_only", "concurrent"),
  // Server-side and deterministic: running it again gives the same list.
  erase(todoWrite, "read_only"),
  // Questions to the user: asking again is harmless.
  erase(askQuestion, "read_only"),
  erase(createPlan, "read_only"),
  // Asking the user again is harmless; the answer decides.
  erase(switchMode, "read_only"),
  // A subagent asked for again after a restart continues the same child conversation (its id is
  // derived from the call), whose own tool calls keep their exactly-once rules.
  erase(task, "read_only"),
  // Run by the server: a search or fetch repeated after a restart reads the web again.
  erase(webSearch, "read_only"),
  erase(webFetch, "read_only"),
];

/**
 * The model-facing tool definitions of `mode`: built-ins in catalogue order (the web tools only
 * when `web` offers them), then MCP tools.
 */
export function toToolDefinitions(
  mode: Mode,
  mcp: readonly McpToolRef[],
  web: WebOffer = NO_WEB,
): readonly Tool[] {
  const listed = listTools(mode, mcp, web);
  // New per call and not frozen: the store remembers the text of frozen lists only
  // (store/history.ts `toToolsText`), and this one lives only as long as its conversation.
  if (mcp.length > 0) return listed.map((tool) => tool.definition);
  return ofListed(listed).definitions;
}

/**
 * The names of the tools of `mode` whose calls may run together (`AnyTool.concurrent`), in
 * catalogue order: the loop's `TurnSettings.readOnlyTools`.
 */
export function toConcurrentToolNames(
  mode: Mode,
  mcp: readonly McpToolRef[],
  web: WebOffer = NO_WEB,
): readonly string[] {
  const listed = listTools(mode, mcp, web);
  if (mcp.length > 0) return listed.filter((tool) => tool.concurrent).map((tool) => tool.name);
  return ofListed(listed).concurrent;
}

/**
 * The definitions and concurrent names of a built-in tool list, made once per list: the built-ins'
 * lists are kept (`listTools`), so every turn start without MCP tools shares these two (frozen)
 * in its settings, which the loop keeps for the conversation's life (issue #19, heap per open
 * stream). Only these process-wide lists are frozen: the store keeps the text of a frozen list for
 * the list's life (store/history.ts `toToolsText`), so a frozen per-conversation list (one with
 * MCP tools) would keep ≈ 29 KiB of text per live conversation.
 */
const ofLists = new WeakMap<
  readonly AnyTool[],
  { readonly definitions: readonly Tool[]; readonly concurrent: readonly string[] }
>();

function ofListed(listed: readonly AnyTool[]) {
  let of = ofLists.get(listed);
  if (of === undefined) {
    of = {
      definitions: Object.freeze(listed.map((tool) => tool.definition)),
      concurrent: Object.freeze(listed.filter((tool) => tool.concurrent).map((tool) => tool.name)),
    };
    ofLists.set(listed, of);
  }
  return of;
}

/**
 * The names of the tools of `mode` known to have no effects: the concurrent built-ins (reads,
 * searches, the MCP helpers that read resources), never an MCP tool, whose `readOnlyHint` is its
 * server's word, not a guarantee. What a read-only subagent may use and what sibling subagents
 * may run beside each other's writes (README "Subagents"); independent of whether the server
 * batches reads (`parallelTools`).
 */
export function toEffectFreeToolNames(
  mode: Mode,
  mcp: readonly McpToolRef[],
  web: WebOffer = NO_WEB,
): string[] {
  const mcpNames = new Set(mcp.map((ref) => ref.name));
  return listTools(mode, mcp, web)
    .filter((tool) => tool.concurrent && !mcpNames.has(tool.name))
    .map((tool) => tool.name);
}

/** The tool `name` as offered in `mode`, or null when the mode does not offer it. */
export function findTool(
  name: string,
  mode: Mode,
  mcp: readonly McpToolRef[],
  web: WebOffer = NO_WEB,
): AnyTool | null {
  return listTools(mode, mcp, web).find((tool) => tool.name === name) ?? null;
}

/**
 * Tools a subagent never gets besides `task` (src/loop/subagent.ts): nobody answers its
 * questions, and the todo list, the plan and the mode are the parent's.
 */
export const PARENT_ONLY_TOOLS: readonly string[] = [
  askQuestion.name,
  switchMode.name,
  todoWrite.name,
  createPlan.name,
];

/** Offered only when the client has MCP servers: their resources and state (reading only). */
const MCP_HELPER_TOOLS: readonly AnyTool[] = [
  erase(listMcpResources, "read_only", "concurrent"),
  erase(readMcpResource, "read_only", "concurrent"),
  erase(mcpState, "read_only", "concurrent"),
];

/**
 * The built-in tools of a mode and web offer, listed once: without MCP tools (most turns) the
 * list depends on nothing else, and every turn start asks for it twice (issue #19).
 */
const builtInLists = new Map<string, readonly AnyTool[]>();

function listTools(mode: Mode, mcp: readonly McpToolRef[], web: WebOffer): readonly AnyTool[] {
  if (mcp.length === 0) {
    const key = `${mode} ${web.search} ${web.fetch}`;
    let listed = builtInLists.get(key);
    if (listed === undefined) {
      listed = Object.freeze(offeredIn(BUILT_IN_TOOLS, mode, web));
      builtInLists.set(key, listed);
    }
    return listed;
  }
  // An MCP tool the client marks read-only (`readOnlyHint`) may run with the reads; it is still
  // never re-sent after a restart, since the hint is the server's word, not a guarantee.
  const mcpTools = mcp.map((ref) =>
    erase(createMcpTool(ref), "effects", ref.readOnly === true ? "concurrent" : "alone"),
  );
  return offeredIn([...BUILT_IN_TOOLS, ...MCP_HELPER_TOOLS, ...mcpTools], mode, web);
}

function offeredIn(tools: readonly AnyTool[], mode: Mode, web: WebOffer): AnyTool[] {
  return tools.filter(
    (tool) =>
      tool.modes.includes(mode) &&
      (tool.name !== webSearch.name || web.search) &&
      (tool.name !== webFetch.name || web.fetch),
  );
}

const MAX_NAME = 64;

/**
 * The client's MCP tool definitions → refs with model-facing names that every provider accepts
 * (`^[A-Za-z0-9_-]{1,64}$`), unique, sorted by name. Duplicate definitions (same server and
 * tool, e.g. from both the run request and the request context) are kept once.
 */
export function toMcpToolRefs(
  definitions: readonly McpToolDefinition[],
  descriptors: readonly McpDescriptor[] = [],
): McpToolRef[] {
  const readOnly = toReadOnlyMcpTools(descriptors);
  const seen = new Set<string>();
  const unique = definitions.filter((definition) => {
    const key = `${definition.providerIdentifier}\u0000${definition.toolName || definition.name}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const sorted = [...unique].sort((a, b) => compare(baseName(a), baseName(b)));
  const names = new Set<string>();
  return sorted.map((definition) => {
    const name = uniqueName(baseName(definition), names);
    names.add(name);
    return {
      name,
      definitionName: definition.name,
      providerIdentifier: definition.providerIdentifier,
      toolName: definition.toolName || definition.name,
      description: definition.description,
      parameters: toParameters(definition),
      ...(readOnly.has(
        `${definition.providerIdentifier}\u0000${definition.toolName || definition.name}`,
      )
        ? { readOnly: true }
        : {}),
    };
  });
}

/**
 * The MCP tools the client's descriptors mark read-only (`annotations_json` with
 * `readOnlyHint: true`, the MCP tool annotation), as `<server identifier>\0<tool name>` keys.
 */
function toReadOnlyMcpTools(descriptors: readonly McpDescriptor[]): Set<string> {
  const keys = new Set<string>();
  for (const descriptor of descriptors) {
    for (const tool of descriptor.tools) {
      if (tool.annotationsJson === undefined) continue;
      try {
        const annotations = JSON.parse(tool.annotationsJson) as { readOnlyHint?: unknown } | null;
        if (annotations?.readOnlyHint === true) {
          keys.add(`${descriptor.serverIdentifier}\u0000${tool.toolName}`);
        }
      } catch {
        // Unreadable annotations say nothing: the tool runs alone.
      }
    }
  }
  return keys;
}

function baseName(definition: McpToolDefinition): string {
  const server = sanitize(definition.providerIdentifier);
  const tool = sanitize(definition.toolName || definition.name);
  return (server === "" ? `mcp__${tool}` : `mcp__${server}__${tool}`).slice(0, MAX_NAME);
}

function uniqueName(base: string, taken: ReadonlySet<string>): string {
  if (!taken.has(base)) return base;
  for (let n = 2; ; n += 1) {
    const suffix = `_${n}`;
    const candidate = `${base.slice(0, MAX_NAME - suffix.length)}${suffix}`;
    if (!taken.has(candidate)) return candidate;
  }
}

function sanitize(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]+/g, "_").replace(/^_+|_+$/g, "");
}

/** The tool's input schema as a JSON object schema with sorted keys. */
function toParameters(definition: McpToolDefinition): JsonObject {
  let schema: JsonValue | undefined;
  if (definition.inputSchema !== undefined) {
    schema = toJson(ValueSchema, definition.inputSchema) as JsonValue;
  } else if (definition.inputSchemaJson !== undefined) {
    try {
      schema = JSON.parse(definition.inputSchemaJson) as JsonValue;
    } catch {
      schema = undefined;
    }
  }
  const object: JsonObject =
    schema !== null && typeof schema === "object" && !Array.isArray(schema)
      ? { ...(schema as JsonObject) }
      : {};
  object.type = "object";
  if (
    object.properties === null ||
    typeof object.properties !== "object" ||
    Array.isArray(object.properties)
  ) {
    object.properties = {};
  }
  return sortKeys(object) as JsonObject;
}

function sortKeys(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== "object") return value;
  const sorted: JsonObject = {};
  for (const key of Object.keys(value).sort())
    sorted[key] = sortKeys((value as JsonObject)[key] as JsonValue);
  return sorted;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export type { McpToolRef };
