/**
 * Responses to the start-up RPCs the agent needs (docs/protocol.md §6): the server config that
 * keeps the client on protocols we serve, the model lists for the IDE picker and the CLI, and
 * the server time. Pure builders; the transport serves them as Connect unary responses.
 */
import { create } from "@bufbuild/protobuf";
import {
  type GetDefaultModelForCliResponse,
  GetDefaultModelForCliResponseSchema,
  type GetUsableModelsResponse,
  GetUsableModelsResponseSchema,
  type ModelDetails,
  ModelDetailsSchema,
} from "./gen/agent/v1/models_pb.js";
import {
  type AvailableModelsResponse,
  AvailableModelsResponseSchema,
} from "./gen/aiserver/v1/available_models_pb.js";
import {
  type HealthCheckResponse,
  HealthCheckResponse_Status,
  HealthCheckResponseSchema,
} from "./gen/aiserver/v1/git_text_pb.js";
import {
  type GetServerConfigResponse,
  GetServerConfigResponseSchema,
  Http2Config,
} from "./gen/aiserver/v1/server_config_pb.js";
import {
  type ServerTimeResponse,
  ServerTimeResponseSchema,
} from "./gen/aiserver/v1/server_time_pb.js";

/** A model this server offers, as the client lists it. */
export interface OfferedModel {
  /** The id the client sends back in run requests. */
  readonly id: string;
  readonly displayName: string;
  readonly contextWindow: number;
  readonly supportsThinking: boolean;
  readonly supportsImages: boolean;
  /** The model has larger limits in max mode (its configuration's `maxMode`). */
  readonly supportsMaxMode: boolean;
  /** The context window in max mode (equal to `contextWindow` without max mode). */
  readonly maxModeContextWindow: number;
}

export const SERVER_CONFIG_VERSION = "cursor-byok-1";

/**
 * The keys the client encrypts workspace paths with (`IndexingConfig` 9/10). Opaque to the
 * server; they must stay the same for an install, because the client keys what it derived from
 * its paths on them.
 */
export interface PathEncryptionKeys {
  readonly user: string;
  readonly team: string;
}

export interface ServerConfigOptions {
  /** `true` lets the client use the HTTP/2 bidi `Run`. */
  readonly http2: boolean;
  /** Without them the CLI stops in git workspaces with "No encryption key found". */
  readonly pathEncryptionKeys?: PathEncryptionKeys;
}

/**
 * By default forces the client off HTTP/2 bidi `Run` onto RunSSE + BidiAppend
 * (FORCE_ALL_DISABLED), the transport every peer serves; `http2: true` lets it use `Run`
 * (FORCE_ALL_ENABLED). Carries the path-encryption keys in `indexing_config` when given.
 */
export function toServerConfigResponse(
  options: ServerConfigOptions = { http2: false },
): GetServerConfigResponse {
  const keys = options.pathEncryptionKeys;
  return create(GetServerConfigResponseSchema, {
    configVersion: SERVER_CONFIG_VERSION,
    http2Config: options.http2 ? Http2Config.FORCE_ALL_ENABLED : Http2Config.FORCE_ALL_DISABLED,
    ...(keys === undefined
      ? {}
      : {
          indexingConfig: {
            defaultUserPathEncryptionKey: keys.user,
            defaultTeamPathEncryptionKey: keys.team,
          },
        }),
  });
}

/** `AiService/HealthCheck`: a server that answers is healthy. */
export function toHealthCheckResponse(): HealthCheckResponse {
  return create(HealthCheckResponseSchema, { status: HealthCheckResponse_Status.HEALTHY });
}

/** The IDE's model picker: every offered model, the first one the default everywhere. */
export function toAvailableModelsResponse(
  models: readonly OfferedModel[],
): AvailableModelsResponse {
  const ids = models.map((model) => model.id);
  const feature = { defaultModel: ids[0] ?? "", fallbackModels: ids.slice(1) };
  return create(AvailableModelsResponseSchema, {
    modelNames: ids,
    models: models.map((model) => ({
      name: model.id,
      defaultOn: true,
      supportsAgent: true,
      supportsThinking: model.supportsThinking,
      supportsImages: model.supportsImages,
      supportsMaxMode: model.supportsMaxMode,
      supportsNonMaxMode: true,
      supportsPlanMode: true,
      contextTokenLimit: model.contextWindow,
      ...(model.supportsMaxMode ? { contextTokenLimitForMaxMode: model.maxModeContextWindow } : {}),
      clientDisplayName: model.displayName,
      serverModelName: model.id,
      inputboxShortModelName: model.displayName,
    })),
    composerModelConfig: feature,
    cmdKModelConfig: feature,
    backgroundComposerModelConfig: feature,
    planExecutionModelConfig: feature,
    useModelParameters: false,
  });
}

/** The CLI's model list (agent.v1 ModelDetails; never credentials). */
export function toUsableModelsResponse(models: readonly OfferedModel[]): GetUsableModelsResponse {
  return create(GetUsableModelsResponseSchema, { models: models.map(toModelDetails) });
}

export function toDefaultModelForCliResponse(model: OfferedModel): GetDefaultModelForCliResponse {
  return create(GetDefaultModelForCliResponseSchema, { model: toModelDetails(model) });
}

/** Both times in epoch milliseconds, as the client expects (doubles). */
export function toServerTimeResponse(receivedAt: number, sentAt: number): ServerTimeResponse {
  return create(ServerTimeResponseSchema, {
    receiveTimestamp: receivedAt,
    transmitTimestamp: sentAt,
  });
}

function toModelDetails(model: OfferedModel): ModelDetails {
  return create(ModelDetailsSchema, {
    modelId: model.id,
    displayModelId: model.id,
    displayName: model.displayName,
    displayNameShort: model.displayName,
  });
}
