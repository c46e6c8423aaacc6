/**
 * The Cursor dialect: the only code that knows Cursor's protobuf. Pure codecs and helpers the
 * transport calls; see README.md for how they fit together. This index exports what code outside
 * the dialect uses; tests of the dialect import its files directly.
 */

export { toForceBackground } from "./background-shell.ts";
export { type BidiAppend, fromBidiAppendRequest } from "./bidi-append.ts";
export {
  toLastClientTurn,
  toReadBackTurn,
  toSentClientTurn,
  withCarriedTurn,
  withHandedTurn,
  withReadBackTurn,
} from "./carried-turn.ts";
export { toCheckpointMessage, toCheckpointSource } from "./checkpoint.ts";
export {
  toBlob,
  toBlobCheckpoint,
  toCheckpointUpdate,
  toGetBlobMessage,
  toSetBlobMessage,
} from "./checkpoint-blobs.ts";
export { type ImportedHistory, toImportedHistory } from "./checkpoint-import.ts";
export { toLastTurnOrigin } from "./checkpoint-origin.ts";
export { type ClientEvent, fromClientMessage } from "./client-message.ts";
export { joinDeltas } from "./coalesce-deltas.ts";
export {
  type AgentClientMessage,
  // For tests (e2e/, testing/): the client's side of the stream.
  AgentClientMessageSchema,
  type AgentServerMessage,
  AgentService,
} from "./gen/agent/v1/agent_stream_pb.js";
export type { KvClientMessage } from "./gen/agent/v1/kv_pb.js";
export { AiService, ServerConfigService } from "./gen/aiserver/v1/ai_service_pb.js";
export { BidiRequestIdSchema, BidiService } from "./gen/aiserver/v1/bidi_pb.js";
export { type Mode, toAgentMode } from "./mode.ts";
export { type ChosenModel, toChosenModel } from "./model-options.ts";
export { fromResponseEvent } from "./response-events.ts";
export {
  fromModeSettings,
  fromRunRequest,
  toModelSelection,
  toModeSettings,
  toResumedTurnState,
} from "./run-request.ts";
export { fromReceivedRunRequest } from "./run-request-bytes.ts";
export { toHeartbeatMessage, toServerMessageBytes, toServerNotice } from "./server-message.ts";
export {
  type OfferedModel,
  type PathEncryptionKeys,
  toAvailableModelsResponse,
  toDefaultModelForCliResponse,
  toHealthCheckResponse,
  toServerConfigResponse,
  toServerTimeResponse,
  toUsableModelsResponse,
} from "./startup-rpcs.ts";
export { toSubagentSystemPrompt } from "./subagent-prompt.ts";
export { type SummaryView, toSummaryUpdates, toSummaryView } from "./summary-updates.ts";
export { toTaskProgress, toTaskProgressEvents } from "./task-progress.ts";
export {
  abortToolCall,
  continueToolCall,
  expireToolCall,
  findOpen,
  finishServerWork,
  startToolCall,
  // For tests (e2e/crash-matrix.test.ts): the result text of a call whose outcome is unknown.
  UNKNOWN_OUTCOME,
} from "./tool-session.ts";
export { PARENT_ONLY_TOOLS, toEffectFreeToolNames } from "./tools/catalogue.ts";
export type {
  ServerWork,
  ServerWorkResult,
  SubagentOutcome,
  WebOffer,
} from "./tools/server-work.ts";
export { toEndedTurnError, toTurnEnd, toTurnEnded } from "./turn-end.ts";
export {
  addUsage,
  type CustomSubagentDefinition,
  type LastClientTurn,
  type TurnState,
} from "./turn-state.ts";
export {
  redactSecrets,
  toConnectError,
  toNotSupportedError,
  toProtocolError,
} from "./wire-error.ts";
