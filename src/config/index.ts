/**
 * Configuration: the YAML file, environment shortcuts and command-line overrides turned into one
 * validated `Config`. Part of the composition root; see README.md.
 */
export { isLoopbackHost, toBindRefusal, toConnectHost } from "./access.ts";
export {
  ConfigFileError,
  type ConfigFileErrorInit,
  isConfigFileError,
  toConfigErrorText,
} from "./config-file-error.ts";
export {
  ENV_SHORTCUTS,
  type EnvShortcut,
  type ShortcutModel,
  toShortcutModels,
} from "./env-shortcuts.ts";
export {
  DEFAULT_HOST,
  DEFAULT_LOG_LEVEL,
  DEFAULT_PORT,
  DEFAULT_PROXY_PORT,
  DEFAULT_TEAM_TOKEN_VARIABLE,
  isPort,
  type LoadConfigInputs,
  loadConfig,
  readConfigText,
  toConfig,
  toTeamClientSettings,
  toTeamServerProblem,
} from "./load-config.ts";
export {
  CONFIG_PATH_VARIABLE,
  type ConfigLocation,
  type PlatformInputs,
  toAbsolutePath,
  toConfigLocation,
  toDefaultConfigPath,
} from "./paths.ts";
export { type StarterInputs, toStarterConfig } from "./starter.ts";
export {
  type AccessToken,
  type Config,
  type ConfigOverrides,
  type ConfiguredModel,
  type IdeSettings,
  LOG_LEVELS,
  type LogLevel,
  type MissingKey,
  type ModelOrigin,
  type PostgresSettings,
  RUN_SSE_CONTENT_TYPES,
  type RunSseContentType,
  type ServerSettings,
  type TeamClientSettings,
} from "./types.ts";
export {
  DEFAULT_WEB_FETCH,
  type KeyedSearchProvider,
  SEARCH_KEY_VARIABLES,
  toWebSettings,
  type WebFetchSettings,
  type WebSearchSettings,
  type WebSettings,
} from "./web-settings.ts";
