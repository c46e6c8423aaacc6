export { toCanonicalJSON } from "./canonical-json.ts";
export {
  type ForkDecision,
  type ForkSource,
  type ImportedTurn,
  type NoForkReason,
  toFork,
  toImportState,
} from "./fork.ts";
export {
  appendHashes,
  chainHash,
  EMPTY_CHAIN_HASH,
  EMPTY_HISTORY_HASHES,
  hashHistory,
  hashMessage,
  hashMessageBytes,
  toMessageBytes,
} from "./history-hash.ts";
export { SUBAGENT_MARK, toCallID, toOperationID, toTurnID } from "./ids.ts";
export { chooseModel, FAILOVER_KINDS, toCandidates } from "./model-route.ts";
export { buildPrompt, buildRequest, buildTools, toResumeCommand } from "./request.ts";
export {
  type ContinueReason,
  isBranchOf,
  MAX_TURN_STARTS,
  type RewindDecision,
  type RewindHint,
  toBranchConversationID,
  toBranchState,
  toRewind,
} from "./rewind.ts";
export { createConversation, isIdle } from "./state.ts";
export { type StepRecord, toStepRecords } from "./step-records.ts";
export {
  EXPLORE,
  GENERAL,
  SUBAGENT_TOOL,
  type SubagentDefinition,
  toRootConversationID,
  toStickySubagentSettings,
  toSubagentConversationID,
  toSubagentModel,
  toSubagentSettings,
} from "./subagent.ts";
export { SUMMARY_SYSTEM_PROMPT } from "./summary-request.ts";
export { toNotRunResult } from "./tool-result.ts";
export { transition } from "./transition.ts";
export {
  mayCancel,
  mayResume,
  type ResumeAccess,
  type ResumeCheck,
  SUPERSEDED_REASON,
  type TurnAccess,
  toSupersedingCancel,
} from "./turn-ownership.ts";
export { toEndedTurn, toTurnRecord } from "./turn-record.ts";
export type * from "./types.ts";
