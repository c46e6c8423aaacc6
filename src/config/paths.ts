/**
 * Where the configuration file lives: `--config`, else `CURSOR_BYOK_CONFIG`, else the platform's
 * per-user configuration directory. Pure functions of their inputs, so every platform is
 * testable on any machine.
 */
import path from "node:path";
import { platformPath, toUserDirectory } from "../store/index.ts";

/** The inputs every path decision depends on (`process.env`, `process.platform`, `os.homedir()`). */
export interface PlatformInputs {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly platform: string;
  readonly homeDir: string;
}

export const CONFIG_DIRECTORY = "cursor-byok";
export const CONFIG_FILE = "config.yaml";
/** The environment variable that names the configuration file. */
export const CONFIG_PATH_VARIABLE = "CURSOR_BYOK_CONFIG";

/** In the platform's per-user configuration directory (`toUserDirectory`). */
export function toDefaultConfigPath(inputs: PlatformInputs): string {
  return platformPath(inputs.platform).join(
    toUserDirectory(inputs, "config"),
    CONFIG_DIRECTORY,
    CONFIG_FILE,
  );
}

/** The configuration file to read, and who named it (a named file must exist). */
export interface ConfigLocation {
  readonly path: string;
  /** `undefined` for the default path. */
  readonly namedBy: "--config" | typeof CONFIG_PATH_VARIABLE | undefined;
}

/** `flag` (the `--config` value) wins over `CURSOR_BYOK_CONFIG`, which wins over the default. */
export function toConfigLocation(
  flag: string | undefined,
  inputs: PlatformInputs & { readonly cwd: string },
): ConfigLocation {
  const fromFlag = nonEmpty(flag);
  if (fromFlag !== undefined) {
    return { path: toAbsolutePath(fromFlag, inputs.cwd, inputs), namedBy: "--config" };
  }
  const fromEnv = nonEmpty(inputs.env[CONFIG_PATH_VARIABLE]);
  if (fromEnv !== undefined) {
    return { path: toAbsolutePath(fromEnv, inputs.cwd, inputs), namedBy: CONFIG_PATH_VARIABLE };
  }
  return { path: toDefaultConfigPath(inputs), namedBy: undefined };
}

/** Resolves `~` and `~/…` against the home directory and relative paths against `base`. */
export function toAbsolutePath(
  value: string,
  base: string,
  inputs: Pick<PlatformInputs, "platform" | "homeDir">,
): string {
  const paths = inputs.platform === "win32" ? path.win32 : path.posix;
  if (value === "~") return inputs.homeDir;
  if (value.startsWith("~/") || (inputs.platform === "win32" && value.startsWith("~\\"))) {
    return paths.join(inputs.homeDir, value.slice(2));
  }
  return paths.resolve(base, value);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}
