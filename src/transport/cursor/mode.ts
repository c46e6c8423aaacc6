/**
 * The agent modes the server distinguishes. Cursor's other modes (triage, project, multitask,
 * custom, unspecified) run as `agent`: they differ in client UI, not in what the model may do.
 */
import { AgentMode } from "./gen/agent/v1/common_pb.js";

export type Mode = "agent" | "ask" | "plan" | "debug";

export const MODES: readonly Mode[] = ["agent", "ask", "plan", "debug"];

export function fromAgentMode(mode: AgentMode | undefined): Mode {
  switch (mode) {
    case AgentMode.ASK:
      return "ask";
    case AgentMode.PLAN:
      return "plan";
    case AgentMode.DEBUG:
      return "debug";
    default:
      return "agent";
  }
}

export function toAgentMode(mode: Mode): AgentMode {
  switch (mode) {
    case "agent":
      return AgentMode.AGENT;
    case "ask":
      return AgentMode.ASK;
    case "plan":
      return AgentMode.PLAN;
    case "debug":
      return AgentMode.DEBUG;
  }
}
