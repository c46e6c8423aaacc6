/**
 * Procedures outside the agent stream that the IDE and the CLI call at start-up or during a
 * session, whose correct answer here is an empty message (a valid message of every type: no
 * team, no team repositories, no marketplaces, plugins, managed skills or global commands, no
 * nudge, nothing to report). Sources: docs/protocol-coverage.md §5, docs/protocol.md §6.
 */

export const EMPTY_REPLIES: ReadonlySet<string> = new Set([
  "/aiserver.v1.NetworkService/IsConnected",
  "/aiserver.v1.AiService/GetDefaultModel",
  "/aiserver.v1.AiService/GetDefaultModelNudgeData",
  "/aiserver.v1.AuthService/GetEmail",
  "/aiserver.v1.AuthService/GetUserMeta",
  "/aiserver.v1.DashboardService/GetMe",
  "/aiserver.v1.DashboardService/GetTeams",
  "/aiserver.v1.DashboardService/GetUserPrivacyMode",
  "/aiserver.v1.DashboardService/GetUserProfile",
  "/aiserver.v1.DashboardService/GetPlanInfo",
  "/aiserver.v1.DashboardService/GetCurrentPeriodUsage",
  "/aiserver.v1.DashboardService/GetUsageLimitStatusAndActiveGrants",
  "/aiserver.v1.DashboardService/IsOnNewPricing",
  // Not in a team: the CLI stops at session start, and its ignore service fails every tool in a
  // git repository, when these are unimplemented.
  "/aiserver.v1.DashboardService/GetTeamAdminSettingsOrEmptyIfNotInTeam",
  "/aiserver.v1.DashboardService/GetTeamReposOrEmptyIfNotInTeam",
  "/aiserver.v1.DashboardService/GetTokenUsage",
  "/aiserver.v1.DashboardService/GetGlassEarlyPreviewEnrollment",
  "/aiserver.v1.DashboardService/GetCliDownloadUrl",
  // No managed skills, global commands, marketplaces or plugins from a server.
  "/aiserver.v1.DashboardService/GetManagedSkills",
  "/aiserver.v1.DashboardService/GetGlobalCommands",
  "/aiserver.v1.DashboardService/GetEffectiveUserPlugins",
  "/aiserver.v1.DashboardService/ListMarketplaces",
  "/aiserver.v1.DashboardService/ListMarketplacePlugins",
  "/aiserver.v1.DashboardService/ListUserPluginInstalls",
  "/aiserver.v1.DashboardService/RegisterMarketplaceAndPlugins",
  "/aiserver.v1.DashboardService/GetAvailableMcpServers",
  "/aiserver.v1.DashboardService/BatchGetPluginMcpConfig",
  "/aiserver.v1.MCPRegistryService/GetKnownServers",
  "/aiserver.v1.AnalyticsService/BootstrapStatsig",
  "/aiserver.v1.AnalyticsService/GetFirstWindowStatsigDecision",
  "/aiserver.v1.AnalyticsService/SubmitLogs",
  "/aiserver.v1.AnalyticsService/TrackEvents",
  // Conversation bookkeeping for Cursor's cloud; the conversation lives in this server's store.
  "/agent.v1.AgentService/UpdateConversationMetadata",
  "/agent.v1.AgentService/UploadConversationBlobs",
  "/agent.v1.AgentService/NotifyConversationClone",
  "/agent.v1.AgentService/GetNewChatNudgeLegacyModelPicker",
  "/agent.v1.AgentService/GetNewChatNudgeParameterizedModelPicker",
]);

/** Plain-HTTP telemetry sinks (OTLP): accepted and dropped. */
export const TELEMETRY_SINKS: ReadonlySet<string> = new Set(["/v1/traces"]);

/**
 * One public note says 3.18.x IDE builds may run the agent locally and call this service for
 * inference instead of `AgentService/Run`, behind a feature gate; no public schema shows its
 * messages (docs/protocol.md §5). It is answered `unimplemented` and reported at warn.
 */
export const INFERENCE_SERVICE_PREFIX = "/aiserver.v1.InferenceService/";

export const INFERENCE_SERVICE_WARNING =
  "the client called aiserver.v1.InferenceService (the IDE's managed-local agent runtime), " +
  "which this server cannot serve: its schema is not public. Turn the agent back to the " +
  "server runtime in the IDE, or report the client version";
