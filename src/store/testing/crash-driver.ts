/**
 * Test-only child process for crash-recovery.test.ts: a minimal runner that drives the real loop
 * through the scripted conversation (model → tool call → result → model → final) on the SQLite
 * store, writing in the order of docs/design.md §7 (the call is saved before its stream opens, the
 * operation before it is sent).
 *
 * Usage: `crash-driver.ts <database> <log> <kill point>`. Every store write is surrounded by two
 * numbered checkpoints, and each model stream has one in its middle; at checkpoint number
 * `<kill point>` the process SIGKILLs itself (0: never). Started again on the same database it
 * resumes exactly as a restarted server would: it reloads the state, retries an unfinished model
 * call with its saved request, and re-runs an unfinished operation through `runOnce`.
 *
 * The "provider request body" it saves embeds the process id, so a request rebuilt after a crash
 * would differ from the saved one: the log shows which bytes each stream was opened with.
 */

import { createHash } from "node:crypto";
import { appendFileSync } from "node:fs";
import { toCanonicalJSON } from "../../loop/canonical-json.ts";
import { buildRequest } from "../../loop/request.ts";
import { createConversation } from "../../loop/state.ts";
import { T0, toEvents } from "../../loop/testing.ts";
import { transition } from "../../loop/transition.ts";
import type { ConversationState, Message, ToolCall, Transition } from "../../loop/types.ts";
import { openPostgresStore } from "../postgres-store.ts";
import { createOperationRunner } from "../run-once.ts";
import { openSqliteStore } from "../sqlite-store.ts";
import type { LLMCallInput, RecordWrite, Store } from "../types.ts";
import {
  toLLMInputID,
  toScriptedResponse,
  toScriptedToolResult,
  toStartInput,
  toToolResultInputID,
} from "./scripted-conversation.ts";
import { listUnfinished } from "./unfinished.ts";

export const CRASH_CONVERSATION = "conv-crash";

/** One line of the driver's log (JSON lines, appended synchronously so a SIGKILL keeps them). */
export type DriverLogLine =
  | {
      readonly event: "checkpoint";
      readonly pid: number;
      readonly n: number;
      readonly label: string;
    }
  | {
      readonly event: "open_stream";
      readonly pid: number;
      readonly callID: string;
      readonly requestHash: string;
    }
  | { readonly event: "run_tool"; readonly pid: number; readonly operationID: string }
  | { readonly event: "finished"; readonly pid: number; readonly checkpoints: number };

const [databasePath, logPath, killAtText] = process.argv.slice(2);
if (databasePath === undefined || logPath === undefined || killAtText === undefined) {
  throw new Error("usage: crash-driver.ts <database> <log> <kill point>");
}
const killAt = Number(killAtText);
const logFile = logPath;
let checkpoints = 0;

function log(line: DriverLogLine): void {
  appendFileSync(logFile, `${JSON.stringify(line)}\n`);
}

function checkpoint(label: string): void {
  checkpoints += 1;
  log({ event: "checkpoint", pid: process.pid, n: checkpoints, label });
  if (checkpoints === killAt) {
    process.kill(process.pid, "SIGKILL");
    // SIGKILL cannot be caught; never go on while it is being delivered.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  }
}

/** The store, with a checkpoint before and after every write. */
function withCheckpoints(store: Store): Store {
  const around =
    <A extends unknown[], R>(
      name: string,
      write: (...args: A) => Promise<R>,
      describe: (...args: A) => string,
    ) =>
    async (...args: A): Promise<R> => {
      checkpoint(`before ${name} ${describe(...args)}`);
      const result = await write(...args);
      checkpoint(`after ${name} ${describe(...args)}`);
      return result;
    };
  return {
    ...store,
    commitInput: around("commitInput", store.commitInput, (commit) => commit.inputID),
    saveLLMCall: around(
      "saveLLMCall",
      store.saveLLMCall,
      (call) => `${call.callID} ${call.status}`,
    ),
    setLLMCallStatus: around(
      "setLLMCallStatus",
      store.setLLMCallStatus,
      (id, status) => `${id} ${status}`,
    ),
    saveClientOperation: around(
      "saveClientOperation",
      store.saveClientOperation,
      (operation) => `${operation.operationID} ${operation.status}`,
    ),
    setClientOperationStatus: around(
      "setClientOperationStatus",
      store.setClientOperationStatus,
      (id, status) => `${id} ${status}`,
    ),
  };
}

/** The model call a `call_llm` state waits for, with a provider body built by this process. */
function toPlannedCall(state: ConversationState): LLMCallInput {
  const call = state.call;
  if (call === null || state.settings === null) throw new Error("no model call to plan");
  const request = buildRequest(state);
  return {
    callID: call.callID,
    conversationID: state.conversationID,
    turnID: state.turnID,
    model: state.settings.model,
    request: toCanonicalJSON({
      model: state.settings.model,
      system: request.systemPrompt,
      messages: request.messages,
      tools: request.tools,
      stream: true,
      metadata: { builtBy: process.pid },
    }),
    messagesHash: state.hashes.chainHash,
    messageCount: state.messages.length,
    lastMessageHash: state.hashes.lastMessageHash,
    status: "planned",
  };
}

async function main(): Promise<void> {
  // A PostgreSQL URL, or a SQLite file.
  const opened = /^postgres(ql)?:\/\//.test(databasePath as string)
    ? await openPostgresStore({ url: databasePath as string, poolSize: 2 })
    : // As the server's store: killed with its WAL checkpoint worker running.
      openSqliteStore({ path: databasePath as string, backgroundCheckpoints: true });
  const store = withCheckpoints(opened);
  const runner = createOperationRunner(store);
  const loaded = await store.load(CRASH_CONVERSATION);
  let state: ConversationState = loaded?.state ?? createConversation(CRASH_CONVERSATION).committed;
  let version = loaded?.version ?? 0;

  const commit = async (
    inputID: string,
    step: Transition,
    records: RecordWrite[],
  ): Promise<void> => {
    if (step.rejected !== null)
      throw new Error(`input ${inputID} rejected: ${step.rejected.detail}`);
    const result = await store.commitInput({
      inputID,
      expectedVersion: version,
      state: step.state.committed,
      result: step.command,
      records,
    });
    if (result.type !== "committed") throw new Error(`commit ${inputID}: ${result.type}`);
    version = result.commit.version;
    state = step.state.committed;
  };

  while (state.status !== "final") {
    switch (state.status) {
      case "ready": {
        const input = toStartInput(CRASH_CONVERSATION);
        await commit(input.inputID, transition({ committed: state, pending: null }, input), []);
        break;
      }
      case "waiting_llm": {
        const callID = state.call?.callID ?? "";
        // Recovery: an unfinished call is retried with its saved request; otherwise save it now.
        const { llmCalls } = await listUnfinished(opened, CRASH_CONVERSATION);
        const saved =
          llmCalls.find((call) => call.callID === callID) ??
          (await store.saveLLMCall(toPlannedCall(state)));
        const streaming = await store.setLLMCallStatus(callID, "streaming");
        log({
          event: "open_stream",
          pid: process.pid,
          callID,
          requestHash: createHash("sha256").update(saved.request).digest("hex"),
        });
        if (streaming.requestHash !== saved.requestHash) throw new Error("request changed");
        const events = toEvents(toScriptedResponse(state.call?.step ?? 0));
        let runtime = { committed: state, pending: null } as Transition["state"];
        for (const [index, event] of events.entries()) {
          if (index === Math.floor(events.length / 2)) checkpoint(`mid-stream ${callID}`);
          const step = transition(runtime, { type: "llm_event", callID, event });
          if (step.rejected !== null) throw new Error(`event rejected: ${step.rejected.detail}`);
          if (step.state.committed === runtime.committed) {
            runtime = step.state;
            continue;
          }
          const records: RecordWrite[] = [{ type: "llm_call_status", callID, status: "committed" }];
          if (step.command.type === "call_client") {
            records.push({
              type: "client_operation",
              operation: {
                operationID: step.command.operationID,
                conversationID: CRASH_CONVERSATION,
                turnID: step.state.committed.turnID,
                toolCallID: step.command.toolCall.id,
                request: step.command.toolCall,
                status: "planned",
              },
            });
          }
          await commit(toLLMInputID(callID), step, records);
          break;
        }
        break;
      }
      case "waiting_client": {
        const waiting = state.waiting;
        if (waiting === null) throw new Error("waiting_client without calls");
        const call = waiting.calls[waiting.answered] as ToolCall;
        const operationID = waiting.operationIDs[waiting.answered] as string;
        const record = await runner.runOnce(
          {
            operationID,
            conversationID: CRASH_CONVERSATION,
            turnID: state.turnID,
            toolCallID: call.id,
            request: call,
          },
          async (operation) => {
            log({ event: "run_tool", pid: process.pid, operationID });
            return toScriptedToolResult(operation.request as ToolCall);
          },
        );
        const inputID = toToolResultInputID(operationID);
        const step = transition(
          { committed: state, pending: null },
          {
            type: "tool_result",
            inputID,
            at: T0 + 2,
            message: record.result as Extract<Message, { role: "toolResult" }>,
          },
        );
        // The next call is saved in the same transaction as the result that starts it.
        const records: RecordWrite[] =
          step.command.type === "call_llm"
            ? [{ type: "llm_call", call: toPlannedCall(step.state.committed) }]
            : [];
        await commit(inputID, step, records);
        break;
      }
      default:
        throw new Error(`the scripted conversation cannot be in ${state.status}`);
    }
  }
  await store.close();
  log({ event: "finished", pid: process.pid, checkpoints });
}

await main();
