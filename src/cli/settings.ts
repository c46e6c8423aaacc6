/** The configuration a command runs with: `--config` / `CURSOR_BYOK_CONFIG` / default file, plus flags. */
import {
  type Config,
  type ConfigOverrides,
  loadConfig,
  toConfigLocation,
} from "../config/index.ts";
import type { CliIO } from "./io.ts";

/** @throws ConfigFileError */
export function loadSettings(
  configFlag: string | undefined,
  overrides: ConfigOverrides,
  io: CliIO,
): Config {
  return loadConfig({
    location: toConfigLocation(configFlag, io),
    cwd: io.cwd,
    env: io.env,
    platform: io.platform,
    homeDir: io.homeDir,
    overrides,
  });
}
