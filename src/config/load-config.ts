/**
 * Reads and validates the configuration: one YAML file plus environment shortcuts, with
 * command-line overrides. Precedence, highest first: flags, the file, environment shortcuts,
 * built-in defaults. Every problem is a `ConfigFileError` naming the file, the line and column,
 * the field path and what is wrong; nothing is guessed or silently dropped. Unknown fields are
 * errors, because a misspelt setting that is ignored is worse than one that is refused.
 *
 * Why one file of about 460 lines: one reader for one file format. Its many small field readers,
 * each naming the file, line, column and field in its error, are private to it.
 */

import { readFileSync } from "node:fs";
import path from "node:path";
import { ConfigError, createModelConfigs, createSecret } from "../llm/index.ts";
import { DATABASE_FILE, toDefaultDatabasePath } from "../store/index.ts";
import { DEFAULT_SERVER_OPTIONS } from "../transport/server.ts";
import { isLoopbackHost } from "./access.ts";
import { ConfigFileError } from "./config-file-error.ts";
import { toShortcutModels } from "./env-shortcuts.ts";
import { type ConfigLocation, type PlatformInputs, toAbsolutePath } from "./paths.ts";
import {
  type AccessToken,
  type Config,
  type ConfigOverrides,
  type ConfiguredModel,
  type IdeSettings,
  LOG_LEVELS,
  type LogLevel,
  type MissingKey,
  type PostgresSettings,
  RUN_SSE_CONTENT_TYPES,
  type ServerSettings,
  type TeamClientSettings,
} from "./types.ts";
import { toWebSettings } from "./web-settings.ts";
import { type FieldPath, fromFieldText, parseYamlSource, type YamlSource } from "./yaml-source.ts";

export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_PORT = 8765;
export const DEFAULT_LOG_LEVEL: LogLevel = "info";
/** The IDE proxy's port (docs/ide.md). */
export const DEFAULT_PROXY_PORT = 8766;

export interface LoadConfigInputs extends PlatformInputs {
  readonly location: ConfigLocation;
  /** Relative override paths (e.g. `--data-dir`) resolve against it. */
  readonly cwd: string;
  readonly overrides?: ConfigOverrides;
}

const TOP_FIELDS = [
  "server",
  "data",
  "log",
  "models",
  "defaultModel",
  "helperModel",
  "envShortcuts",
  "ide",
  "web",
  "subagents",
  "team",
];
const SUBAGENT_FIELDS = ["models", "maxConcurrent", "maxSteps"];
const TEAM_FIELDS = ["server", "tokenEnv"];
/** The variable holding the user's team token unless `team.tokenEnv` names another. */
export const DEFAULT_TEAM_TOKEN_VARIABLE = "CURSOR_BYOK_TEAM_TOKEN";
const IDE_FIELDS = ["proxyPort", "allowConnectPorts"];
const SERVER_FIELDS = [
  "host",
  "port",
  "accessToken",
  "accessTokenEnv",
  "runSseContentType",
  "http2",
  "maxStreams",
  "maxConnections",
  "blobCheckpoints",
  "blobWriteTimeoutMs",
  "blobReadTimeoutMs",
  "users",
  "advertiseUrl",
];
const DATA_FIELDS = ["directory", "postgres"];
const POSTGRES_FIELDS = ["url", "poolSize", "statementTimeoutMs"];
const LOG_FIELDS = ["level"];
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Reads the file at `inputs.location` (a missing default file means "all defaults") and
 * validates it.
 * @throws ConfigFileError
 */
export function loadConfig(inputs: LoadConfigInputs): Config {
  return toConfig(readConfigText(inputs.location), inputs);
}

/** The file's text, or `undefined` when the default file does not exist. */
export function readConfigText(location: ConfigLocation): string | undefined {
  try {
    return readFileSync(location.path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" && location.namedBy === undefined) return undefined;
    const problem =
      code === "ENOENT"
        ? `no such file (named by ${location.namedBy}); create it with \`cursor-byok config init\``
        : code === "EISDIR"
          ? "is a directory, not a file"
          : code === "EACCES"
            ? "cannot be read: permission denied"
            : `cannot be read (${code ?? String(error)})`;
    throw new ConfigFileError({ file: location.path, problem });
  }
}

/**
 * Validates a configuration file's text (`undefined`: no file) against the environment.
 * @throws ConfigFileError
 */
export function toConfig(text: string | undefined, inputs: LoadConfigInputs): Config {
  const file = inputs.location.path;
  const source = text === undefined ? undefined : parseYamlSource(file, text);
  const root = toSection(source, [], source?.value, TOP_FIELDS);
  const overrides = inputs.overrides ?? {};

  const server = toServerSettings(source, root.server, inputs.env, overrides);
  const dataDirectory = toDataDirectory(source, root.data, inputs, overrides);
  const logSection = toSection(source, ["log"], root.log, LOG_FIELDS);
  const logLevel =
    overrides.logLevel ??
    optionalOneOf(source, ["log", "level"], logSection.level, LOG_LEVELS) ??
    DEFAULT_LOG_LEVEL;

  const fileModels = toFileModels(source, root.models);
  const useShortcuts = optionalBoolean(source, ["envShortcuts"], root.envShortcuts) ?? true;
  const taken = new Set(fileModels.map((model) => model.config.name));
  const shortcutModels: ConfiguredModel[] = useShortcuts
    ? toShortcutModels(inputs.env)
        .filter((model) => !taken.has(model.config.name))
        .map((model) => ({
          config: model.config,
          origin: { type: "env", variable: model.variable },
        }))
    : [];
  const models = toDefaultFirst(source, root.defaultModel, [...fileModels, ...shortcutModels]);
  const helperModel = toModelName(source, ["helperModel"], root.helperModel, models);
  const subagentModels = toSubagentModels(source, root.subagents, models);
  const subagentLimits = toSubagentLimits(source, root.subagents);

  return {
    file: { path: file, exists: text !== undefined },
    server,
    ide: toIdeSettings(source, root.ide, overrides),
    dataDirectory,
    databasePath: path.join(dataDirectory, DATABASE_FILE),
    ...toPostgresSettings(source, root.data, inputs.env),
    logLevel,
    models,
    ...(helperModel === undefined ? {} : { helperModel }),
    ...(subagentModels === undefined ? {} : { subagentModels }),
    ...subagentLimits,
    missingKeys: findMissingKeys(source, models, inputs.env),
    web: toWebSettings(source, root.web, inputs.env),
    ...toTeamClient(source, root.team, inputs.env),
  };
}

/**
 * `team`: this machine's clients use a team's server (docs/team.md "Clients"). The server must
 * be https, since the user's token travels to it; plain http only to this machine (tests, a
 * tunnel). The token may be unset here: the client says so where it is needed.
 */
function toTeamClient(
  source: YamlSource | undefined,
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
): { team?: TeamClientSettings } {
  if (value === undefined) return {};
  const section = toSection(source, ["team"], value, TEAM_FIELDS);
  const server = optionalString(source, ["team", "server"], section.server);
  if (server === undefined) {
    throw fail(source, ["team", "server"], "is required: the team server's address");
  }
  const variable =
    optionalString(source, ["team", "tokenEnv"], section.tokenEnv) ?? DEFAULT_TEAM_TOKEN_VARIABLE;
  if (!VARIABLE_NAME.test(variable)) {
    throw fail(source, ["team", "tokenEnv"], "must be an environment variable name");
  }
  const problem = toTeamServerProblem(server);
  if (problem !== undefined) throw fail(source, ["team", "server"], problem);
  return { team: toTeamClientSettings(server, variable, env) };
}

/** Why `url` cannot be a team server's address, or `undefined`. */
export function toTeamServerProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "must be an address such as https://byok.example.com";
  }
  if (parsed.pathname !== "/" || parsed.search !== "" || parsed.username !== "") {
    return "must be the server's address alone (https://host[:port]), without a path";
  }
  if (parsed.protocol === "https:") return undefined;
  if (parsed.protocol === "http:" && isLoopbackHost(parsed.hostname.replace(/^\[(.*)\]$/, "$1"))) {
    return undefined;
  }
  return "must be https:// (your team token travels to it); http:// only for a server on this machine";
}

export function toTeamClientSettings(
  server: string,
  variable: string,
  env: Readonly<Record<string, string | undefined>>,
): TeamClientSettings {
  const token = env[variable]?.trim() ?? "";
  return {
    server: new URL(server).origin,
    tokenVariable: variable,
    ...(token === "" ? {} : { token: createSecret(token) }),
  };
}

function toServerSettings(
  source: YamlSource | undefined,
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
  overrides: ConfigOverrides,
): ServerSettings {
  const at = (field: string): FieldPath => ["server", field];
  const section = toSection(source, ["server"], value, SERVER_FIELDS);
  const host = overrides.host ?? optionalString(source, at("host"), section.host) ?? DEFAULT_HOST;
  const port = overrides.port ?? optionalPort(source, at("port"), section.port) ?? DEFAULT_PORT;
  return {
    host,
    port,
    accessToken: toAccessToken(source, section, env),
    runSseContentType:
      optionalOneOf(
        source,
        at("runSseContentType"),
        section.runSseContentType,
        RUN_SSE_CONTENT_TYPES,
      ) ?? "event-stream",
    offerHttp2: optionalBoolean(source, at("http2"), section.http2) ?? false,
    maxStreams:
      optionalPositiveInteger(source, at("maxStreams"), section.maxStreams) ?? DEFAULT_MAX_STREAMS,
    maxConnections:
      optionalPositiveInteger(source, at("maxConnections"), section.maxConnections) ??
      DEFAULT_MAX_CONNECTIONS,
    blobCheckpoints:
      optionalBoolean(source, at("blobCheckpoints"), section.blobCheckpoints) ?? true,
    ...toBlobTimeouts(source, section),
    users: optionalBoolean(source, at("users"), section.users) ?? false,
    ...toAdvertiseUrl(source, section.advertiseUrl),
  };
}

/**
 * `blobWriteTimeoutMs`, and `blobReadTimeoutMs`, which is never longer (a read of the client's
 * blob holds the stream's checkpoints, which the write timeout bounds).
 */
function toBlobTimeouts(
  source: YamlSource | undefined,
  section: Record<string, unknown>,
): { blobWriteTimeoutMs: number; blobReadTimeoutMs: number } {
  const at = (field: string): FieldPath => ["server", field];
  const blobWriteTimeoutMs =
    optionalPositiveInteger(source, at("blobWriteTimeoutMs"), section.blobWriteTimeoutMs) ??
    DEFAULT_BLOB_WRITE_TIMEOUT_MS;
  const read = optionalPositiveInteger(source, at("blobReadTimeoutMs"), section.blobReadTimeoutMs);
  if (read !== undefined && read > blobWriteTimeoutMs) {
    throw fail(
      source,
      at("blobReadTimeoutMs"),
      `must not be longer than server.blobWriteTimeoutMs (${blobWriteTimeoutMs})`,
    );
  }
  return {
    blobWriteTimeoutMs,
    blobReadTimeoutMs: read ?? Math.min(DEFAULT_BLOB_READ_TIMEOUT_MS, blobWriteTimeoutMs),
  };
}

function toAdvertiseUrl(source: YamlSource | undefined, value: unknown): { advertiseUrl?: string } {
  const url = optionalString(source, ["server", "advertiseUrl"], value);
  if (url === undefined) return {};
  if (!/^http:\/\/[^/\s]+\/?$/.test(url)) {
    throw fail(
      source,
      ["server", "advertiseUrl"],
      "must be http://<host>:<port>, the address other instances reach this one at",
    );
  }
  return { advertiseUrl: url.replace(/\/$/, "") };
}

function toIdeSettings(
  source: YamlSource | undefined,
  value: unknown,
  overrides: ConfigOverrides,
): IdeSettings {
  const section = toSection(source, ["ide"], value, IDE_FIELDS);
  const ports = section.allowConnectPorts;
  if (
    ports !== undefined &&
    (!Array.isArray(ports) || ports.some((port) => !isPort(port) || port === 0))
  ) {
    throw fail(source, ["ide", "allowConnectPorts"], "must be a list of ports from 1 to 65535");
  }
  return {
    proxyPort: overrides.proxyPort ?? toProxyPort(source, section.proxyPort) ?? DEFAULT_PROXY_PORT,
    allowConnectPorts: (ports as number[] | undefined) ?? [443],
  };
}

/** The proxy's port is written into Cursor's settings, so "any free port" (0) cannot be. */
function toProxyPort(source: YamlSource | undefined, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (!isPort(value) || value === 0) {
    throw fail(source, ["ide", "proxyPort"], "must be an integer from 1 to 65535");
  }
  return value;
}
/** Agent streams kept at once unless `server.maxStreams` says otherwise. */
export const DEFAULT_MAX_STREAMS = DEFAULT_SERVER_OPTIONS.maxStreams;
/** How long a checkpoint waits for its blob writes' answers unless `server.blobWriteTimeoutMs` says otherwise. */
export const DEFAULT_BLOB_WRITE_TIMEOUT_MS =
  DEFAULT_SERVER_OPTIONS.stream.blobWriteTimeoutMs ?? 10_000;
/** How long a read of the client's blob waits unless `server.blobReadTimeoutMs` says otherwise (at most the write timeout). */
export const DEFAULT_BLOB_READ_TIMEOUT_MS =
  DEFAULT_SERVER_OPTIONS.stream.blobReadTimeoutMs ?? 3_000;
/** Open connections at once unless `server.maxConnections` says otherwise. */
export const DEFAULT_MAX_CONNECTIONS = DEFAULT_SERVER_OPTIONS.listen.maxConnections;

function toAccessToken(
  source: YamlSource | undefined,
  section: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>>,
): AccessToken {
  const { accessToken, accessTokenEnv } = section;
  if (accessToken !== undefined && accessTokenEnv !== undefined) {
    throw fail(
      source,
      ["server", "accessToken"],
      "give either accessToken or accessTokenEnv, not both",
    );
  }
  if (accessTokenEnv !== undefined) {
    const variable = optionalString(source, ["server", "accessTokenEnv"], accessTokenEnv);
    if (variable === undefined || !VARIABLE_NAME.test(variable)) {
      throw fail(source, ["server", "accessTokenEnv"], "must be an environment variable name");
    }
    const token = env[variable]?.trim() ?? "";
    if (token === "") {
      throw fail(
        source,
        ["server", "accessTokenEnv"],
        `environment variable ${variable} is not set; it must hold the access token clients present`,
      );
    }
    const short = toShortTokenProblem(token, `environment variable ${variable}`);
    if (short !== null) throw fail(source, ["server", "accessTokenEnv"], short);
    return { type: "env", variable, value: createSecret(token) };
  }
  const literal = optionalString(source, ["server", "accessToken"], accessToken);
  if (literal === undefined) return { type: "none" };
  const short = toShortTokenProblem(literal, "the token");
  if (short !== null) throw fail(source, ["server", "accessToken"], short);
  return { type: "value", value: createSecret(literal) };
}

/**
 * The shortest access token accepted: the token is the only thing between the network and the
 * user's provider keys, so it must not be guessable (32 characters of `openssl rand -hex 32`
 * output carry 128 bits).
 */
export const MIN_ACCESS_TOKEN_LENGTH = 32;

/** Why `token` is too short to guard the keys, or null. Never echoes the token. */
function toShortTokenProblem(token: string, what: string): string | null {
  if (token.length >= MIN_ACCESS_TOKEN_LENGTH) return null;
  return (
    `${what} holds ${token.length} characters; an access token needs at least ` +
    `${MIN_ACCESS_TOKEN_LENGTH} so it cannot be guessed (e.g. \`openssl rand -hex 32\`)`
  );
}

function toDataDirectory(
  source: YamlSource | undefined,
  value: unknown,
  inputs: LoadConfigInputs,
  overrides: ConfigOverrides,
): string {
  if (overrides.dataDirectory !== undefined) {
    return toAbsolutePath(overrides.dataDirectory, inputs.cwd, inputs);
  }
  const section = toSection(source, ["data"], value, DATA_FIELDS);
  const directory = optionalString(source, ["data", "directory"], section.directory);
  if (directory !== undefined) {
    // Relative to the file that says it, so the file means the same from any working directory.
    return toAbsolutePath(directory, path.dirname(inputs.location.path), inputs);
  }
  return path.dirname(toDefaultDatabasePath(inputs));
}

/**
 * `data.postgres` (the team store, docs/team.md), else `DATABASE_URL` from the environment;
 * absent: the SQLite file. The URL may carry a password, so it is kept as a `Secret`.
 */
function toPostgresSettings(
  source: YamlSource | undefined,
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
): { postgres?: PostgresSettings } {
  const data = toSection(source, ["data"], value, DATA_FIELDS);
  const at = (field: string): FieldPath => ["data", "postgres", field];
  const section = toSection(source, ["data", "postgres"], data.postgres, POSTGRES_FIELDS);
  const fileUrl = optionalString(source, at("url"), section.url);
  const envUrl = env.DATABASE_URL === "" ? undefined : env.DATABASE_URL;
  const url = fileUrl ?? envUrl;
  if (url === undefined) {
    if (data.postgres !== undefined && data.postgres !== null) {
      throw fail(source, at("url"), "is required in data.postgres (or set DATABASE_URL)");
    }
    return {};
  }
  if (!/^postgres(ql)?:\/\//.test(url)) {
    const where = fileUrl === undefined ? "DATABASE_URL" : "data.postgres.url";
    throw fail(
      source,
      fileUrl === undefined ? ["data"] : at("url"),
      `${where} must be a postgres:// or postgresql:// URL`,
    );
  }
  const poolSize = optionalPositiveInteger(source, at("poolSize"), section.poolSize);
  const statementTimeoutMs = optionalPositiveInteger(
    source,
    at("statementTimeoutMs"),
    section.statementTimeoutMs,
  );
  return {
    postgres: {
      url: createSecret(url),
      origin: fileUrl === undefined ? "DATABASE_URL" : "data.postgres.url",
      ...(poolSize === undefined ? {} : { poolSize }),
      ...(statementTimeoutMs === undefined ? {} : { statementTimeoutMs }),
    },
  };
}

function toFileModels(source: YamlSource | undefined, value: unknown): ConfiguredModel[] {
  if (value === undefined || value === null) return [];
  try {
    return createModelConfigs(value, "models").map((config, index) => ({
      config,
      origin: { type: "file", field: `models[${index}]` },
    }));
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    throw fail(source, fromFieldText(error.field), error.problem, {
      atKey: error.problem === "unknown field",
    });
  }
}

/** `models` with the one named by `defaultModel` moved to the front (the offer order's first is the default). */
function toDefaultFirst(
  source: YamlSource | undefined,
  value: unknown,
  models: readonly ConfiguredModel[],
): readonly ConfiguredModel[] {
  const name = toModelName(source, ["defaultModel"], value, models);
  if (name === undefined) return models;
  const chosen = models.find((model) => model.config.name === name);
  return chosen === undefined ? models : [chosen, ...models.filter((model) => model !== chosen)];
}

/** A field that names one of the configured models. */
function toModelName(
  source: YamlSource | undefined,
  at: FieldPath,
  value: unknown,
  models: readonly ConfiguredModel[],
): string | undefined {
  const name = optionalString(source, at, value);
  if (name === undefined || models.some((model) => model.config.name === name)) return name;
  const names = models.map((model) => model.config.name);
  throw fail(
    source,
    at,
    names.length === 0
      ? `no model is named "${name}": no model is configured`
      : `no model is named "${name}"; the models are ${names.join(", ")}`,
  );
}

/**
 * `subagents.models`: the model each subagent type runs on (README "Subagents"), by type name
 * (`explore`, `general`, or a custom subagent's name); each value names a configured model.
 */
function toSubagentModels(
  source: YamlSource | undefined,
  value: unknown,
  models: readonly ConfiguredModel[],
): Readonly<Record<string, string>> | undefined {
  const section = toSection(source, ["subagents"], value, SUBAGENT_FIELDS);
  const map = section.models;
  if (map === undefined || map === null) return undefined;
  const at: FieldPath = ["subagents", "models"];
  if (!isRecord(map)) {
    throw fail(source, at, "must be a mapping of subagent type to model name (explore: fast)");
  }
  const chosen: Record<string, string> = {};
  for (const [type, model] of Object.entries(map)) {
    const name = toModelName(source, [...at, type], model, models);
    if (name !== undefined) chosen[type] = name;
  }
  return chosen;
}

/** `subagents.maxConcurrent` and `subagents.maxSteps`, when given (README "Subagents"). */
function toSubagentLimits(
  source: YamlSource | undefined,
  value: unknown,
): { subagentMaxConcurrent?: number; subagentMaxSteps?: number } {
  const section = toSection(source, ["subagents"], value, SUBAGENT_FIELDS);
  const maxConcurrent = optionalPositiveInteger(
    source,
    ["subagents", "maxConcurrent"],
    section.maxConcurrent,
  );
  const maxSteps = optionalPositiveInteger(source, ["subagents", "maxSteps"], section.maxSteps);
  return {
    ...(maxConcurrent === undefined ? {} : { subagentMaxConcurrent: maxConcurrent }),
    ...(maxSteps === undefined ? {} : { subagentMaxSteps: maxSteps }),
  };
}

function findMissingKeys(
  source: YamlSource | undefined,
  models: readonly ConfiguredModel[],
  env: Readonly<Record<string, string | undefined>>,
): MissingKey[] {
  const missing: MissingKey[] = [];
  for (const { config, origin } of models) {
    if (config.apiKey.type !== "env" || (env[config.apiKey.name]?.trim() ?? "") !== "") continue;
    const variable = config.apiKey.name;
    if (origin.type === "env") {
      missing.push({ model: config.name, variable, message: `${variable} is not set` });
      continue;
    }
    const entry = fromFieldText(origin.field);
    const error = hasField(source, [...entry, "apiKeyEnv"])
      ? fail(source, [...entry, "apiKeyEnv"], `environment variable ${variable} is not set`)
      : fail(
          source,
          entry,
          `environment variable ${variable} is not set (the usual key variable of provider ` +
            `${config.provider}); set it, or give apiKeyEnv or apiKey`,
        );
    missing.push({ model: config.name, variable, message: error.message });
  }
  return missing;
}

// ---------------------------------------------------------------------------------------------
// Field readers. Messages describe the expected value and never echo the value given.
// ---------------------------------------------------------------------------------------------

function fail(
  source: YamlSource | undefined,
  at: FieldPath,
  problem: string,
  options: { readonly atKey?: boolean } = {},
): ConfigFileError {
  // Without a file nothing can be wrong with a field; a caller reaching here has a bug.
  if (source === undefined) throw new Error(`configuration problem without a file: ${problem}`);
  return source.errorAt(at, problem, options);
}

function toSection(
  source: YamlSource | undefined,
  at: FieldPath,
  value: unknown,
  fields: readonly string[],
): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) {
    throw fail(
      source,
      at,
      at.length === 0
        ? `the file must be a mapping of settings (${fields.join(", ")})`
        : "must be a mapping",
    );
  }
  for (const key of Object.keys(value)) {
    if (!fields.includes(key)) {
      throw fail(source, [...at, key], `unknown field (expected one of ${fields.join(", ")})`, {
        atKey: true,
      });
    }
  }
  return value;
}

function optionalString(
  source: YamlSource | undefined,
  at: FieldPath,
  value: unknown,
): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.trim() === "") {
    throw fail(source, at, "must be a non-empty string");
  }
  return value;
}

function optionalBoolean(
  source: YamlSource | undefined,
  at: FieldPath,
  value: unknown,
): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "boolean") throw fail(source, at, "must be true or false");
  return value;
}

function optionalPositiveInteger(
  source: YamlSource | undefined,
  at: FieldPath,
  value: unknown,
): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw fail(source, at, "must be a positive integer");
  }
  return value;
}

function optionalPort(
  source: YamlSource | undefined,
  at: FieldPath,
  value: unknown,
): number | undefined {
  if (value === undefined) return undefined;
  if (!isPort(value))
    throw fail(source, at, "must be an integer from 0 to 65535 (0: any free port)");
  return value;
}

function optionalOneOf<T extends string>(
  source: YamlSource | undefined,
  at: FieldPath,
  value: unknown,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) {
    throw fail(source, at, `must be one of ${allowed.join(", ")}`);
  }
  return value as T;
}

export function isPort(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 && value <= 65535;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function getAt(value: unknown, at: FieldPath): unknown {
  let current = value;
  for (const segment of at) {
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<string | number, unknown>)[segment];
  }
  return current;
}

function hasField(source: YamlSource | undefined, at: FieldPath): boolean {
  return getAt(source?.value, at) !== undefined;
}
