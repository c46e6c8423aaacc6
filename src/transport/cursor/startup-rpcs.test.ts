import assert from "node:assert/strict";
import { test } from "node:test";
import { toBinary } from "@bufbuild/protobuf";
import { AvailableModelsResponseSchema } from "./gen/aiserver/v1/available_models_pb.js";
import { Http2Config } from "./gen/aiserver/v1/server_config_pb.js";
import {
  type OfferedModel,
  toAvailableModelsResponse,
  toDefaultModelForCliResponse,
  toServerConfigResponse,
  toServerTimeResponse,
  toUsableModelsResponse,
} from "./startup-rpcs.ts";

const MODELS: OfferedModel[] = [
  {
    id: "claude-sonnet",
    displayName: "Claude Sonnet",
    contextWindow: 200_000,
    supportsThinking: true,
    supportsImages: true,
    supportsMaxMode: true,
    maxModeContextWindow: 1_000_000,
  },
  {
    id: "gpt-5",
    displayName: "GPT-5",
    contextWindow: 400_000,
    supportsThinking: true,
    supportsImages: false,
    supportsMaxMode: false,
    maxModeContextWindow: 400_000,
  },
];

test("the server config forces RunSSE + BidiAppend", () => {
  assert.equal(toServerConfigResponse().http2Config, Http2Config.FORCE_ALL_DISABLED);
});

test("the picker lists every model, the first as default", () => {
  const response = toAvailableModelsResponse(MODELS);
  assert.deepEqual(response.modelNames, ["claude-sonnet", "gpt-5"]);
  assert.deepEqual(
    response.models.map((model) => [
      model.name,
      model.clientDisplayName,
      model.contextTokenLimit,
      model.supportsImages,
      model.supportsMaxMode,
      model.contextTokenLimitForMaxMode,
    ]),
    [
      ["claude-sonnet", "Claude Sonnet", 200_000, true, true, 1_000_000],
      ["gpt-5", "GPT-5", 400_000, false, false, undefined],
    ],
  );
  assert.equal(response.composerModelConfig?.defaultModel, "claude-sonnet");
  assert.deepEqual(response.composerModelConfig?.fallbackModels, ["gpt-5"]);
  assert.ok(toBinary(AvailableModelsResponseSchema, response).length > 0);
});

test("the CLI lists get agent.v1 model details without credentials", () => {
  const usable = toUsableModelsResponse(MODELS);
  assert.deepEqual(
    usable.models.map((model) => [model.modelId, model.displayName]),
    [
      ["claude-sonnet", "Claude Sonnet"],
      ["gpt-5", "GPT-5"],
    ],
  );
  assert.equal(usable.models[0]?.credentials.case, undefined);
  const [first] = MODELS;
  assert.ok(first);
  assert.equal(toDefaultModelForCliResponse(first).model?.modelId, "claude-sonnet");
});

test("server time carries both timestamps", () => {
  const response = toServerTimeResponse(1000.5, 1001);
  assert.equal(response.receiveTimestamp, 1000.5);
  assert.equal(response.transmitTimestamp, 1001);
});
