/**
 * Subagents (README.md "Subagents", docs/design.md §5): the model delegates a self-contained task
 * to a child conversation with its own history, tool set, system prompt and model; the child's
 * final answer becomes the result of the parent's tool call. These are the loop's decisions about
 * them, pure and table-tested; running the child is the transport's (it owns the client stream).
 *
 * - What the child may run: a type's tools are a subset of the parent's, never the subagent tool
 *   itself (no nesting), only read-only tools for a read-only type; the child's settings carry
 *   `onlyOfferedTools`, so a call to anything else is refused by the loop (`toRefusedResults`)
 *   before it can reach the client.
 * - Which model it runs on: `toSubagentModel`.
 * - Its conversation id: derived from the parent's operation, so a retried or resumed parent call
 *   finds the same child (`toSubagentConversationID`).
 */
import { createHash } from "node:crypto";
import type { ToolCall, ToolResultMessage } from "../llm/types.ts";
import { BRANCH_MARK, SUBAGENT_MARK } from "./ids.ts";
import { toCandidates } from "./model-route.ts";
import { toNotRunResult } from "./tool-result.ts";
import type { ConversationState, TurnSettings } from "./types.ts";

/** The name of the tool the model delegates with. */
export const SUBAGENT_TOOL = "task";

/** What a subagent type allows (built-in or the client's custom definition). */
export interface SubagentDefinition {
  /** `explore`, `general`, or a custom subagent's name. */
  readonly name: string;
  /** Instructions added to the subagent system prompt (a custom subagent's prompt); "" none. */
  readonly instructions: string;
  /** Tool names it may use, within the parent's; `all`: every tool of the parent. */
  readonly tools: readonly string[] | "all";
  /** Only tools without effects (`toSubagentSettings`' `effectFree`, and ones it names). */
  readonly readOnly: boolean;
  /** The model its definition asks for ("" or `inherit`: none). */
  readonly model: string;
}

export const EXPLORE: SubagentDefinition = {
  name: "explore",
  instructions: "",
  tools: "all",
  readOnly: true,
  model: "",
};

export const GENERAL: SubagentDefinition = {
  name: "general",
  instructions: "",
  tools: "all",
  readOnly: false,
  model: "",
};

/**
 * The child's settings: the parent's model options and compaction (and its fallbacks, on the
 * parent's model), `systemPrompt`, and the tools
 * the definition allows out of the parent's (in the parent's order, so the definitions stay
 * byte-stable), never the subagent tool nor the `withheld` ones. Calls to other tools are refused
 * (`onlyOfferedTools`).
 */
export function toSubagentSettings(
  parent: TurnSettings,
  definition: SubagentDefinition,
  options: {
    readonly model: string;
    readonly systemPrompt: string;
    /** Tools only the parent has, besides `task` (asking the user, its todo list, its mode). */
    readonly withheld?: readonly string[];
    /**
     * The parent's tools known to have no effects (built-in reads; never an MCP tool, whose
     * read-only hint is its server's word): all a read-only type gets, unless its definition
     * names a tool the parent marks read-only (`readOnlyTools`) explicitly. Absent: the parent's
     * `readOnlyTools`. Independent of batching, which the server may turn off.
     */
    readonly effectFree?: readonly string[];
  },
): TurnSettings {
  const effectFree = new Set(options.effectFree ?? parent.readOnlyTools ?? []);
  const claimsReadOnly = new Set(parent.readOnlyTools ?? []);
  const named = definition.tools === "all" ? null : new Set(definition.tools);
  const withheld = new Set([SUBAGENT_TOOL, ...(options.withheld ?? [])]);
  const readOnlyAllows = (name: string): boolean =>
    effectFree.has(name) || (named?.has(name) === true && claimsReadOnly.has(name));
  const tools = parent.tools.filter(
    (tool) =>
      !withheld.has(tool.name) &&
      (named === null || named.has(tool.name)) &&
      (!definition.readOnly || readOnlyAllows(tool.name)),
  );
  const offered = new Set(tools.map((tool) => tool.name));
  // On the parent's own model the child keeps the parent's fallbacks (a failing primary fails the
  // child over the same way); another model's are the caller's to give.
  const { concurrentTools: _concurrent, fallbacks, ...rest } = parent;
  return {
    ...rest,
    ...(options.model === parent.model && fallbacks !== undefined ? { fallbacks } : {}),
    model: options.model,
    systemPrompt: options.systemPrompt,
    tools,
    readOnlyTools: (parent.readOnlyTools ?? []).filter((name) => offered.has(name)),
    onlyOfferedTools: true,
  };
}

/**
 * A subagent on the parent's model starts where the parent's calls go now: on the parent's
 * sticky model (`route`, model-route.ts) when the parent has failed over, with the rest of the
 * parent's candidates as its fallbacks, so it does not first hit the primary the parent left.
 * Otherwise `settings` as they are.
 */
export function toStickySubagentSettings(
  settings: TurnSettings,
  parent: Pick<ConversationState, "settings" | "route">,
): TurnSettings {
  const route = parent.route;
  const parentModel = parent.settings?.model;
  if (route === undefined || parentModel === undefined) return settings;
  if (settings.model !== parentModel || route.requested !== parentModel) return settings;
  const candidates = toCandidates(settings);
  if (!candidates.includes(route.model)) return settings;
  return {
    ...settings,
    model: route.model,
    fallbacks: candidates.filter((model) => model !== route.model),
  };
}

/**
 * The model a subagent runs on, the first of these that is configured: the operator's override
 * for the type, the model the parent's model asked for in the call, the custom definition's
 * model; else the parent's model.
 */
export function toSubagentModel(choice: {
  readonly override: string | undefined;
  readonly requested: string;
  readonly definition: string;
  readonly parent: string;
  readonly isConfigured: (model: string) => boolean;
}): string {
  const candidates = [choice.override ?? "", choice.requested, choice.definition];
  for (const model of candidates) {
    if (model !== "" && model !== "inherit" && choice.isConfigured(model)) return model;
  }
  return choice.parent;
}

/**
 * One entry per tool call, in order: an error result for a call the turn may not run (settings
 * with `onlyOfferedTools` and a name not among `tools`), else null. What `WaitingClient.early`
 * starts as: the loop appends the refusals in order and never sends those calls.
 */
export function toRefusedResults(
  settings: TurnSettings | null,
  calls: readonly ToolCall[],
  at: number,
): (ToolResultMessage | null)[] {
  if (settings?.onlyOfferedTools !== true) return calls.map(() => null);
  const offered = new Set(settings.tools.map((tool) => tool.name));
  return calls.map((call) =>
    offered.has(call.name)
      ? null
      : toNotRunResult(
          call,
          `Not run: the tool "${call.name}" is not available to this subagent. Use only the tools you were given.`,
          at,
        ),
  );
}

/**
 * The conversation id of the subagent a parent's tool call (`operationID`) runs: stable, so the
 * same call always finds the same child, and unlike any id a client picks.
 */
export function toSubagentConversationID(
  parentConversationID: string,
  operationID: string,
): string {
  const digest = createHash("sha256").update(operationID).digest("hex").slice(0, 24);
  return `${parentConversationID}${SUBAGENT_MARK}${digest}`;
}

/**
 * The top-level conversation a subagent's conversation (any depth) or a branch (rewind.ts) belongs
 * to: the client's conversation id; a top-level id is its own root. A team user's subagents and
 * branches are theirs (docs/team.md "Users and budgets").
 */
export function toRootConversationID(conversationID: string): string {
  const marks = [SUBAGENT_MARK, BRANCH_MARK]
    .map((mark) => conversationID.indexOf(mark))
    .filter((at) => at >= 0);
  return marks.length === 0 ? conversationID : conversationID.slice(0, Math.min(...marks));
}
