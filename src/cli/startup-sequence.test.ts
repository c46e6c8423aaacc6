/**
 * The start-up and in-session procedures of cursor-agent and of the IDE, as the public sources
 * describe them (docs/protocol-coverage.md §5, docs/protocol.md §6), replayed against a real
 * `cursor-byok serve` process: not one may be answered `unimplemented`, and the CLI gets the
 * install's path-encryption keys, the same after a restart.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { after, test } from "node:test";
import { fromBinary } from "@bufbuild/protobuf";
import { NameAgentResponseSchema } from "../transport/cursor/gen/agent/v1/name_agent_pb.js";
import { HealthCheckResponseSchema } from "../transport/cursor/gen/aiserver/v1/git_text_pb.js";
import { GetServerConfigResponseSchema } from "../transport/cursor/gen/aiserver/v1/server_config_pb.js";
import { PATH_KEYS_FILE } from "../transport/path-encryption-keys.ts";
import { createTempHome, startServeProcess } from "./testing.ts";

const AI = "/aiserver.v1.AiService";
const DASHBOARD = "/aiserver.v1.DashboardService";
const ANALYTICS = "/aiserver.v1.AnalyticsService";
const AGENT = "/agent.v1.AgentService";

/** cursor-agent 2026.07/08 in local mode (L240, GEN's local-mode notes, docs/protocol.md §6). */
const CLI_SEQUENCE = [
  "/aiserver.v1.ServerConfigService/GetServerConfig",
  `${AI}/GetServerConfig`,
  `${DASHBOARD}/GetMe`,
  `${DASHBOARD}/GetUserPrivacyMode`,
  `${DASHBOARD}/GetTeams`,
  `${DASHBOARD}/GetTeamAdminSettingsOrEmptyIfNotInTeam`,
  `${DASHBOARD}/ListMarketplaces`,
  `${DASHBOARD}/GetEffectiveUserPlugins`,
  `${DASHBOARD}/RegisterMarketplaceAndPlugins`,
  `${DASHBOARD}/GetManagedSkills`,
  `${DASHBOARD}/GetGlobalCommands`,
  `${DASHBOARD}/GetCliDownloadUrl`,
  `${AI}/GetUsableModels`,
  `${AGENT}/GetUsableModels`,
  `${AI}/GetDefaultModelForCli`,
  `${AGENT}/GetDefaultModelForCli`,
  `${AI}/ServerTime`,
  `${AI}/HealthCheck`,
  `${ANALYTICS}/BootstrapStatsig`,
  // In a git workspace, before Ls/Grep/Glob/Shell run (the ignore service).
  `${DASHBOARD}/GetTeamReposOrEmptyIfNotInTeam`,
  // During a session.
  `${AGENT}/NameAgent`,
  `${AGENT}/UpdateConversationMetadata`,
  `${ANALYTICS}/TrackEvents`,
  `${ANALYTICS}/SubmitLogs`,
  "/v1/traces",
];

/** The desktop IDE (QZ phase-2 start-up capture, SAK/YAO's served routes; docs/protocol.md §6). */
const IDE_SEQUENCE = [
  "/aiserver.v1.ServerConfigService/GetServerConfig",
  `${AI}/AvailableModels`,
  `${AI}/GetDefaultModel`,
  `${AI}/GetDefaultModelNudgeData`,
  `${AI}/ServerTime`,
  `${AI}/HealthCheck`,
  "/aiserver.v1.AuthService/GetEmail",
  "/aiserver.v1.AuthService/GetUserMeta",
  "/aiserver.v1.NetworkService/IsConnected",
  `${DASHBOARD}/GetMe`,
  `${DASHBOARD}/GetUserProfile`,
  `${DASHBOARD}/GetUserPrivacyMode`,
  `${DASHBOARD}/GetPlanInfo`,
  `${DASHBOARD}/GetCurrentPeriodUsage`,
  `${DASHBOARD}/GetUsageLimitStatusAndActiveGrants`,
  `${DASHBOARD}/IsOnNewPricing`,
  `${DASHBOARD}/GetTeams`,
  `${DASHBOARD}/GetTeamAdminSettingsOrEmptyIfNotInTeam`,
  `${DASHBOARD}/GetTeamReposOrEmptyIfNotInTeam`,
  `${DASHBOARD}/GetManagedSkills`,
  `${DASHBOARD}/GetGlobalCommands`,
  `${DASHBOARD}/GetTokenUsage`,
  `${DASHBOARD}/GetGlassEarlyPreviewEnrollment`,
  `${DASHBOARD}/GetEffectiveUserPlugins`,
  `${DASHBOARD}/ListMarketplaces`,
  `${DASHBOARD}/ListMarketplacePlugins`,
  `${DASHBOARD}/ListUserPluginInstalls`,
  `${DASHBOARD}/GetAvailableMcpServers`,
  `${DASHBOARD}/BatchGetPluginMcpConfig`,
  "/aiserver.v1.MCPRegistryService/GetKnownServers",
  `${ANALYTICS}/BootstrapStatsig`,
  `${ANALYTICS}/GetFirstWindowStatsigDecision`,
  `${ANALYTICS}/TrackEvents`,
  `${ANALYTICS}/SubmitLogs`,
  // During a session: chat title, model nudges, metadata, fork, commit message and branch name.
  `${AGENT}/NameAgent`,
  `${AI}/NameAgent`,
  `${AGENT}/GetNewChatNudgeLegacyModelPicker`,
  `${AGENT}/GetNewChatNudgeParameterizedModelPicker`,
  `${AGENT}/UpdateConversationMetadata`,
  `${AGENT}/UploadConversationBlobs`,
  `${AGENT}/NotifyConversationClone`,
  `${AGENT}/CreateTranscriptOverview`,
  `${AI}/WriteGitCommitMessage`,
  `${AI}/WriteGitBranchName`,
];

const home = createTempHome();
after(() => home.cleanup());

async function replay(url: string, procedures: readonly string[]) {
  const answers = [];
  for (const procedure of procedures) {
    // An empty body is a valid (empty) request message of every type.
    const response = await fetch(`${url}${procedure}`, {
      method: "POST",
      headers: { "content-type": "application/proto", "connect-protocol-version": "1" },
      body: new Uint8Array(),
    });
    answers.push({
      procedure,
      status: response.status,
      body: new Uint8Array(await response.arrayBuffer()),
    });
  }
  return answers;
}

test("the CLI's and the IDE's start-up sequences get no unimplemented answer", async () => {
  const dataDir = path.join(home.dir, "data-dir");
  const args = ["--port", "0", "--data-dir", dataDir, "--log-level", "info"];
  let server = await startServeProcess(args, { env: home.env });
  let keys: { user: string; team: string } | undefined;
  try {
    for (const sequence of [CLI_SEQUENCE, IDE_SEQUENCE]) {
      const answers = await replay(server.url, sequence);
      const failed = answers.filter((answer) => answer.status !== 200);
      assert.deepEqual(
        failed.map(
          (answer) =>
            `${answer.procedure}: ${answer.status} ${Buffer.from(answer.body).toString()}`,
        ),
        [],
      );
      const byName = new Map(answers.map((answer) => [answer.procedure, answer.body]));
      const config = fromBinary(
        GetServerConfigResponseSchema,
        byName.get("/aiserver.v1.ServerConfigService/GetServerConfig") ?? new Uint8Array(),
      );
      const user = config.indexingConfig?.defaultUserPathEncryptionKey ?? "";
      const team = config.indexingConfig?.defaultTeamPathEncryptionKey ?? "";
      assert.ok(user.length >= 43 && team.length >= 43, "both path-encryption keys are sent");
      keys ??= { user, team };
      assert.deepEqual({ user, team }, keys);
      const health = fromBinary(
        HealthCheckResponseSchema,
        byName.get(`${AI}/HealthCheck`) ?? new Uint8Array(),
      );
      assert.equal(health.status, 1);
      // No model is configured here: the demo model names the chat, or the first words do.
      const title = fromBinary(
        NameAgentResponseSchema,
        byName.get(`${AGENT}/NameAgent`) ?? new Uint8Array(),
      );
      assert.notEqual(title.name, "");
    }
    assert.ok(existsSync(path.join(dataDir, PATH_KEYS_FILE)));
  } finally {
    await server.stop();
  }
  // After the exit every log line has been read.
  assert.doesNotMatch(server.output(), /not implemented/);

  server = await startServeProcess(args, { env: home.env });
  try {
    const [answer] = await replay(server.url, [`${AI}/GetServerConfig`]);
    const config = fromBinary(GetServerConfigResponseSchema, answer?.body ?? new Uint8Array());
    assert.deepEqual(
      {
        user: config.indexingConfig?.defaultUserPathEncryptionKey,
        team: config.indexingConfig?.defaultTeamPathEncryptionKey,
      },
      keys,
      "the same keys after a restart",
    );
  } finally {
    await server.stop();
  }
});

test("a call to the IDE's managed-local InferenceService is reported at warn", async () => {
  const server = await startServeProcess(["--port", "0", "--data-dir", path.join(home.dir, "d2")], {
    env: home.env,
  });
  try {
    const [answer] = await replay(server.url, ["/aiserver.v1.InferenceService/RunInference"]);
    assert.equal(answer?.status, 404);
  } finally {
    await server.stop();
  }
  // After the exit every log line has been read.
  assert.match(server.output(), /"level":40[^\n]*InferenceService/);
});
