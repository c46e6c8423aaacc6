/**
 * The local checks of `cursor-byok doctor`: the configuration, the keys it names, who may reach
 * the server, the port and the database. Each returns results with a one-line verdict and, for
 * a failure, how to fix it. None of them prints a key.
 */
import { createServer } from "node:net";
import { type Config, isLoopbackHost, toBindRefusal, toConnectHost } from "../config/index.ts";
import { errorMessage } from "../errors/error-message.ts";
import {
  openPostgresStore,
  openSqliteStore,
  StoreError,
  toPostgresLocation,
} from "../store/index.ts";

export type CheckStatus = "ok" | "fail" | "skip";

export interface CheckResult {
  readonly status: CheckStatus;
  /** What was checked: `config`, `key`, `access`, `live`, `port`, `database`, `e2e`. */
  readonly name: string;
  readonly detail: string;
  /** How to fix a failure. */
  readonly hint?: string;
}

const PROBE_TIMEOUT_MS = 3_000;

export function checkConfigLoaded(config: Config): CheckResult {
  const models =
    config.models.length === 0
      ? "no provider configured, so the built-in demo model answers"
      : `${config.models.length} model${config.models.length === 1 ? "" : "s"}, default ${config.models[0]?.config.name}`;
  return {
    status: "ok",
    name: "config",
    detail: config.file.exists
      ? `${config.file.path} parses and validates; ${models}`
      : `no file at ${config.file.path} (defaults apply); ${models}`,
  };
}

/** One result per key variable (shared by all its models), per literal key and per keyless model. */
export function checkKeys(
  config: Config,
  env: Readonly<Record<string, string | undefined>>,
): CheckResult[] {
  if (config.models.length === 0) {
    return [
      {
        status: "skip",
        name: "key",
        detail: "no provider configured; the demo model needs no key",
      },
    ];
  }
  const results: CheckResult[] = [];
  const modelsOf = (variable: string) =>
    config.models
      .filter(({ config: model }) => model.apiKey.type === "env" && model.apiKey.name === variable)
      .map(({ config: model }) => model.name);
  const seen = new Set<string>();
  for (const { config: model } of config.models) {
    if (model.apiKey.type === "value") {
      results.push({
        status: "ok",
        name: "key",
        detail: `${model.name}: apiKey is written in the config file (apiKeyEnv keeps it out of the file)`,
      });
      continue;
    }
    if (model.apiKey.type === "none") {
      results.push({ status: "ok", name: "key", detail: `${model.name}: no key needed` });
      continue;
    }
    const variable = model.apiKey.name;
    if (seen.has(variable)) continue;
    seen.add(variable);
    if ((env[variable]?.trim() ?? "") !== "") {
      results.push({
        status: "ok",
        name: "key",
        detail: `${variable} is set (${modelsOf(variable).join(", ")})`,
      });
      continue;
    }
    const missing = config.missingKeys.filter((key) => key.variable === variable);
    const messages =
      missing.length > 0 ? missing.map((key) => key.message) : [`${variable} is not set`];
    for (const message of messages) {
      results.push({
        status: "fail",
        name: "key",
        detail: message,
        hint: `set ${variable} in the environment cursor-byok runs in (export ${variable}=<your key>), or remove the model`,
      });
    }
  }
  return results;
}

export function checkAccess(config: Config): CheckResult {
  const { host, accessToken } = config.server;
  const refusal = toBindRefusal(host, accessToken.type !== "none", config.file.path);
  if (refusal !== undefined) {
    const [first, ...rest] = refusal.split("\n");
    return { status: "fail", name: "access", detail: first ?? refusal, hint: rest.join(" ") };
  }
  if (isLoopbackHost(host)) {
    return {
      status: "ok",
      name: "access",
      detail: `listens on loopback (${host})${accessToken.type === "none" ? "" : "; clients must present the access token"}`,
    };
  }
  return {
    status: "ok",
    name: "access",
    detail: `listens on ${host}; every request must present the access token`,
  };
}

/**
 * Whether the server could listen on its port. When the port is taken, it asks whoever holds it
 * whether it is cursor-byok (then it is running already, which is fine).
 */
export async function checkPort(config: Config): Promise<CheckResult> {
  const { host, port } = config.server;
  if (port === 0) {
    return { status: "ok", name: "port", detail: "port 0: the server picks a free port at start" };
  }
  const failure = await tryListen(host, port);
  if (failure === undefined) {
    return { status: "ok", name: "port", detail: `${host}:${port} is free` };
  }
  switch (failure) {
    case "EADDRINUSE":
      return checkRunningServer(config);
    case "EACCES":
      return {
        status: "fail",
        name: "port",
        detail: `not allowed to listen on ${host}:${port}`,
        hint: "ports below 1024 need privileges; choose another with --port or server.port",
      };
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
      return {
        status: "fail",
        name: "port",
        detail: `${host} is not an address of this machine`,
        hint: "set server.host (or --host) to 127.0.0.1, or to an address of this machine",
      };
    default:
      return {
        status: "fail",
        name: "port",
        detail: `cannot listen on ${host}:${port} (${failure})`,
      };
  }
}

/** Whether the process holding the port answers like cursor-byok, with this configuration's token. */
async function checkRunningServer(config: Config): Promise<CheckResult> {
  const { host, port, accessToken } = config.server;
  const url = `http://${toConnectHost(host)}:${port}`;
  const busy: CheckResult = {
    status: "fail",
    name: "port",
    detail: `${host}:${port} is in use by another program`,
    hint: "stop that program, or choose another port with --port or server.port",
  };
  try {
    const response = await fetch(`${url}/aiserver.v1.AiService/GetUsableModels`, {
      method: "POST",
      // No token here: the port may belong to any program. A cursor-byok that wants one answers
      // 401 "unauthenticated", which identifies it well enough.
      headers: { "content-type": "application/json", "connect-protocol-version": "1" },
      body: "{}",
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    });
    const body = (await response.json().catch(() => null)) as {
      models?: unknown;
      code?: unknown;
    } | null;
    if (response.status === 401 && body?.code === "unauthenticated") {
      return accessToken.type === "none"
        ? {
            status: "fail",
            name: "port",
            detail: `${host}:${port} is in use by a cursor-byok that requires an access token`,
            hint: "configure the same access token as the running server, or stop it",
          }
        : {
            status: "ok",
            name: "port",
            detail: `cursor-byok (with an access token) is already running on ${host}:${port}`,
          };
    }
    if (response.ok && Array.isArray(body?.models)) {
      return {
        status: "ok",
        name: "port",
        detail: `cursor-byok is already running on ${host}:${port}`,
      };
    }
    return busy;
  } catch {
    return busy;
  }
}

function tryListen(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    server.listen({ host, port, exclusive: true }, () => {
      server.close(() => resolve(undefined));
    });
  });
}

/**
 * Opens the configured database and closes it again: the SQLite file (created when missing, as
 * the server would), or the PostgreSQL database without changing its schema.
 */
export async function checkDatabase(config: Config): Promise<CheckResult> {
  if (config.postgres !== undefined) return await checkPostgres(config.postgres.url.reveal());
  try {
    const store = openSqliteStore({ path: config.databasePath });
    await store.close();
    return {
      status: "ok",
      name: "database",
      detail: `${config.databasePath} opens and is writable`,
    };
  } catch (error) {
    return {
      status: "fail",
      name: "database",
      detail: errorMessage(error),
      hint: "check the directory's permissions and free space, or choose another with --data-dir or data.directory",
    };
  }
}

/** The team store answers, is ours and is at this build's schema (older: the server migrates it). */
async function checkPostgres(url: string): Promise<CheckResult> {
  const location = toPostgresLocation(url);
  try {
    const store = await openPostgresStore({
      url,
      migrate: false,
      poolSize: 1,
      connectTimeoutMs: PROBE_TIMEOUT_MS,
    });
    await store.close();
    return { status: "ok", name: "database", detail: `${location} answers; its schema is current` };
  } catch (error) {
    if (error instanceof StoreError && error.code === "older_schema") {
      return {
        status: "ok",
        name: "database",
        detail:
          `${location} answers; its schema is older than this version's, and the server ` +
          "migrates it when it starts (or run `cursor-byok db migrate`)",
      };
    }
    return {
      status: "fail",
      name: "database",
      detail: errorMessage(error),
      hint: "check data.postgres.url (or DATABASE_URL), that the database accepts connections from here, and the password in PGPASSWORD or ~/.pgpass",
    };
  }
}
