/**
 * The server's logger (pino): one human-readable line per event when a person watches the
 * terminal, JSON lines otherwise (for log collectors). Fields that could carry a credential are
 * redacted wherever they appear, as a second line of defence: the code never logs keys, tokens
 * or message bodies at the default level in the first place.
 */
import pino, { type DestinationStream, type Logger } from "pino";
import pretty from "pino-pretty";
import type { LogLevel } from "../config/index.ts";

export interface LogOptions {
  readonly level: LogLevel;
  /** Human-readable lines (for a terminal) instead of JSON. */
  readonly pretty: boolean;
  /** Default: standard output. */
  readonly destination?: DestinationStream | NodeJS.WritableStream;
}

/** Field names whose values are never written, at the top level and one level down. */
const SECRET_FIELDS = ["apiKey", "accessToken", "authorization", "token", "headers"];

export function createLog(options: LogOptions): Logger {
  const settings = {
    level: options.level,
    redact: {
      paths: SECRET_FIELDS.flatMap((field) => [field, `*.${field}`]),
      censor: "[redacted]",
    },
  };
  if (options.pretty) {
    return pino(
      settings,
      pretty({
        colorize: true,
        translateTime: "SYS:HH:MM:ss.l",
        ignore: "pid,hostname",
        singleLine: true,
        sync: true,
        destination: options.destination ?? 1,
      }),
    );
  }
  return options.destination === undefined
    ? pino(settings)
    : pino(settings, options.destination as DestinationStream);
}
