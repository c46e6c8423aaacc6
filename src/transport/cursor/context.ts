/**
 * Per-turn context → context supplements for the loop (`{ key, text }`). The loop appends a
 * supplement only when its text changed since the model last saw the same key, so keys are
 * stable names and texts are deterministic renderings of what the client sent: no clock, no
 * random ids, fixed ordering (client order for lists the user orders, sorted otherwise).
 */
import type { ContextSupplement } from "../../loop/types.ts";
import type { BlobStore } from "./blobs.ts";
import { renderAttached } from "./context-attached.ts";
import {
  renderAutoRunRules,
  renderCustomSubagents,
  renderHookContext,
  renderSkills,
} from "./context-capabilities.ts";
import { compare, tag } from "./context-tag.ts";
import type { CursorRule, HookAdditionalContext } from "./gen/agent/v1/common_pb.js";
import type { RequestContext } from "./gen/agent/v1/request_context_pb.js";
import type { SelectedContext } from "./gen/agent/v1/user_message_pb.js";
import { truncateMiddle } from "./tools/text.ts";
import { renderTree } from "./tools/tree.ts";

export interface ContextSources {
  readonly requestContext: RequestContext | undefined;
  readonly selectedContext: SelectedContext | undefined;
  /** `AgentRunRequest.custom_system_prompt`: kept out of the system prompt so it stays static. */
  readonly customInstructions: string | undefined;
  /** `AgentRunRequest.exclude_workspace_context`: drop environment, git, layout and rules. */
  readonly excludeWorkspace: boolean;
  /** The run request's pre-fetched blobs (documents, PR texts sent by reference). */
  readonly blobs?: BlobStore;
  /** `UserMessage.hook_additional_contexts`: what the user's hooks add to this message. */
  readonly hookContexts?: readonly HookAdditionalContext[];
}

/**
 * The keys of the supplements a subagent starts with: the facts about the machine and workspace
 * and the user's standing instructions, which its system prompt says arrive as context. Not the
 * parent's attachments, selections, hooks or custom-subagent list: the parent hands the subagent
 * what the task needs in its prompt, and a subagent cannot delegate.
 */
const SUBAGENT_CONTEXT_KEYS: ReadonlySet<string> = new Set([
  "environment",
  "git",
  "project-layout",
  "rules",
  "skills",
  "mcp-instructions",
  "auto-run-rules",
  "custom-instructions",
]);

/**
 * The supplements a subagent's first turn starts with (README "Subagents"): those of
 * `SUBAGENT_CONTEXT_KEYS` out of the request's. Fixed for the child once started, so its request
 * prefix stays stable.
 */
export function toSubagentContext(
  sources: Omit<ContextSources, "selectedContext" | "hookContexts">,
): ContextSupplement[] {
  return ofSubagentContext(toContextSupplements({ ...sources, selectedContext: undefined }));
}

/**
 * `toSubagentContext` of the same sources, taken from the supplements `toContextSupplements`
 * already made for them (a turn start renders the context once, not twice: issue #19). The same
 * list: the subagent keys are rendered from the request context and the custom instructions
 * alone, and no attached, selected or hook item has one of those keys (context.test.ts).
 */
export function ofSubagentContext(supplements: readonly ContextSupplement[]): ContextSupplement[] {
  return supplements.filter((supplement) => SUBAGENT_CONTEXT_KEYS.has(supplement.key));
}

/** Largest rendering of one attached item; longer ones are cut in the middle (stated). */
const ITEM_LIMIT = 100_000;
const LAYOUT_LINES = 400;

export function toContextSupplements(sources: ContextSources): ContextSupplement[] {
  const supplements: ContextSupplement[] = [];
  const add = (key: string, text: string | null) => {
    if (text !== null && text !== "") supplements.push(toSupplement(key, text));
  };
  const context = sources.requestContext;
  if (context !== undefined && !sources.excludeWorkspace) {
    add("environment", renderEnvironment(context));
    add("git", renderGit(context));
    add("project-layout", renderLayouts(context));
    add("rules", renderRules(context));
    add("skills", renderSkills(context));
    add("custom-subagents", renderCustomSubagents(context));
  }
  if (context !== undefined) {
    add("mcp-instructions", renderMcpInstructions(context));
    add("auto-run-rules", renderAutoRunRules(context));
  }
  add("hook-context", renderHookContext(context, sources.hookContexts ?? []));
  const custom = sources.customInstructions?.trim() ?? "";
  if (custom !== "") add("custom-instructions", tag("custom_instructions", {}, custom));
  if (sources.selectedContext !== undefined) {
    for (const item of renderSelected(sources.selectedContext)) add(item.key, item.text);
    const attached = renderAttached(sources.selectedContext, context, sources.blobs ?? new Map());
    for (const item of attached) add(item.key, item.text);
  }
  return supplements;
}

/**
 * `{ key, text }`; for the workspace's keys (`SUBAGENT_CONTEXT_KEYS`), one shared frozen value per
 * distinct text. Every conversation of a workspace renders the same environment, rules and layout,
 * and each one's history keeps its supplements' texts for as long as it is live: one copy, not one
 * per conversation (issue #19, heap per open stream). The last `SHARED_PER_KEY` texts of each key
 * are kept, most recent first, found by length and then by comparing the text (no hashing of
 * texts of tens of KB at every turn start); at most `SHARED_CHARS` characters in all, then it
 * starts over, and a text above an eighth of that is not kept.
 *
 * `sharedSupplements` is a module-level intern table (a kind STYLE.md §7.2 warns about as memory
 * across requests): content-keyed, so a hit returns a text equal to the one rendered and no request
 * sees another's data through it, and bounded as above. In a server of many users it keeps other
 * users' rules and instructions in the heap (≤ 2 MB) after their conversations end; nothing reads
 * them but an equal rendering. Its rules are tested in context.test.ts ("shared supplements: …").
 */
function toSupplement(key: string, text: string): ContextSupplement {
  if (!SUBAGENT_CONTEXT_KEYS.has(key)) return { key, text };
  let kept = sharedSupplements.get(key);
  if (kept !== undefined) {
    for (let i = 0; i < kept.length; i++) {
      const found = kept[i] as ContextSupplement;
      if (found.text.length !== text.length || found.text !== text) continue;
      if (i > 0) {
        kept.splice(i, 1);
        kept.unshift(found);
      }
      return found;
    }
  }
  const supplement: ContextSupplement = Object.freeze({ key, text });
  if (text.length > SHARED_CHARS / 8) return supplement;
  if (sharedChars + text.length > SHARED_CHARS) {
    sharedSupplements.clear();
    sharedChars = 0;
    kept = undefined;
  }
  if (kept === undefined) {
    kept = [];
    sharedSupplements.set(key, kept);
  }
  kept.unshift(supplement);
  sharedChars += text.length;
  if (kept.length > SHARED_PER_KEY) sharedChars -= (kept.pop() as ContextSupplement).text.length;
  return supplement;
}

/** Characters of the shared supplements' texts kept at most (≈ 2 MB of UTF-16). */
const SHARED_CHARS = 1 << 20;
/** Texts kept per key: a few workspaces (or a few states of one) served at once. */
const SHARED_PER_KEY = 4;
const sharedSupplements = new Map<string, ContextSupplement[]>();
let sharedChars = 0;

function renderEnvironment(context: RequestContext): string | null {
  const env = context.env;
  if (env === undefined) return null;
  const lines: string[] = [];
  if (env.osVersion !== "") lines.push(`OS: ${env.osVersion}`);
  if (env.shell !== "") lines.push(`Shell: ${env.shell}`);
  if (env.workspacePaths.length > 0)
    lines.push(`Workspace roots: ${env.workspacePaths.join(", ")}`);
  if (env.processWorkingDirectory !== undefined && env.processWorkingDirectory !== "") {
    lines.push(`Working directory: ${env.processWorkingDirectory}`);
  }
  if (env.timeZone !== "") lines.push(`Time zone: ${env.timeZone}`);
  if (env.sandboxEnabled) lines.push("Commands run in a sandbox.");
  if (lines.length === 0) return null;
  return tag("environment", {}, lines.join("\n"));
}

function renderGit(context: RequestContext): string | null {
  if (context.gitRepos.length === 0) return null;
  const repos = [...context.gitRepos]
    .sort((a, b) => compare(a.path, b.path))
    .map((repo) => {
      const head = [`Repository ${repo.path}`, `branch: ${repo.branchName || "(detached)"}`];
      if (repo.remoteUrl !== undefined && repo.remoteUrl !== "")
        head.push(`remote: ${withoutCredentials(repo.remoteUrl)}`);
      const status = repo.status.trim();
      return status === ""
        ? head.join("\n")
        : `${head.join("\n")}\nstatus:\n${truncateMiddle(status, 4000)}`;
    });
  return tag("git", {}, repos.join("\n\n"));
}

function renderLayouts(context: RequestContext): string | null {
  if (context.projectLayouts.length === 0) return null;
  const trees = context.projectLayouts.map((root) => renderTree(root, LAYOUT_LINES));
  return tag("project_layout", {}, trees.join("\n\n"));
}

function renderRules(context: RequestContext): string | null {
  const disabled = new Set(context.disabledTeamRules);
  const rules = [...context.rules, ...context.nonFileRules]
    .filter((rule) => !disabled.has(rule.fullPath))
    .sort((a, b) => compare(a.fullPath, b.fullPath));
  const always = rules.filter(isAlwaysApplied);
  const onDemand = rules.filter((rule) => !isAlwaysApplied(rule) && ruleHint(rule) !== null);
  const parts: string[] = [];
  for (const rule of always) {
    parts.push(
      tag("rule", { path: rule.fullPath }, truncateMiddle(rule.content.trim(), ITEM_LIMIT)),
    );
  }
  if (context.cloudRule !== undefined && context.cloudRule.trim() !== "") {
    parts.push(tag("rule", { source: "team" }, context.cloudRule.trim()));
  }
  if (onDemand.length > 0) {
    const list = onDemand.map((rule) => `- ${rule.fullPath}: ${ruleHint(rule)}`);
    parts.push(`Rules to read with read_file when they apply:\n${list.join("\n")}`);
  }
  if (parts.length === 0) return null;
  return tag("rules", {}, `Follow these project rules.\n\n${parts.join("\n\n")}`);
}

function isAlwaysApplied(rule: CursorRule): boolean {
  return rule.isRequired === true || rule.type?.type.case === "global";
}

function ruleHint(rule: CursorRule): string | null {
  const type = rule.type?.type;
  switch (type?.case) {
    case "agentFetched":
      return type.value.description.trim() || "read when relevant";
    case "fileGlobbed":
      return type.value.globs.length > 0 ? `applies to ${type.value.globs.join(", ")}` : null;
    default:
      return null;
  }
}

function renderMcpInstructions(context: RequestContext): string | null {
  const entries = context.mcpInstructions
    .filter((entry) => entry.instructions.trim() !== "")
    .sort((a, b) => compare(a.serverName, b.serverName));
  if (entries.length === 0) return null;
  const parts = entries.map((entry) =>
    tag(
      "server",
      { name: entry.serverName },
      truncateMiddle(entry.instructions.trim(), ITEM_LIMIT),
    ),
  );
  return tag("mcp_instructions", {}, parts.join("\n"));
}

function renderSelected(selected: SelectedContext): ContextSupplement[] {
  const items: ContextSupplement[] = [];
  for (const file of selected.files) {
    items.push({
      key: `file:${file.path}`,
      text: tag("attached_file", { path: file.path }, truncateMiddle(file.content, ITEM_LIMIT)),
    });
  }
  for (const selection of selected.codeSelections) {
    const range = toLineRange(selection.range);
    items.push({
      key: `selection:${selection.path}:${range}`,
      text: tag(
        "attached_selection",
        { path: selection.path, lines: range },
        truncateMiddle(selection.content, ITEM_LIMIT),
      ),
    });
  }
  for (const folder of selected.folders) {
    const tree =
      folder.directoryTree === undefined ? "" : renderTree(folder.directoryTree, LAYOUT_LINES);
    items.push({
      key: `folder:${folder.path}`,
      text: tag("attached_folder", { path: folder.path }, tree),
    });
  }
  selected.terminals.forEach((terminal, index) => {
    const name = terminal.title ?? terminal.path ?? `terminal ${index + 1}`;
    items.push({
      key: `terminal:${name}`,
      text: tag("attached_terminal", { name }, truncateMiddle(terminal.content, ITEM_LIMIT)),
    });
  });
  selected.terminalSelections.forEach((selection, index) => {
    const name = selection.title ?? selection.path ?? `terminal ${index + 1}`;
    items.push({
      key: `terminal-selection:${name}:${toLineRange(selection.range)}`,
      text: tag(
        "attached_terminal_selection",
        { name },
        truncateMiddle(selection.content, ITEM_LIMIT),
      ),
    });
  });
  for (const entry of selected.cursorRules) {
    const rule = entry.rule;
    if (rule === undefined) continue;
    items.push({
      key: `rule:${rule.fullPath}`,
      text: tag("rule", { path: rule.fullPath }, truncateMiddle(rule.content.trim(), ITEM_LIMIT)),
    });
  }
  for (const command of selected.cursorCommands) {
    items.push({
      key: `command:${command.name}`,
      text: tag("command", { name: command.name }, truncateMiddle(command.content, ITEM_LIMIT)),
    });
  }
  for (const link of selected.externalLinks) {
    const body = link.pdfContent !== undefined ? truncateMiddle(link.pdfContent, ITEM_LIMIT) : "";
    items.push({ key: `link:${link.url}`, text: tag("attached_link", { url: link.url }, body) });
  }
  if (selected.gitDiff !== undefined && selected.gitDiff.content !== "") {
    items.push({
      key: "git-diff",
      text: tag(
        "git_diff",
        { of: "working tree" },
        truncateMiddle(selected.gitDiff.content, ITEM_LIMIT),
      ),
    });
  }
  const branchDiff = selected.gitDiffFromBranchToMain;
  if (branchDiff !== undefined && branchDiff.content !== "") {
    items.push({
      key: "git-diff-main",
      text: tag(
        "git_diff",
        { of: "branch vs main" },
        truncateMiddle(branchDiff.content, ITEM_LIMIT),
      ),
    });
  }
  for (const commit of selected.gitCommits) {
    const body = [commit.message, commit.description ?? "", commit.diff].filter(
      (part) => part !== "",
    );
    items.push({
      key: `commit:${commit.sha}`,
      text: tag("git_commit", { sha: commit.sha }, truncateMiddle(body.join("\n\n"), ITEM_LIMIT)),
    });
  }
  const extras = [
    ...selected.extraContext,
    ...selected.extraContextEntries.flatMap((entry) =>
      entry.dataOrBlobId.case === "data" ? [entry.dataOrBlobId.value] : [],
    ),
  ];
  extras.forEach((extra, index) => {
    if (extra.trim() === "") return;
    items.push({
      key: `extra:${index}`,
      text: tag("extra_context", {}, truncateMiddle(extra, ITEM_LIMIT)),
    });
  });
  return items;
}

function toLineRange(
  range: { start?: { line: number }; end?: { line: number } } | undefined,
): string {
  if (range?.start === undefined) return "?";
  const start = range.start.line;
  const end = range.end?.line ?? start;
  return start === end ? `${start}` : `${start}-${end}`;
}

/**
 * A remote URL without the user-info part: `https://user:token@host/x` → `https://host/x`.
 * Context enters history (and so the store), where a credential must never land.
 */
export function withoutCredentials(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, "$1");
}
