/**
 * Model-call and client-operation records: the forward-only status rules and the writes that
 * apply them. Saving is idempotent: an existing record keeps its request (a retry must use the
 * saved bytes, docs/design.md §8), its status only moves forward, a terminal status is final, and a
 * completed operation keeps its first result.
 */
import { createHash } from "node:crypto";
import { StoreError } from "./errors.ts";
import { fromJSONText, toJSONText } from "./json-text.ts";
import { bindRequestStreamRow } from "./request-streams.ts";
import type { ClientOperationRow, LLMCallRow, Tables, WriteContext } from "./tables.ts";
import type {
  ClientOperationInput,
  ClientOperationRecord,
  ClientOperationStatus,
  LLMCallInput,
  LLMCallRecord,
  LLMCallStatus,
  RecordWrite,
} from "./types.ts";

const LLM_CALL_RANK: Readonly<Record<LLMCallStatus, number>> = {
  planned: 0,
  streaming: 1,
  committed: 2,
  failed: 2,
  canceled: 2,
};

const OPERATION_RANK: Readonly<Record<ClientOperationStatus, number>> = {
  planned: 0,
  sent: 1,
  completed: 2,
  canceled: 2,
};

const FINAL_RANK = 2;

/** A write would commit a model call that already ended; the caller aborts the transaction. */
export interface CallAlreadyFinished {
  readonly callID: string;
  readonly status: LLMCallStatus;
}

/** The status after asking to move from `from` to `to`: forward only, terminal is final. */
function toNextStatus<S extends string>(ranks: Readonly<Record<S, number>>, from: S, to: S): S {
  if (ranks[from] === FINAL_RANK) return from;
  return ranks[to] >= ranks[from] ? to : from;
}

export function isFinishedLLMCall(status: LLMCallStatus): boolean {
  return LLM_CALL_RANK[status] === FINAL_RANK;
}

export function isFinishedClientOperation(status: ClientOperationStatus): boolean {
  return OPERATION_RANK[status] === FINAL_RANK;
}

/**
 * Applies one record write. Returns a `CallAlreadyFinished` when the write marks a call
 * `committed` that already ended and `refuseSecondCommit` is set (inside a commit).
 */
export async function applyRecordWrite(
  tables: Tables,
  write: RecordWrite,
  context: WriteContext,
  refuseSecondCommit: boolean,
): Promise<CallAlreadyFinished | null> {
  switch (write.type) {
    case "llm_call":
      return saveLLMCallRow(tables, write.call, context, refuseSecondCommit);
    case "llm_call_status":
      return setLLMCallStatusRow(tables, write.callID, write.status, context, refuseSecondCommit);
    case "client_operation":
      await saveClientOperationRow(tables, write.operation, context);
      return null;
    case "client_operation_status":
      await setClientOperationStatusRow(
        tables,
        write.operationID,
        write.status,
        write.result,
        context,
      );
      return null;
    case "request_stream":
      await bindRequestStreamRow(tables, write.requestID, write, context);
      return null;
    case "llm_call_first_event":
      // Timing only: a call the store never saw is nothing to time (dashboard-types.ts).
      if (!Number.isSafeInteger(write.at))
        throw invalid("a first-event time must be an integer", context);
      if ((await tables.readLLMCall(write.callID)) !== null)
        await tables.insertFirstEvent(write.callID, write.at);
      return null;
    default: {
      const unknown: never = write;
      throw new StoreError(
        "invalid_argument",
        context.location,
        `Unknown record write ${(unknown as { type: unknown }).type}; nothing was written.`,
      );
    }
  }
}

export async function saveLLMCallRow(
  tables: Tables,
  call: LLMCallInput,
  context: WriteContext,
  refuseSecondCommit: boolean,
): Promise<CallAlreadyFinished | null> {
  checkLLMCall(call, context);
  const existing = await tables.readLLMCall(call.callID);
  if (existing !== null) {
    if (existing.conversationID !== call.conversationID) {
      throw invalid(
        `model call ${call.callID} belongs to conversation ${existing.conversationID}`,
        context,
      );
    }
    return setLLMCallStatusRow(tables, call.callID, call.status, context, refuseSecondCommit);
  }
  await requireConversation(tables, call.conversationID, `model call ${call.callID}`, context);
  await tables.insertLLMCall({
    callID: call.callID,
    conversationID: call.conversationID,
    turnID: call.turnID,
    model: call.model,
    request: call.request,
    requestHash:
      call.requestHash ?? createHash("sha256").update(call.request, "utf8").digest("hex"),
    messagesHash: call.messagesHash,
    messageCount: call.messageCount,
    lastMessageHash: call.lastMessageHash,
    status: call.status,
    createdAt: context.now,
    updatedAt: context.now,
  });
  return null;
}

export async function setLLMCallStatusRow(
  tables: Tables,
  callID: string,
  status: LLMCallStatus,
  context: WriteContext,
  refuseSecondCommit: boolean,
): Promise<CallAlreadyFinished | null> {
  checkStatus(LLM_CALL_RANK, status, `model call ${callID}`, context);
  const existing = await tables.readLLMCall(callID);
  if (existing === null) throw notFound(`model call ${callID}`, context);
  checkOwner(existing.conversationID, `model call ${callID}`, context);
  if (refuseSecondCommit && status === "committed" && isFinishedLLMCall(existing.status)) {
    return { callID, status: existing.status };
  }
  const next = toNextStatus(LLM_CALL_RANK, existing.status, status);
  if (next !== existing.status) await tables.updateLLMCallStatus(callID, next, context.now);
  return null;
}

export async function saveClientOperationRow(
  tables: Tables,
  operation: ClientOperationInput,
  context: WriteContext,
): Promise<void> {
  const what = `client operation ${operation.operationID}`;
  for (const key of ["operationID", "conversationID", "turnID", "toolCallID"] as const) {
    checkText(operation[key], `${what}: ${key}`, context);
  }
  checkStatus(OPERATION_RANK, operation.status, what, context);
  const existing = await tables.readClientOperation(operation.operationID);
  if (existing !== null) {
    if (existing.conversationID !== operation.conversationID) {
      throw invalid(`${what} belongs to conversation ${existing.conversationID}`, context);
    }
    await setClientOperationStatusRow(
      tables,
      operation.operationID,
      operation.status,
      operation.result,
      context,
    );
    return;
  }
  checkOwner(operation.conversationID, what, context);
  await requireConversation(tables, operation.conversationID, what, context);
  await tables.insertClientOperation({
    operationID: operation.operationID,
    conversationID: operation.conversationID,
    turnID: operation.turnID,
    toolCallID: operation.toolCallID,
    requestJSON: toJSONText(operation.request, `${what}: request`, context.location),
    status: operation.status,
    resultJSON: toResultJSON(operation.status, operation.result, what, context),
    createdAt: context.now,
    updatedAt: context.now,
  });
}

export async function setClientOperationStatusRow(
  tables: Tables,
  operationID: string,
  status: ClientOperationStatus,
  result: unknown,
  context: WriteContext,
): Promise<void> {
  const what = `client operation ${operationID}`;
  checkStatus(OPERATION_RANK, status, what, context);
  const resultJSON = toResultJSON(status, result, what, context);
  const existing = await tables.readClientOperation(operationID);
  if (existing === null) throw notFound(what, context);
  checkOwner(existing.conversationID, what, context);
  const next = toNextStatus(OPERATION_RANK, existing.status, status);
  if (next === existing.status) return;
  await tables.updateClientOperation(
    operationID,
    next,
    next === "completed" ? resultJSON : null,
    context.now,
  );
}

export function toLLMCallRecord(row: LLMCallRow): LLMCallRecord {
  return { ...row };
}

export function toClientOperationRecord(row: ClientOperationRow): ClientOperationRecord {
  return {
    operationID: row.operationID,
    conversationID: row.conversationID,
    turnID: row.turnID,
    toolCallID: row.toolCallID,
    request: fromJSONText(row.requestJSON),
    status: row.status,
    result: row.resultJSON === null ? null : fromJSONText(row.resultJSON),
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

function toResultJSON(
  status: ClientOperationStatus,
  result: unknown,
  what: string,
  context: WriteContext,
): string | null {
  if (status === "completed") {
    if (result === undefined)
      throw invalid(`${what}: a completed operation needs a result`, context);
    return toJSONText(result, `${what}: result`, context.location);
  }
  if (result !== undefined)
    throw invalid(`${what}: only a completed operation has a result`, context);
  return null;
}

function checkLLMCall(call: LLMCallInput, context: WriteContext): void {
  const what = `model call ${call.callID}`;
  for (const key of ["callID", "conversationID", "turnID", "model", "messagesHash"] as const) {
    checkText(call[key], `${what}: ${key}`, context);
  }
  if (typeof call.request !== "string") throw invalid(`${what}: request must be a string`, context);
  if (call.requestHash !== undefined && !/^[0-9a-f]{64}$/.test(call.requestHash)) {
    throw invalid(`${what}: requestHash must be a sha256 in lowercase hex`, context);
  }
  if (typeof call.lastMessageHash !== "string") {
    throw invalid(`${what}: lastMessageHash must be a string`, context);
  }
  if (!Number.isSafeInteger(call.messageCount) || call.messageCount < 0) {
    throw invalid(`${what}: messageCount must be a non-negative integer`, context);
  }
  checkStatus(LLM_CALL_RANK, call.status, what, context);
  checkOwner(call.conversationID, what, context);
}

function checkText(value: unknown, what: string, context: WriteContext): void {
  if (typeof value !== "string" || value === "") {
    throw invalid(`${what} must be a non-empty string`, context);
  }
}

function checkStatus<S extends string>(
  ranks: Readonly<Record<S, number>>,
  status: S,
  what: string,
  context: WriteContext,
): void {
  if (!Object.hasOwn(ranks, status)) throw invalid(`${what}: unknown status ${status}`, context);
}

function checkOwner(conversationID: string, what: string, context: WriteContext): void {
  if (context.conversationID !== null && context.conversationID !== conversationID) {
    throw invalid(
      `${what} belongs to conversation ${conversationID}, not ${context.conversationID}`,
      context,
    );
  }
}

async function requireConversation(
  tables: Tables,
  conversationID: string,
  what: string,
  context: WriteContext,
): Promise<void> {
  if ((await tables.readHead(conversationID)) === null) {
    throw notFound(`conversation ${conversationID} (for ${what})`, context);
  }
}

function invalid(detail: string, context: WriteContext): StoreError {
  return new StoreError(
    "invalid_argument",
    context.location,
    `${detail} (${context.location}); nothing was written.`,
  );
}

function notFound(what: string, context: WriteContext): StoreError {
  return new StoreError(
    "not_found",
    context.location,
    `No ${what} in ${context.location}; nothing was written. Save it before changing it.`,
  );
}
