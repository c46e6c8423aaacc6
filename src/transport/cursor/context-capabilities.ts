/**
 * What the request context offers the agent beyond files and rules (RequestContext 22, 25, 29,
 * 46-48; UserMessage 21): skills the model may load, the user's custom subagents, the command
 * auto-run rules, and what the user's hooks add for the model. Rendered as supplements (context.ts); sorted so that the same offer renders the same
 * bytes every turn and is not appended again.
 */
import { compare, tag } from "./context-tag.ts";
import type { HookAdditionalContext } from "./gen/agent/v1/common_pb.js";
import type {
  PermissionsAutoRunInstructions,
  RequestContext,
} from "./gen/agent/v1/request_context_pb.js";
import { truncateMiddle } from "./tools/text.ts";

const LIST_LIMIT = 20_000;

export function renderSkills(context: RequestContext): string | null {
  const skills = context.agentSkills
    .filter((skill) => !skill.disableModelInvocation && skill.parseError === undefined)
    .sort((a, b) => compare(a.fullPath, b.fullPath));
  if (skills.length === 0) return null;
  const list = skills.map(
    (skill) => `- ${skill.fullPath}: ${oneLine(skill.description) || "(no description)"}`,
  );
  return tag(
    "skills",
    {},
    "Skills are instructions for particular tasks. When a task fits a skill's description, read " +
      `its file with read_file and follow it.\n${truncateMiddle(list.join("\n"), LIST_LIMIT)}`,
  );
}

export function renderCustomSubagents(context: RequestContext): string | null {
  const subagents = [...context.customSubagents].sort((a, b) => compare(a.name, b.name));
  if (subagents.length === 0) return null;
  const list = subagents.map(
    (agent) =>
      `- ${agent.name}: ${oneLine(agent.description) || "(no description)"}` +
      (agent.fullPath === "" ? "" : ` (${agent.fullPath})`),
  );
  return tag(
    "custom_subagents",
    {},
    "The user defined these subagents. When a task fits one, run it with the task tool " +
      "(subagent_type: its name). Where the task tool is not offered, do its task yourself, " +
      "reading its definition file for its instructions.\n" +
      truncateMiddle(list.join("\n"), LIST_LIMIT),
  );
}

export function renderAutoRunRules(context: RequestContext): string | null {
  const sections = [
    section("Set by the user", context.userPermissionsAutoRun),
    section("Set by the project", context.projectPermissionsAutoRun),
    section("Set by an administrator", context.adminPermissionsAutoRun),
  ].filter((part) => part !== null);
  if (sections.length === 0) return null;
  return tag(
    "command_auto_run_rules",
    {},
    "The editor runs commands without asking the user when these rules allow it, and never " +
      "runs blocked ones. Prefer commands the rules allow.\n\n" +
      truncateMiddle(sections.join("\n\n"), LIST_LIMIT),
  );
}

function section(title: string, rules: PermissionsAutoRunInstructions | undefined): string | null {
  if (rules === undefined) return null;
  const allow = rules.allowInstructions.filter((rule) => rule.trim() !== "");
  const block = rules.blockInstructions.filter((rule) => rule.trim() !== "");
  if (allow.length === 0 && block.length === 0) return null;
  const lines = [`${title}:`];
  for (const rule of allow) lines.push(`- allowed: ${oneLine(rule)}`);
  for (const rule of block) lines.push(`- blocked: ${oneLine(rule)}`);
  return lines.join("\n");
}

function oneLine(text: string): string {
  return text.trim().replace(/\s+/g, " ");
}

/**
 * Text the user's hooks add for the model: the request context's (25) and the user message's
 * (21, by hook event), in the order the client sent them.
 */
export function renderHookContext(
  context: RequestContext | undefined,
  fromMessage: readonly HookAdditionalContext[],
): string | null {
  const parts: string[] = [];
  const general = context?.hooksAdditionalContext?.trim() ?? "";
  if (general !== "") parts.push(general);
  for (const entry of fromMessage) {
    const content = entry.content.trim();
    if (content !== "") parts.push(tag("hook", { event: entry.hookEventName }, content));
  }
  if (parts.length === 0) return null;
  return tag(
    "hook_context",
    {},
    `Context added by the user's hooks:\n${truncateMiddle(parts.join("\n\n"), LIST_LIMIT)}`,
  );
}
