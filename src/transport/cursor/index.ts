/**
 * The Cursor dialect: the only code that knows Cursor's protobuf. Pure codecs and helpers the
 * runner (transport) calls; see README.md for how they fit together.
 */

export { type ForceBackground, toForceBackground } from "./background-shell.ts";
export {
  type BidiAppend,
  type BidiAppendBody,
  DEFAULT_DECODE_LIMITS,
  type DecodeLimits,
  fromAgentClientMessageBytes,
  fromBidiAppendBody,
  fromBidiAppendRequest,
  toBidiAppendBody,
} from "./bidi-append.ts";
export { MAX_CHECKPOINT_BYTES, toCheckpoint, toCheckpointMessage } from "./checkpoint.ts";
export { type ClientEvent, fromClientMessage, type RunAction } from "./client-message.ts";
export type { Decoded, DecodeError, DecodeErrorReason } from "./decode-error.ts";
export {
  type AgentClientMessage,
  AgentClientMessageSchema,
  type AgentServerMessage,
  AgentServerMessageSchema,
  AgentService,
} from "./gen/agent/v1/agent_stream_pb.js";
export { AiService, ServerConfigService } from "./gen/aiserver/v1/ai_service_pb.js";
export { BidiRequestIdSchema, BidiService } from "./gen/aiserver/v1/bidi_pb.js";
export { MODES, type Mode, toAgentMode } from "./mode.ts";
export { toSystemPrompt } from "./prompt.ts";
export { type EventContext, fromResponseEvent, type Outbound } from "./response-events.ts";
export {
  fromModeSettings,
  fromRunRequest,
  type ModelSelection,
  type RunOptions,
  type TurnStart,
  toModelSelection,
  toModeSettings,
  toResumedTurnState,
} from "./run-request.ts";
export { toHeartbeatMessage, toServerMessageBytes, toUpdateMessage } from "./server-message.ts";
export {
  type OfferedModel,
  type PathEncryptionKeys,
  SERVER_CONFIG_VERSION,
  type ServerConfigOptions,
  toAvailableModelsResponse,
  toDefaultModelForCliResponse,
  toHealthCheckResponse,
  toServerConfigResponse,
  toServerTimeResponse,
  toUsableModelsResponse,
} from "./startup-rpcs.ts";
export {
  abortToolCall,
  continueToolCall,
  expireToolCall,
  finishServerWork,
  type StartOptions,
  startToolCall,
  type ToolContext,
  type ToolStep,
  UNKNOWN_OUTCOME,
} from "./tool-session.ts";
export { toMcpToolRefs, toToolDefinitions } from "./tools/catalogue.ts";
export {
  NO_WEB,
  type ServerWork,
  type ServerWorkResult,
  type WebOffer,
} from "./tools/server-work.ts";
export { type TurnEnd, toTurnEnd, toTurnEnded } from "./turn-end.ts";
export type { OpenToolCall, TurnState, TurnUsage } from "./turn-state.ts";
export {
  classifyProviderError,
  type FailureKind,
  isRetryable,
  type ProtocolError,
  redactSecrets,
  SUMMARIZE_NOT_SUPPORTED,
  toConnectError,
  toNotSupportedError,
  toProtocolError,
  WIRE_ERRORS,
  type WireErrorName,
  type WireFailure,
} from "./wire-error.ts";
