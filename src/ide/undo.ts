/**
 * `ide undo` (docs/ide.md): puts back what the journal says setup changed. The settings file is
 * restored byte for byte when nobody changed it since setup, otherwise only our keys are put
 * back (a key the user changed since is left as the user set it). Trust steps are reversed in
 * the opposite order; a step no longer in place is skipped. The CA files go last.
 */
import { existsSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { CA_CERT_FILE, CA_KEY_FILE } from "./ca.ts";
import { type IdeJournal, readJournal, removeJournal, writeJournal } from "./journal.ts";
import { readSettingsText, revertSettings, sha256, writeSettingsText } from "./settings-file.ts";
import type { IdeContext } from "./setup.ts";
import {
  type Action,
  describeAction,
  isStepInPlace,
  NODE_EXTRA_BUNDLE_FILE,
  performAction,
  type TrustStep,
  toRemoveActions,
} from "./trust.ts";

/** `basedOn`: the SHA-256 of the file the plan was made from; undo writes only over that. */
export type SettingsUndo =
  | {
      readonly type: "restore-backup";
      readonly file: string;
      readonly text: string;
      readonly basedOn: string;
    }
  | { readonly type: "remove-file"; readonly file: string; readonly basedOn: string }
  | {
      readonly type: "revert-keys";
      readonly file: string;
      readonly text: string;
      readonly keptByUser: readonly string[];
      readonly basedOn: string;
    }
  | { readonly type: "nothing"; readonly file: string; readonly why: string };

export interface UndoPlan {
  readonly journal: IdeJournal;
  readonly settings: SettingsUndo | undefined;
  readonly trust: readonly { readonly step: TrustStep; readonly actions: readonly Action[] }[];
}

export type UndoCheck =
  | { readonly type: "ready"; readonly plan: UndoPlan }
  | { readonly type: "not-set-up" }
  | { readonly type: "refused"; readonly problem: string };

export async function planUndo(context: IdeContext): Promise<UndoCheck> {
  const read = readJournal(context.ideDirectory);
  if (read.type === "none") return { type: "not-set-up" };
  if (read.type === "bad") return { type: "refused", problem: read.problem };
  const journal = read.journal;
  const settings = journal.settings === undefined ? undefined : planSettingsUndo(journal);
  const trust: { step: TrustStep; actions: Action[] }[] = [];
  for (const step of [...journal.trust].reverse()) {
    // Skip what is verifiably gone already (removed by hand, or setup stopped before it).
    if ((await isStepInPlace(step, context.run)) === false) continue;
    trust.push({ step, actions: toRemoveActions(step, journal.ca.certFile) });
  }
  return { type: "ready", plan: { journal, settings, trust } };
}

function planSettingsUndo(journal: IdeJournal): SettingsUndo {
  const record = journal.settings;
  if (record === undefined) throw new Error("no settings record");
  const { file } = record;
  let current: string | undefined;
  try {
    current = existsSync(file) ? readSettingsText(file) : undefined;
  } catch (error) {
    return { type: "nothing", file, why: (error as Error).message };
  }
  if (current === undefined) return { type: "nothing", file, why: "the file no longer exists" };
  const basedOn = sha256(current);
  if (basedOn === record.writtenSha256) {
    if (!record.existed) return { type: "remove-file", file, basedOn };
    const backup = record.backupFile === undefined ? undefined : readBackup(record.backupFile);
    if (backup !== undefined && sha256(backup) === record.originalSha256) {
      return { type: "restore-backup", file, text: backup, basedOn };
    }
  }
  if (current === undefined) return { type: "nothing", file, why: "the file no longer exists" };
  try {
    const reverted = revertSettings(file, current, record.changes);
    if (reverted.text === current && reverted.keptByUser.length === 0) {
      return { type: "nothing", file, why: "none of our keys are in it any more" };
    }
    return {
      type: "revert-keys",
      file,
      text: reverted.text,
      keptByUser: reverted.keptByUser,
      basedOn,
    };
  } catch (error) {
    return { type: "nothing", file, why: (error as Error).message };
  }
}

export function describeUndoPlan(plan: UndoPlan): string[] {
  const lines: string[] = [];
  const settings = plan.settings;
  if (settings !== undefined) {
    switch (settings.type) {
      case "restore-backup":
        lines.push(`restore ${settings.file} byte for byte from the copy taken at setup`);
        break;
      case "remove-file":
        lines.push(`remove ${settings.file} (setup created it; nothing else was added since)`);
        break;
      case "revert-keys":
        lines.push(
          `put back our keys in ${settings.file} (it changed since setup; your other changes stay)`,
        );
        if (settings.keptByUser.length > 0) {
          lines.push(`  left as you set them since: ${settings.keptByUser.join(", ")}`);
        }
        break;
      case "nothing":
        lines.push(`leave ${settings.file} alone: ${settings.why}`);
        break;
    }
  }
  for (const { actions } of plan.trust) {
    for (const action of actions) lines.push(describeAction(action));
  }
  lines.push(`remove the CA (${plan.journal.ca.certFile} and its key)`);
  return lines;
}

/**
 * Carries the plan out. Every step is tried; the journal is removed only when all succeeded,
 * otherwise it keeps what is left so that `ide undo` can be run again. Returns the failures.
 */
export async function performUndo(
  plan: UndoPlan,
  context: IdeContext,
  report: (line: string) => void,
): Promise<string[]> {
  const failures: string[] = [];
  const settings = plan.settings;
  if (settings !== undefined && settings.type !== "nothing") {
    try {
      const now = existsSync(settings.file) ? readFileSync(settings.file, "utf8") : "";
      if (sha256(now) !== settings.basedOn) {
        throw new Error("it changed while undo was asking; run `cursor-byok ide undo` again");
      }
      if (settings.type === "remove-file") rmSync(settings.file, { force: true });
      else writeSettingsText(settings.file, settings.text);
      report(`restored ${settings.file}`);
    } catch (error) {
      failures.push(`${settings.file}: ${(error as Error).message}`);
    }
  }
  const left: TrustStep[] = [];
  for (const { step, actions } of plan.trust) {
    // Every action of a step is tried; a step whose check then says it is gone counts as undone
    // (a re-run after a partial undo finds some of its actions with nothing left to do).
    const errors: string[] = [];
    for (const action of actions) {
      try {
        await performAction(action, context.run);
        report(`done: ${describeAction(action)}`);
      } catch (error) {
        errors.push((error as Error).message);
      }
    }
    if (errors.length > 0 && (await isStepInPlace(step, context.run)) !== false) {
      failures.push(...errors);
      left.push(step);
    }
  }
  if (failures.length > 0) {
    // Undoing the settings again is harmless (only keys still holding our values change).
    writeJournal(context.ideDirectory, { ...plan.journal, trust: left.reverse() });
    return failures;
  }
  for (const name of [
    CA_KEY_FILE,
    CA_CERT_FILE,
    NODE_EXTRA_BUNDLE_FILE,
    "settings.backup.json",
    "last-seen.json",
  ]) {
    rmSync(path.join(context.ideDirectory, name), { force: true });
  }
  removeJournal(context.ideDirectory);
  report(`removed the CA and the journal from ${context.ideDirectory}`);
  return failures;
}

function readBackup(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}
