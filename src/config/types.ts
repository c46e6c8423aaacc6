/**
 * The complete, validated configuration: server settings, where data lives, logging, and the
 * models Cursor will see (in offer order: the first is the default). Plain data; keys and
 * tokens are `Secret`s.
 */
import type { ModelConfig, Secret } from "../llm/index.ts";
import type { WebSettings } from "./web-settings.ts";

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const RUN_SSE_CONTENT_TYPES = ["event-stream", "connect"] as const;
export type RunSseContentType = (typeof RUN_SSE_CONTENT_TYPES)[number];

/** The bearer token clients must present; `none` lets any client that reaches the port in. */
export type AccessToken =
  | { readonly type: "none" }
  | { readonly type: "env"; readonly variable: string; readonly value: Secret }
  | { readonly type: "value"; readonly value: Secret };

export interface ServerSettings {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly accessToken: AccessToken;
  readonly runSseContentType: RunSseContentType;
  /** Let clients use the HTTP/2 bidi `Run`. */
  readonly offerHttp2: boolean;
  /** Agent streams (turns, with their backlog) kept at once; more are refused. */
  readonly maxStreams: number;
  /**
   * Open client connections at once; more are closed as they arrive. Over HTTP/1.1 a
   * conversation holds two (its RunSSE and a kept-alive BidiAppend).
   */
  readonly maxConnections: number;
  /**
   * `server.blobCheckpoints`: checkpoints' turns written to the client's blob store first (what
   * the IDE's fork and "duplicate chat" need; docs/protocol.md §2.10). false: every checkpoint
   * inline, with no blob writes (for a client that does not answer them).
   */
  readonly blobCheckpoints: boolean;
  /** `server.blobWriteTimeoutMs`: how long a checkpoint waits for its writes' answers. */
  readonly blobWriteTimeoutMs: number;
  /**
   * `server.blobReadTimeoutMs`: how long a read of the client's blob (a resume after a restart)
   * waits for its answer; never longer than `blobWriteTimeoutMs`.
   */
  readonly blobReadTimeoutMs: number;
  /**
   * `server.users`: clients authenticate with the tokens of `cursor-byok users` (docs/team.md),
   * with budgets; needs the PostgreSQL store. The access token, if any, stays the admin's.
   */
  readonly users: boolean;
  /**
   * `server.advertiseUrl`: where the other instances reach this one (several instances on
   * PostgreSQL, docs/team.md); default `http://<host>:<port>` as listened on.
   */
  readonly advertiseUrl?: string;
}

/** IDE mode (docs/ide.md): the local HTTPS proxy Cursor's settings point at. */
export interface IdeSettings {
  /** The proxy's port on 127.0.0.1 (`ide setup` writes it into Cursor's settings). */
  readonly proxyPort: number;
  /** Ports a CONNECT may name; others are refused. */
  readonly allowConnectPorts: readonly number[];
}

/** Where a model came from: an entry of the file's `models` list, or an environment shortcut. */
export type ModelOrigin =
  | { readonly type: "file"; readonly field: string }
  | { readonly type: "env"; readonly variable: string };

export interface ConfiguredModel {
  readonly config: ModelConfig;
  readonly origin: ModelOrigin;
}

/** A model whose key variable is not set: it is configured, but every call to it would fail. */
export interface MissingKey {
  readonly model: string;
  readonly variable: string;
  /** `file:line:col: field: …`, like every configuration error. */
  readonly message: string;
}

export interface Config {
  /** The file read; `exists: false` when the default file is absent (then defaults apply). */
  readonly file: { readonly path: string; readonly exists: boolean };
  readonly server: ServerSettings;
  readonly ide: IdeSettings;
  readonly dataDirectory: string;
  /** `<dataDirectory>/cursor-byok.db`. */
  readonly databasePath: string;
  /** The team store (`data.postgres`, or `DATABASE_URL`); absent: the SQLite file. */
  readonly postgres?: PostgresSettings;
  readonly logLevel: LogLevel;
  /** In offer order; the first is the default. Empty: the server offers its demo model. */
  readonly models: readonly ConfiguredModel[];
  /** `helperModel`: the model for chat titles, commit messages and branch names (else the default). */
  readonly helperModel?: string;
  /** `subagents.models`: the model of each subagent type, by type name; absent: the parent's. */
  readonly subagentModels?: Readonly<Record<string, string>>;
  /** `subagents.maxConcurrent`: subagents running at once per chat; absent: the default (4). */
  readonly subagentMaxConcurrent?: number;
  /** `subagents.maxSteps`: model calls of one subagent run; absent: the default (50). */
  readonly subagentMaxSteps?: number;
  readonly missingKeys: readonly MissingKey[];
  /** The web tools: search provider, fetch limits, approval. */
  readonly web: WebSettings;
  /** `team`: this machine's clients use a team's server (docs/team.md "Clients"). */
  readonly team?: TeamClientSettings;
}

/** A team's server that the IDE proxy and `cursor-byok agent` send the agent's calls to. */
export interface TeamClientSettings {
  /** The server's origin, `https://host[:port]`. */
  readonly server: string;
  /** The environment variable the user's token is read from. */
  readonly tokenVariable: string;
  /** The user's token (`cursor-byok users add`); absent when the variable is not set. */
  readonly token?: Secret;
}

export interface PostgresSettings {
  /** `postgres://…`; may hold a password, so never shown. */
  readonly url: Secret;
  readonly origin: "data.postgres.url" | "DATABASE_URL";
  readonly poolSize?: number;
  readonly statementTimeoutMs?: number;
}

/** Command-line values; each wins over the file. */
export interface ConfigOverrides {
  readonly host?: string;
  readonly port?: number;
  readonly dataDirectory?: string;
  readonly logLevel?: LogLevel;
  readonly proxyPort?: number;
}
