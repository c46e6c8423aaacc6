/**
 * Flag parsing on `node:util` `parseArgs`, strict: an unknown flag or a missing value is a
 * `UsageError`, never ignored. The flags shared by several commands are defined once here.
 */
import { type ParseArgsOptionsConfig, parseArgs } from "node:util";
import { type ConfigOverrides, isPort, LOG_LEVELS, type LogLevel } from "../config/index.ts";
import { errorMessage } from "../errors/error-message.ts";
import { UsageError } from "./usage-error.ts";

export const HELP_OPTION = { help: { type: "boolean", short: "h" } } as const;
export const CONFIG_OPTION = { config: { type: "string" } } as const;
export const SERVER_OPTIONS = {
  host: { type: "string" },
  port: { type: "string" },
  "data-dir": { type: "string" },
} as const;
export const LOG_LEVEL_OPTION = { "log-level": { type: "string" } } as const;

type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

export interface ParsedFlags {
  readonly values: Values;
  readonly positionals: readonly string[];
}

/** @throws UsageError */
export function parseFlags(
  args: readonly string[],
  options: ParseArgsOptionsConfig,
  allowPositionals = false,
): ParsedFlags {
  try {
    const { values, positionals } = parseArgs({
      args: [...args],
      options,
      strict: true,
      allowPositionals,
    });
    return { values: values as Values, positionals };
  } catch (error) {
    throw new UsageError(errorMessage(error));
  }
}

export function toStringFlag(values: Values, name: string): string | undefined {
  const value = values[name];
  return typeof value === "string" ? value : undefined;
}

/** `--host`, `--port`, `--data-dir`, `--log-level` as configuration overrides. @throws UsageError */
export function toOverrides(values: Values): ConfigOverrides {
  const host = toStringFlag(values, "host");
  const port = toStringFlag(values, "port");
  const dataDirectory = toStringFlag(values, "data-dir");
  const logLevel = toStringFlag(values, "log-level");
  if (host !== undefined && host.trim() === "") throw new UsageError("--host must not be empty");
  const portNumber = port === undefined ? undefined : Number(port);
  if (port !== undefined && (!/^\d+$/.test(port) || !isPort(portNumber))) {
    throw new UsageError("--port must be an integer from 0 to 65535 (0: any free port)");
  }
  if (dataDirectory !== undefined && dataDirectory.trim() === "") {
    throw new UsageError("--data-dir must not be empty");
  }
  if (logLevel !== undefined && !(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(", ")}`);
  }
  return {
    ...(host === undefined ? {} : { host }),
    ...(portNumber === undefined ? {} : { port: portNumber }),
    ...(dataDirectory === undefined ? {} : { dataDirectory }),
    ...(logLevel === undefined ? {} : { logLevel: logLevel as LogLevel }),
  };
}
