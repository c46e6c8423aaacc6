/**
 * `ide setup` as a plan and its execution (docs/ide.md): the plan reads everything and changes
 * nothing, so it can be shown and agreed to; the execution records each change in the journal
 * before making it.
 */
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import {
  CA_CERT_FILE,
  type CertificateAuthority,
  createCertificateAuthority,
  readCertificateAuthority,
  writeCertificateAuthority,
} from "./ca.ts";
import { type IdeJournal, JOURNAL_VERSION, readJournal, writeJournal } from "./journal.ts";
import {
  applySettings,
  type KeyChange,
  readKeys,
  readSettingsText,
  SettingsError,
  sha256,
  toProxySettings,
  writeSettingsText,
} from "./settings-file.ts";
import {
  type Action,
  type CommandRunner,
  describeAction,
  findMissingPrograms,
  performAction,
  planTrust,
  type TrustStep,
  toAddActions,
  toInstallHint,
} from "./trust.ts";

export interface IdeContext {
  readonly platform: string;
  readonly homeDir: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** `<data directory>/ide`. */
  readonly ideDirectory: string;
  readonly settingsFile: string;
  readonly run: CommandRunner;
}

export interface SetupPlan {
  readonly proxyUrl: string;
  readonly ca: { readonly fresh: boolean; readonly authority: CertificateAuthority };
  readonly caPath: string;
  readonly settings: {
    readonly file: string;
    readonly originalText: string | undefined;
    readonly text: string;
    readonly changes: readonly KeyChange[];
  };
  readonly trust: readonly { readonly step: TrustStep; readonly actions: readonly Action[] }[];
  /** What the user should know before agreeing. */
  readonly warnings: readonly string[];
}

export type SetupCheck =
  | { readonly type: "ready"; readonly plan: SetupPlan }
  | { readonly type: "already"; readonly journal: IdeJournal }
  | { readonly type: "refused"; readonly problem: string };

/** What setup would do; changes nothing. */
export async function planSetup(context: IdeContext, proxyUrl: string): Promise<SetupCheck> {
  const existing = readJournal(context.ideDirectory);
  if (existing.type === "ok") return { type: "already", journal: existing.journal };
  if (existing.type === "bad") {
    return {
      type: "refused",
      problem: `${existing.problem}; remove it after checking Cursor's settings by hand`,
    };
  }
  let originalText: string | undefined;
  let applied: ReturnType<typeof applySettings>;
  try {
    originalText = readSettingsText(context.settingsFile);
    applied = applySettings(context.settingsFile, originalText, toProxySettings(proxyUrl));
  } catch (error) {
    if (error instanceof SettingsError) return { type: "refused", problem: error.message };
    throw error;
  }
  const found = readCertificateAuthority(context.ideDirectory);
  if (found.type === "bad") {
    return {
      type: "refused",
      problem: `the CA in ${context.ideDirectory} is unusable (${found.problem}); remove ${context.ideDirectory} and run setup again`,
    };
  }
  const ca =
    found.type === "ok"
      ? { fresh: false, authority: found.authority }
      : { fresh: true, authority: await createCertificateAuthority() };
  const caPath = path.join(context.ideDirectory, CA_CERT_FILE);
  const steps = planTrust({
    platform: context.platform,
    homeDir: context.homeDir,
    env: context.env,
    caPath,
    ca: ca.authority,
  });
  const missing = await findMissingPrograms(
    steps.flatMap((step) => toAddActions(step, caPath)),
    context.run,
  );
  if (missing.length > 0) {
    return { type: "refused", problem: `${toInstallHint(missing)} Nothing was changed.` };
  }
  return {
    type: "ready",
    plan: {
      proxyUrl,
      ca,
      caPath,
      settings: {
        file: context.settingsFile,
        originalText,
        text: applied.text,
        changes: applied.changes,
      },
      trust: steps.map((step) => ({ step, actions: toAddActions(step, caPath) })),
      warnings: toWarnings(context.settingsFile, originalText, applied.changes, steps),
    },
  };
}

function toWarnings(
  file: string,
  text: string | undefined,
  changes: readonly KeyChange[],
  steps: readonly TrustStep[],
): string[] {
  const warnings: string[] = [];
  const proxy = changes.find((change) => change.key === "http.proxy")?.previous;
  if (proxy?.present === true && typeof proxy.value === "string" && proxy.value !== "") {
    warnings.push(
      `Your http.proxy (${proxy.value}) is not used while IDE mode is on: the cursor-byok proxy ` +
        "connects to Cursor and to other hosts directly. Where the network allows no direct " +
        "connection, IDE mode cannot work yet. Undo puts your proxy back.",
    );
  }
  const noProxy =
    text === undefined ? undefined : readKeys(file, text, ["http.noProxy"]).get("http.noProxy");
  if (noProxy?.present === true && /cursor\.sh/.test(JSON.stringify(noProxy.value))) {
    warnings.push(
      "Your http.noProxy names cursor.sh, so Cursor would bypass the proxy for it: remove that entry.",
    );
  }
  for (const step of steps) {
    if ("previous" in step && step.previous !== undefined) {
      warnings.push(
        `NODE_EXTRA_CA_CERTS is set (${step.previous}): it will name a bundle of those ` +
          "certificates and ours; undo sets it back.",
      );
    }
  }
  if (steps.some((step) => step.type === "launchctl-env")) {
    warnings.push(
      "macOS forgets `launchctl setenv` at logout; run `cursor-byok ide status` after a restart " +
        "and `cursor-byok ide undo` + `ide setup` if the variable is missing.",
    );
  }
  return warnings;
}

/** The plan as lines a person reads before agreeing. */
export function describeSetupPlan(plan: SetupPlan, ideDirectory: string): string[] {
  const lines = [
    `1. ${plan.ca.fresh ? "Create" : "Reuse"} the local certificate authority in ${ideDirectory}:`,
    `     ${path.join(ideDirectory, CA_CERT_FILE)} (public), ca-key.pem (private, readable by you only).`,
    "     It can only vouch for cursor.sh hosts (name constraint); nothing else is ever decrypted.",
    `   SHA-256 fingerprint ${plan.ca.authority.sha256.replace(/(..)(?!$)/g, "$1:")}`,
    `2. Edit Cursor's settings ${plan.settings.file}${plan.settings.originalText === undefined ? " (created)" : ""}:`,
  ];
  for (const change of plan.settings.changes) {
    const before = change.previous.present ? JSON.stringify(change.previous.value) : "(not set)";
    lines.push(`     ${change.key}: ${before} → ${JSON.stringify(change.value)}`);
  }
  lines.push("     A backup is kept; `cursor-byok ide undo` restores the file.");
  lines.push("3. Trust the CA for Cursor:");
  for (const { actions } of plan.trust) {
    for (const action of actions) lines.push(`     ${describeAction(action)}`);
  }
  for (const warning of plan.warnings) lines.push(`Note: ${warning}`);
  return lines;
}

/**
 * Carries the plan out, journal first. Stops at the first failure (the journal then holds what
 * was done, for `ide undo`). `report` gets one line per finished change.
 */
export async function performSetup(
  plan: SetupPlan,
  context: IdeContext,
  report: (line: string) => void,
  now: () => Date = () => new Date(),
): Promise<void> {
  // The settings file is re-read: if it changed while setup was asking, stop before any change.
  const current = existsSync(plan.settings.file) ? readSettingsText(plan.settings.file) : undefined;
  if (current !== plan.settings.originalText) {
    throw new SettingsError(
      plan.settings.file,
      "changed while setup was asking; nothing was changed, run setup again",
    );
  }
  mkdirSync(context.ideDirectory, { recursive: true, mode: 0o700 });
  if (plan.ca.fresh) {
    writeCertificateAuthority(context.ideDirectory, plan.ca.authority);
    report(`created the CA: ${plan.caPath}`);
  }
  const backupFile = path.join(context.ideDirectory, "settings.backup.json");
  if (plan.settings.originalText !== undefined) {
    copyFileSync(plan.settings.file, backupFile);
  }
  let journal: IdeJournal = {
    version: JOURNAL_VERSION,
    createdAt: now().toISOString(),
    proxyUrl: plan.proxyUrl,
    ca: {
      certFile: plan.caPath,
      sha256: plan.ca.authority.sha256,
      sha1: plan.ca.authority.sha1,
      serial: plan.ca.authority.serial,
    },
    settings: {
      file: plan.settings.file,
      existed: plan.settings.originalText !== undefined,
      ...(plan.settings.originalText === undefined
        ? {}
        : { originalSha256: sha256(plan.settings.originalText), backupFile }),
      writtenSha256: sha256(plan.settings.text),
      changes: plan.settings.changes,
    },
    trust: [],
  };
  writeJournal(context.ideDirectory, journal);
  writeSettingsText(plan.settings.file, plan.settings.text);
  report(`updated ${plan.settings.file}`);
  for (const { step, actions } of plan.trust) {
    journal = { ...journal, trust: [...journal.trust, step] };
    writeJournal(context.ideDirectory, journal);
    for (const action of actions) {
      await performAction(action, context.run);
      report(`done: ${describeAction(action)}`);
    }
  }
}
