/**
 * `doctor` on a team's client (`team.server`; docs/team.md "Clients"): whether the user's team
 * token is set, and whether the team server accepts it — one `GetServerConfig` call with it, the
 * call the clients make first. The token is never printed.
 */
import type { TeamClientSettings } from "../config/index.ts";
import { errorMessage } from "../errors/error-message.ts";
import type { CheckResult } from "./doctor-checks.ts";

const PROCEDURE = "/aiserver.v1.AiService/GetServerConfig";

export async function checkTeam(team: TeamClientSettings, timeoutMs: number): Promise<CheckResult> {
  if (team.token === undefined) {
    return {
      status: "fail",
      name: "team",
      detail: `${team.tokenVariable} is not set: the IDE and cursor-agent cannot use ${team.server}`,
      hint: `export ${team.tokenVariable}=<the token \`cursor-byok users add\` printed for you>`,
    };
  }
  let status: number;
  try {
    const answer = await fetch(`${team.server}${PROCEDURE}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${team.token.reveal()}`,
      },
      body: "{}",
      signal: AbortSignal.timeout(timeoutMs),
    });
    await answer.arrayBuffer();
    status = answer.status;
  } catch (error) {
    return {
      status: "fail",
      name: "team",
      detail: `${team.server} cannot be reached (${errorMessage(error)})`,
      hint: "check team.server and your network; the team's admin can check the server's /readyz",
    };
  }
  if (status === 200) {
    return { status: "ok", name: "team", detail: `${team.server} accepts your team token` };
  }
  if (status === 401) {
    return {
      status: "fail",
      name: "team",
      detail: `${team.server} refused your team token (from ${team.tokenVariable})`,
      hint: "it is mistyped or revoked: ask your team's admin for a new one (`cursor-byok users add`)",
    };
  }
  return {
    status: "fail",
    name: "team",
    detail: `${team.server} answered HTTP ${status}`,
    hint: "the team server has a problem: tell your team's admin",
  };
}
