/**
 * Where the database lives when the user does not say: the platform's per-user data directory,
 * then `cursor-byok/cursor-byok.db`. A pure function of its inputs, so every platform is testable
 * on any machine.
 */
import path from "node:path";

export interface DataDirectoryInputs {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** `process.platform`. */
  readonly platform: string;
  /** `os.homedir()`. */
  readonly homeDir: string;
}

export const DATABASE_DIRECTORY = "cursor-byok";
export const DATABASE_FILE = "cursor-byok.db";

/**
 * - Linux and other Unix: `$XDG_DATA_HOME` if it is an absolute path (the XDG rule), otherwise
 *   `~/.local/share`;
 * - macOS: `~/Library/Application Support`;
 * - Windows: `%APPDATA%`, otherwise `~\AppData\Roaming`.
 */
export function toDefaultDatabasePath(inputs: DataDirectoryInputs): string {
  const { env, platform, homeDir } = inputs;
  const paths = platform === "win32" ? path.win32 : path.posix;
  const nonEmpty = (value: string | undefined): string | undefined =>
    value === undefined || value === "" ? undefined : value;
  let base: string;
  if (platform === "win32") {
    base = nonEmpty(env.APPDATA) ?? paths.join(homeDir, "AppData", "Roaming");
  } else if (platform === "darwin") {
    base = paths.join(homeDir, "Library", "Application Support");
  } else {
    const xdg = nonEmpty(env.XDG_DATA_HOME);
    base =
      xdg !== undefined && paths.isAbsolute(xdg) ? xdg : paths.join(homeDir, ".local", "share");
  }
  return paths.join(base, DATABASE_DIRECTORY, DATABASE_FILE);
}
