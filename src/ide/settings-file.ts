/**
 * Cursor's user `settings.json` (JSONC: comments and trailing commas allowed), edited so that
 * everything else in the file stays as the user wrote it (docs/ide.md). Pure functions over the
 * text; reading and writing are separate so setup can show the plan before it changes anything.
 */
import { createHash } from "node:crypto";
import { readFileSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import {
  applyEdits,
  type FormattingOptions,
  getNodeValue,
  modify,
  type Node,
  type ParseError,
  parseTree,
  printParseErrorCode,
} from "jsonc-parser";
import { writeAtomically } from "./ca.ts";

/** The keys IDE mode sets. Never `http.proxyStrictSSL: false`: that would turn off checks for all hosts. */
export function toProxySettings(proxyUrl: string): Readonly<Record<string, unknown>> {
  return {
    "http.proxy": proxyUrl,
    "http.proxySupport": "on",
    "cursor.general.disableHttp2": true,
    "http.experimental.systemCertificatesV2": true,
  };
}

/** What a key held before setup: absent, or a JSON value. */
export type PreviousValue =
  | { readonly present: false }
  | { readonly present: true; readonly value: unknown };

export interface KeyChange {
  readonly key: string;
  readonly previous: PreviousValue;
  readonly value: unknown;
}

export class SettingsError extends Error {
  readonly file: string;
  constructor(file: string, problem: string) {
    super(`${file}: ${problem}`);
    this.name = "SettingsError";
    this.file = file;
  }
}

export interface PlatformPaths {
  readonly platform: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly homeDir: string;
}

/** Where Cursor keeps the user's settings on this platform (docs/ide.md). */
export function toSettingsPath(inputs: PlatformPaths): string {
  const { platform, env, homeDir } = inputs;
  const override = env.CURSOR_BYOK_IDE_SETTINGS;
  if (override !== undefined && override !== "") return override;
  if (platform === "darwin") {
    return path.join(homeDir, "Library", "Application Support", "Cursor", "User", "settings.json");
  }
  if (platform === "win32") {
    const appData = env.APPDATA ?? path.join(homeDir, "AppData", "Roaming");
    return path.win32.join(appData, "Cursor", "User", "settings.json");
  }
  const config =
    env.XDG_CONFIG_HOME !== undefined && env.XDG_CONFIG_HOME !== ""
      ? env.XDG_CONFIG_HOME
      : path.join(homeDir, ".config");
  return path.join(config, "Cursor", "User", "settings.json");
}

/** The file's text; `undefined` when it does not exist but its folder does (setup creates it). */
export function readSettingsText(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") {
      const folder = path.dirname(file);
      if (isDirectory(folder)) return undefined;
      throw new SettingsError(
        file,
        `not found, and neither is its folder ${folder}. Is Cursor installed? Start it once, ` +
          "or name the file with --settings.",
      );
    }
    if (code === "EACCES" || code === "EPERM") {
      throw new SettingsError(file, "cannot be read: permission denied. Nothing was changed.");
    }
    if (code === "EISDIR") throw new SettingsError(file, "is a directory, not a file");
    throw new SettingsError(file, `cannot be read (${code ?? String(error)})`);
  }
}

/** The settings object's tree. @throws SettingsError with line:column for a syntax error. */
function parseSettings(file: string, raw: string): Node | undefined {
  // Cursor reads a blank file as no settings, and a UTF-8 byte-order mark as nothing.
  const text = withoutBom(raw);
  if (text.trim() === "") return undefined;
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  const first = errors[0];
  if (first !== undefined) {
    const { line, column } = toLineColumn(text, first.offset);
    throw new SettingsError(
      file,
      `${line}:${column}: ${describeParseError(printParseErrorCode(first.error))}. Fix the file ` +
        "(Cursor shows the same error when you open it), then run this again. Nothing was changed.",
    );
  }
  if (root !== undefined && root.type !== "object") {
    throw new SettingsError(file, "the top level is not an object. Nothing was changed.");
  }
  return root;
}

/** The current value of each of `keys` (top-level properties; names may contain dots). */
export function readKeys(
  file: string,
  text: string,
  keys: readonly string[],
): Map<string, PreviousValue> {
  const root = parseSettings(file, text);
  const values = new Map<string, PreviousValue>();
  for (const key of keys) {
    const property = root?.children?.find((child) => child.children?.[0]?.value === key);
    const valueNode = property?.children?.[1];
    values.set(
      key,
      valueNode === undefined
        ? { present: false }
        : { present: true, value: getNodeValue(valueNode) },
    );
  }
  return values;
}

/** `text` with `settings` set, and what each key held before. */
export function applySettings(
  file: string,
  text: string | undefined,
  settings: Readonly<Record<string, unknown>>,
): { readonly text: string; readonly changes: readonly KeyChange[] } {
  const bom = text?.startsWith(BOM) === true ? BOM : "";
  const body = withoutBom(text ?? "");
  let next = body.trim() === "" ? "{\n}\n" : body;
  const previous = readKeys(file, next, Object.keys(settings));
  const changes: KeyChange[] = [];
  const formatting = toFormatting(next);
  for (const [key, value] of Object.entries(settings)) {
    const before = previous.get(key) ?? { present: false };
    changes.push({ key, previous: before, value });
    if (before.present && isSameJson(before.value, value)) continue;
    next = applyEdits(next, modify(next, [key], value, { formattingOptions: formatting }));
  }
  return { text: bom + next, changes };
}

/**
 * Undoes `changes` in `text`, key by key: a key still holding what setup wrote gets its old value
 * back (or is removed); a key the user changed since is left alone and reported.
 */
export function revertSettings(
  file: string,
  text: string,
  changes: readonly KeyChange[],
): { readonly text: string; readonly keptByUser: readonly string[] } {
  const bom = text.startsWith(BOM) ? BOM : "";
  const current = readKeys(
    file,
    text,
    changes.map((change) => change.key),
  );
  let next = withoutBom(text);
  const keptByUser: string[] = [];
  const formatting = toFormatting(text);
  for (const change of changes) {
    const now = current.get(change.key) ?? { present: false };
    if (!now.present || !isSameJson(now.value, change.value)) {
      if (!isSamePrevious(now, change.previous)) keptByUser.push(change.key);
      continue;
    }
    const value = change.previous.present ? change.previous.value : undefined;
    next = applyEdits(next, modify(next, [change.key], value, { formattingOptions: formatting }));
  }
  return { text: bom + next, keptByUser };
}

const BOM = "\uFEFF";

function withoutBom(text: string): string {
  return text.startsWith(BOM) ? text.slice(1) : text;
}

export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function isSamePrevious(now: PreviousValue, previous: PreviousValue): boolean {
  if (!now.present || !previous.present) return now.present === previous.present;
  return isSameJson(now.value, previous.value);
}

function isSameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The file's own indentation (tabs or n spaces), so inserted lines look like the rest. */
function toFormatting(text: string): FormattingOptions {
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  const indented = /\n([ \t]+)\S/.exec(text)?.[1];
  if (indented?.startsWith("\t")) return { insertSpaces: false, tabSize: 4, eol };
  return { insertSpaces: true, tabSize: indented?.length ?? 4, eol };
}

function toLineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset).split("\n");
  return { line: before.length, column: (before.at(-1)?.length ?? 0) + 1 };
}

function describeParseError(code: string): string {
  return code
    .replace(/([a-z])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .replace(/^./, (c) => c.toUpperCase());
}

function isDirectory(folder: string): boolean {
  try {
    return statSync(folder).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Writes the settings atomically (temporary file + rename), keeping the file's permissions. A
 * symbolic link (dotfile managers use them) is followed: its target is written, the link stays.
 */
export function writeSettingsText(file: string, text: string): void {
  let target = file;
  let mode = 0o644;
  try {
    target = realpathSync(file);
    mode = statSync(target).mode & 0o777;
  } catch {
    // A new file: the usual permissions of a settings file.
  }
  writeAtomically(target, text, mode);
}
