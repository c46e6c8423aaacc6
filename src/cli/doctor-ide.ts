/**
 * `doctor`'s IDE checks (docs/ide.md): only when IDE mode is set up, or when Cursor's settings
 * point at our proxy without it (stale settings make Cursor unusable, so that is a failure).
 */
import type { Config } from "../config/index.ts";
import { toIdeDirectory } from "../ide/journal.ts";
import { toSettingsPath } from "../ide/settings-file.ts";
import { type IdeStatus, readIdeStatus, toStaleProblem } from "../ide/status.ts";
import { type CommandRunner, describeAction, toAddActions } from "../ide/trust.ts";
import type { CheckResult } from "./doctor-checks.ts";
import { toProxyUrl } from "./ide.ts";
import type { CliIO } from "./io.ts";

export async function checkIde(
  config: Config,
  io: CliIO,
  run: CommandRunner,
): Promise<CheckResult[]> {
  const status = await readIdeStatus({
    ideDirectory: toIdeDirectory(config.dataDirectory),
    settingsFile: toSettingsPath(io),
    configuredProxyUrl: toProxyUrl(config),
    run,
  });
  return toIdeResults(status);
}

export function toIdeResults(status: IdeStatus): CheckResult[] {
  const stale = toStaleProblem(status);
  if (status.journal.type === "none") {
    return stale === undefined
      ? [
          {
            status: "skip",
            name: "ide",
            detail: "IDE mode is not set up (`cursor-byok ide setup`)",
          },
        ]
      : [{ status: "fail", name: "ide", detail: stale }];
  }
  if (status.journal.type === "bad") {
    return [
      {
        status: "fail",
        name: "ide",
        detail: status.journal.problem,
        hint: "run `cursor-byok ide undo`",
      },
    ];
  }
  const journal = status.journal.journal;
  const results: CheckResult[] = [];
  results.push(
    status.ca.type === "ok"
      ? {
          status: "ok",
          name: "ide ca",
          detail: `${journal.ca.certFile} is valid until ${status.ca.authority.notAfter.toISOString().slice(0, 10)}`,
        }
      : {
          status: "fail",
          name: "ide ca",
          detail: status.ca.type === "bad" ? status.ca.problem : "the CA files are missing",
          hint: "`cursor-byok ide undo`, then `cursor-byok ide setup`",
        },
  );
  for (const { step, inPlace } of status.trust) {
    const added = toAddActions(step, journal.ca.certFile).map(describeAction).at(-1) ?? step.type;
    results.push(
      inPlace === false
        ? {
            status: "fail",
            name: "ide trust",
            detail: `not in place: ${added}`,
            hint: "`cursor-byok ide undo`, then `cursor-byok ide setup`",
          }
        : {
            status: inPlace === true ? "ok" : "skip",
            name: "ide trust",
            detail: inPlace === true ? `in place: ${added}` : `cannot be checked here: ${added}`,
          },
    );
  }
  results.push(
    status.settings.type === "ours"
      ? {
          status: "ok",
          name: "ide set",
          detail: `${status.settingsFile} points at ${status.settings.proxy}`,
        }
      : {
          status: "fail",
          name: "ide set",
          detail:
            status.settings.type === "unreadable"
              ? status.settings.problem
              : `${status.settingsFile} does not point at ${journal.proxyUrl}`,
          hint: "`cursor-byok ide undo`, then `cursor-byok ide setup`",
        },
  );
  if (stale !== undefined) {
    results.push({ status: "fail", name: "ide proxy", detail: stale });
  } else if (!status.listening) {
    results.push({
      status: "fail",
      name: "ide proxy",
      detail: `nothing listens on ${journal.proxyUrl}`,
      hint: "start the server (`npm start`); it runs the proxy in IDE mode",
    });
  } else if (status.selfTest?.ok === true) {
    results.push({
      status: "ok",
      name: "ide proxy",
      detail: `${journal.proxyUrl}: ${status.selfTest.detail}`,
    });
  } else {
    results.push({
      status: "fail",
      name: "ide proxy",
      detail: `${journal.proxyUrl} is listening, but a request through it failed: ${status.selfTest?.problem ?? "not tried"}`,
      hint: "is another program on that port? `cursor-byok ide status` shows more",
    });
  }
  results.push(
    status.lastSeen === undefined
      ? {
          status: "skip",
          name: "ide seen",
          detail: "Cursor has not reached the proxy yet (restart Cursor after setup)",
        }
      : {
          status: "ok",
          name: "ide seen",
          detail: `Cursor last reached us at ${status.lastSeen.at} (${status.lastSeen.host}${status.lastSeen.path})`,
        },
  );
  return results;
}
