/**
 * A protocol-faithful test client that plays the Cursor IDE / `cursor-agent` against a server
 * over real HTTP (for end-to-end tests). See README.md.
 */
export { type ClonedTurn, cloneCheckpoint, toBlobKey } from "./blob-clone.ts";
export type { AppendForm } from "./channels.ts";
export {
  type CursorClient,
  type CursorClientOptions,
  createCursorClient,
  type StartTurnOptions,
  type TurnInit,
} from "./cursor-client.ts";
export type { ExecOverride, ExecReply } from "./exec-runner.ts";
export {
  type InteractionAnswer,
  type QueryAnswerer,
  toDefaultAnswer,
} from "./interaction-answers.ts";
export {
  type ClientFlavour,
  createRunRequest,
  type ModeName,
  type RunRequestInit,
  toReferencedBlobs,
} from "./run-request.ts";
export {
  type AppendFailure,
  type BlobWriteAnswer,
  type BlobWriteAnswerer,
  type ClientMessageInit,
  type SentMessage,
  type Turn,
  type TurnResult,
  TurnTimeoutError,
  toClientKind,
  type WaitOptions,
} from "./turn.ts";
export {
  type ToolCallView,
  type TurnUsageView,
  type TurnView,
  toKind,
  toTurnView,
} from "./turn-view.ts";
