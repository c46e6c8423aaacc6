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

/** The path functions of the platform (`path.win32` on Windows, `path.posix` elsewhere). */
export function platformPath(platform: string): path.PlatformPath {
  return platform === "win32" ? path.win32 : path.posix;
}

/**
 * The platform's per-user directory for data or configuration (the one platform-path rule; the
 * configuration file's default path uses it too):
 *
 * - Linux and other Unix: `$XDG_DATA_HOME` (`$XDG_CONFIG_HOME`) if it is an absolute path (the
 *   XDG rule), otherwise `~/.local/share` (`~/.config`);
 * - macOS: `~/Library/Application Support`;
 * - Windows: `%APPDATA%`, otherwise `~\AppData\Roaming`.
 */
export function toUserDirectory(inputs: DataDirectoryInputs, kind: "data" | "config"): string {
  const { env, platform, homeDir } = inputs;
  const paths = platformPath(platform);
  const nonEmpty = (value: string | undefined): string | undefined =>
    value === undefined || value === "" ? undefined : value;
  if (platform === "win32") {
    return nonEmpty(env.APPDATA) ?? paths.join(homeDir, "AppData", "Roaming");
  }
  if (platform === "darwin") return paths.join(homeDir, "Library", "Application Support");
  const xdg = nonEmpty(kind === "data" ? env.XDG_DATA_HOME : env.XDG_CONFIG_HOME);
  if (xdg !== undefined && paths.isAbsolute(xdg)) return xdg;
  return kind === "data" ? paths.join(homeDir, ".local", "share") : paths.join(homeDir, ".config");
}

export function toDefaultDatabasePath(inputs: DataDirectoryInputs): string {
  return platformPath(inputs.platform).join(
    toUserDirectory(inputs, "data"),
    DATABASE_DIRECTORY,
    DATABASE_FILE,
  );
}
