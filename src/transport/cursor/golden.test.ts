/**
 * Golden bytes: what the dialect reads and writes on the wire, pinned in fixtures/*.hex.
 * Inbound fixtures are decoded (from the fixture file, not from freshly built bytes) and the
 * resulting events and loop inputs are checked for the ids, seqnos, arguments and oneof branches
 * they must carry; outbound fixtures hold whole turns as the RunSSE stream would carry them
 * (Connect envelopes), produced by the real loop and the dialect together.
 *
 * Regenerate deliberately with `UPDATE_GOLDEN=1 node --test src/transport/cursor/golden.test.ts`.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { errorToJson } from "@connectrpc/connect/protocol-connect";
import type { AssistantMessage, JsonObject } from "../../llm/types.ts";
import { createConversation, transition } from "../../loop/index.ts";
import { assistantMessage, text, thinking, toEvents, toolCall } from "../../loop/testing.ts";
import type { Command, Input, RuntimeState } from "../../loop/types.ts";
import { toForceBackground } from "./background-shell.ts";
import { fromBidiAppendBody, toBidiAppendBody } from "./bidi-append.ts";
import { toCheckpointSource } from "./checkpoint.ts";
import { toBlobCheckpoint, toCheckpointUpdate, toSetBlobMessage } from "./checkpoint-blobs.ts";
import { type ClientEvent, fromClientMessage } from "./client-message.ts";
import {
  type AgentClientMessage,
  AgentClientMessageSchema,
  type AgentServerMessage,
  AgentServerMessageSchema,
} from "./gen/agent/v1/agent_stream_pb.js";
import { AgentMode, AgentSkillSchema } from "./gen/agent/v1/common_pb.js";
import { ConversationActionSchema } from "./gen/agent/v1/conversation_action_pb.js";
import {
  ConversationStepSchema,
  ConversationTurnStructureSchema,
} from "./gen/agent/v1/conversation_state_pb.js";
import {
  InteractionUpdateSchema,
  TextDeltaUpdateSchema,
} from "./gen/agent/v1/interaction_update_pb.js";
import {
  GetDefaultModelForCliResponseSchema,
  GetUsableModelsResponseSchema,
} from "./gen/agent/v1/models_pb.js";
import {
  CreateTranscriptOverviewRequestSchema,
  CreateTranscriptOverviewResponseSchema,
  NameAgentRequestSchema,
  NameAgentResponseSchema,
} from "./gen/agent/v1/name_agent_pb.js";
import {
  CustomSubagentSchema,
  PermissionsAutoRunInstructionsSchema,
} from "./gen/agent/v1/request_context_pb.js";
import {
  SelectedBrowserSchema,
  SelectedDocumentationSchema,
  SelectedDocumentSchema,
  SelectedGitPRDiffSelectionSchema,
  SelectedPastChatSchema,
  SelectedPullRequestSchema,
  SelectedSubagentSchema,
} from "./gen/agent/v1/user_message_pb.js";
import { AvailableModelsResponseSchema } from "./gen/aiserver/v1/available_models_pb.js";
import {
  HealthCheckResponseSchema,
  WriteGitBranchNameRequestSchema,
  WriteGitBranchNameResponseSchema,
  WriteGitCommitMessageRequestSchema,
  WriteGitCommitMessageResponseSchema,
} from "./gen/aiserver/v1/git_text_pb.js";
import { GetServerConfigResponseSchema } from "./gen/aiserver/v1/server_config_pb.js";
import { ServerTimeResponseSchema } from "./gen/aiserver/v1/server_time_pb.js";
import {
  toBranchNameResponse,
  toCommitMessageResponse,
  toNameAgentResponse,
  toOverviewResponse,
} from "./helper-tasks.ts";
import { fromResponseEvent } from "./response-events.ts";
import { fromRunRequest } from "./run-request.ts";
import { toServerMessageBytes } from "./server-message.ts";
import {
  toAvailableModelsResponse,
  toDefaultModelForCliResponse,
  toHealthCheckResponse,
  toServerConfigResponse,
  toServerTimeResponse,
  toUsableModelsResponse,
} from "./startup-rpcs.ts";
import { toTaskProgressEvents } from "./task-progress.ts";
import {
  assertGolden,
  CONVERSATION_ID,
  callClient,
  cliRunRequest,
  execOf,
  execReply,
  ideRunRequest,
  queryReply,
  REQUEST_ID,
  readGolden,
  runTool,
  T0,
  turnState,
} from "./testing.ts";
import { continueToolCall, finishServerWork, startToolCall } from "./tool-session.ts";
import { toTurnEnd } from "./turn-end.ts";
import type { TurnState } from "./turn-state.ts";
import { toNotSupportedError } from "./wire-error.ts";

// ---------------------------------------------------------------------------------------------
// Inbound
// ---------------------------------------------------------------------------------------------

function client(
  message: MessageInitShape<typeof AgentClientMessageSchema>["message"],
): AgentClientMessage {
  return create(AgentClientMessageSchema, { message });
}

/** Decodes the fixture `name` (a BidiAppend body) and checks it re-encodes to the same payload. */
function decodeAppend(name: string, options: { gzip?: boolean } = {}) {
  const fixture = readGolden(name);
  const body = options.gzip ? gzipSync(fixture) : fixture;
  const decoded = fromBidiAppendBody({
    body,
    ...(options.gzip ? { contentEncoding: "gzip" } : {}),
  });
  assert.ok(decoded.ok, decoded.ok ? "" : decoded.error.message);
  return decoded.value;
}

test("golden: the IDE's first append (run request), hex and data_binary forms", () => {
  const message = client({ case: "runRequest", value: ideRunRequest() });
  assertGolden(
    "in-bidi-ide-run-hex",
    toBidiAppendBody({ requestID: REQUEST_ID, appendSeqno: 0, message }, { form: "hex" }),
  );
  assertGolden(
    "in-bidi-ide-run-binary",
    toBidiAppendBody({ requestID: REQUEST_ID, appendSeqno: 0, message }, { form: "binary" }),
  );
  const hex = decodeAppend("in-bidi-ide-run-hex");
  const binary = decodeAppend("in-bidi-ide-run-binary");
  assert.deepEqual(
    toBinary(AgentClientMessageSchema, hex.message),
    toBinary(AgentClientMessageSchema, binary.message),
  );
  assert.equal(hex.requestID, REQUEST_ID);
  assert.equal(hex.appendSeqno, 0);
  const event = fromClientMessage(hex.message);
  assert.ok(event.type === "run" && event.action === "user_message");
  assert.equal(event.request.harness, "cursor-ide");
  const turn = fromRunRequest(event.request, event.action, {
    at: T0,
    inputID: `${hex.requestID}:${hex.appendSeqno}`,
    requestID: hex.requestID,
    contextWindow: 200_000,
  });
  assert.ok(turn.ok);
  assert.equal(turn.value.input.inputID, `${REQUEST_ID}:0`);
  assert.equal(turn.value.input.settings.model, "claude-sonnet");
  assert.equal(turn.value.input.userMessage.content, "Fix the failing test in src/math.ts");
  assert.equal(turn.value.messageID, "msg-1");
});

test("golden: a run request with attached docs, past chat, PR, browser, document, skill and subagent", () => {
  const request = ideRunRequest();
  const action = request.action?.action;
  assert.ok(action?.case === "userMessageAction");
  const userMessage = action.value.userMessage;
  assert.ok(
    userMessage?.selectedContext !== undefined && action.value.requestContext !== undefined,
  );
  Object.assign(userMessage.selectedContext, {
    documentations: [create(SelectedDocumentationSchema, { docId: "d1", name: "React" })],
    pastChats: [create(SelectedPastChatSchema, { agentId: "chat-7", name: "Login refactor" })],
    selectedPullRequests: [
      create(SelectedPullRequestSchema, {
        number: 42,
        url: "https://git.example/pr/42",
        title: "Dark mode",
      }),
    ],
    gitPrDiffSelections: [
      create(SelectedGitPRDiffSelectionSchema, {
        prUrl: "https://git.example/pr/42",
        filePath: "src/theme.ts",
        startLine: 3,
        endLine: 9,
        diffContent: "+dark",
      }),
    ],
    selectedBrowsers: [
      create(SelectedBrowserSchema, { browserId: "b1", url: "http://localhost:3000/" }),
    ],
    selectedDocuments: [
      create(SelectedDocumentSchema, {
        uuid: "u1",
        filename: "notes.md",
        mimeType: "text/markdown",
        dataOrBlobId: { case: "data", value: new TextEncoder().encode("ship it") },
      }),
    ],
    selectedSkills: [create(AgentSkillSchema, { fullPath: "/s/SKILL.md", content: "Tag first." })],
    selectedSubagents: [create(SelectedSubagentSchema, { name: "reviewer" })],
  });
  Object.assign(action.value.requestContext, {
    agentSkills: [create(AgentSkillSchema, { fullPath: "/s/SKILL.md", description: "Releases" })],
    customSubagents: [create(CustomSubagentSchema, { name: "reviewer", prompt: "Bugs first." })],
    userPermissionsAutoRun: create(PermissionsAutoRunInstructionsSchema, {
      allowInstructions: ["git status"],
    }),
  });
  const message = client({ case: "runRequest", value: request });
  assertGolden(
    "in-bidi-ide-run-attached",
    toBidiAppendBody({ requestID: REQUEST_ID, appendSeqno: 0, message }, { form: "binary" }),
  );
  const event = fromClientMessage(decodeAppend("in-bidi-ide-run-attached").message);
  assert.ok(event.type === "run");
  const turn = fromRunRequest(event.request, event.action, {
    at: T0,
    inputID: `${REQUEST_ID}:0`,
    requestID: REQUEST_ID,
    contextWindow: 200_000,
  });
  assert.ok(turn.ok);
  const keys = turn.value.input.context.map((item) => item.key);
  for (const key of [
    "skills",
    "custom-subagents",
    "auto-run-rules",
    "docs:d1",
    "past-chat:chat-7",
    "pr:https://git.example/pr/42",
    "pr-diff:https://git.example/pr/42:src/theme.ts:3-9",
    "browser:b1",
    "document:u1",
    "skill:/s/SKILL.md",
    "subagent:reviewer",
  ]) {
    assert.ok(keys.includes(key), `${key} in ${keys.join(", ")}`);
  }
  assert.deepEqual(turn.value.unusedContext, []);
});

test("golden: the CLI's run request, plain and gzip-compressed", () => {
  const message = client({ case: "runRequest", value: cliRunRequest() });
  assertGolden(
    "in-bidi-cli-run",
    toBidiAppendBody({ requestID: "cli-req-1", appendSeqno: 0, message }, { form: "binary" }),
  );
  for (const gzip of [false, true]) {
    const append = decodeAppend("in-bidi-cli-run", { gzip });
    assert.equal(append.requestID, "cli-req-1");
    const event = fromClientMessage(append.message);
    assert.ok(event.type === "run");
    assert.equal(event.request.harness, undefined);
    assert.equal(event.request.modelDetails?.modelId, "gpt-5");
  }
});

/** Client messages after the run request, each as a hex BidiAppend with its seqno. */
const CLIENT_MESSAGES: [string, number, AgentClientMessage, (event: ClientEvent) => void][] = [
  [
    "in-bidi-exec-read-result",
    1,
    client({
      case: "execClientMessage",
      value: {
        id: 1,
        execId: "exec-0123456789abcdef01234567",
        message: {
          case: "readResult",
          value: {
            result: {
              case: "success",
              value: { path: "/w/a.ts", output: { case: "content", value: "x\n" }, totalLines: 1 },
            },
          },
        },
      },
    }),
    (event) => {
      assert.ok(event.type === "exec_result");
      assert.equal(event.id, 1);
      assert.equal(event.execID, "exec-0123456789abcdef01234567");
      assert.equal(event.result.case, "readResult");
    },
  ],
  [
    "in-bidi-shell-stdout",
    2,
    client({
      case: "execClientMessage",
      value: {
        id: 2,
        execId: "exec-s",
        message: {
          case: "shellStream",
          value: { event: { case: "stdout", value: { data: "ok\n" } } },
        },
      },
    }),
    (event) => {
      assert.ok(event.type === "exec_result" && event.result.case === "shellStream");
      assert.equal(event.result.value.event.case, "stdout");
    },
  ],
  [
    "in-bidi-shell-exit",
    3,
    client({
      case: "execClientMessage",
      value: {
        id: 2,
        execId: "exec-s",
        message: {
          case: "shellStream",
          value: { event: { case: "exit", value: { code: 1, cwd: "/w" } } },
        },
      },
    }),
    (event) => {
      assert.ok(event.type === "exec_result" && event.result.case === "shellStream");
      assert.ok(event.result.value.event.case === "exit");
      assert.equal(event.result.value.event.value.code, 1);
    },
  ],
  [
    "in-bidi-stream-close",
    4,
    client({
      case: "execClientControlMessage",
      value: { message: { case: "streamClose", value: { id: 2 } } },
    }),
    (event) => assert.deepEqual(event, { type: "exec_stream_close", id: 2 }),
  ],
  [
    "in-bidi-exec-throw",
    5,
    client({
      case: "execClientControlMessage",
      value: { message: { case: "throw", value: { id: 3, error: "EPIPE" } } },
    }),
    (event) => assert.deepEqual(event, { type: "exec_throw", id: 3, error: "EPIPE" }),
  ],
  [
    "in-bidi-ask-answer",
    6,
    client({
      case: "interactionResponse",
      value: {
        id: 4,
        result: {
          case: "askQuestionInteractionResponse",
          value: {
            result: {
              result: {
                case: "success",
                value: { answers: [{ questionId: "q1", selectedOptionIds: ["o1"] }] },
              },
            },
          },
        },
      },
    }),
    (event) => {
      assert.ok(event.type === "interaction_response");
      assert.equal(event.id, 4);
      assert.equal(event.result.case, "askQuestionInteractionResponse");
    },
  ],
  [
    "in-bidi-cancel",
    7,
    client({
      case: "conversationAction",
      value: { action: { case: "cancelAction", value: { reason: "user pressed stop" } } },
    }),
    (event) => assert.deepEqual(event, { type: "cancel", reason: "user pressed stop" }),
  ],
  [
    "in-bidi-heartbeat",
    8,
    client({ case: "clientHeartbeat", value: {} }),
    (event) => assert.deepEqual(event, { type: "heartbeat" }),
  ],
  [
    "in-bidi-prewarm",
    0,
    client({
      case: "prewarmRequest",
      value: { conversationId: "c-1", modelDetails: { modelId: "gpt-5" } },
    }),
    (event) => assert.deepEqual(event, { type: "prewarm", conversationID: "c-1" }),
  ],
  [
    "in-bidi-kv-set-blob-result",
    9,
    client({
      case: "kvClientMessage",
      value: { id: 5, message: { case: "setBlobResult", value: {} } },
    }),
    (event) => {
      assert.ok(event.type === "kv_result");
      assert.equal(event.id, 5);
      assert.equal(event.result.case, "setBlobResult");
    },
  ],
];

for (const [name, seqno, message, check] of CLIENT_MESSAGES) {
  test(`golden: ${name}`, () => {
    assertGolden(
      name,
      toBidiAppendBody({ requestID: REQUEST_ID, appendSeqno: seqno, message }, { form: "hex" }),
    );
    const append = decodeAppend(name);
    assert.equal(append.requestID, REQUEST_ID);
    assert.equal(append.appendSeqno, seqno);
    assert.deepEqual(
      toBinary(AgentClientMessageSchema, append.message),
      toBinary(AgentClientMessageSchema, message),
    );
    check(fromClientMessage(append.message));
  });
}

// ---------------------------------------------------------------------------------------------
// Outbound: whole turns through the real loop and the dialect
// ---------------------------------------------------------------------------------------------

interface Scenario {
  /** The model's responses, one per model call. */
  readonly responses: readonly AssistantMessage[];
  /** The client's replies to the running tool call (built from the state when it is sent). */
  readonly replies: Record<string, ((state: TurnState) => AgentClientMessage)[]>;
  /** Cancel instead of answering the tool named here. */
  readonly cancelAt?: string;
}

interface TurnRun {
  readonly messages: AgentServerMessage[];
  readonly inputs: Input[];
  readonly end: ReturnType<typeof toTurnEnd>;
}

/** Runs one turn as a runner would: loop transitions, dialect codecs, scripted model and client. */
function runTurn(scenario: Scenario): TurnRun {
  let clock = T0;
  const tick = () => {
    clock += 1;
    return clock;
  };
  const started = fromRunRequest(ideRunRequest(), "user_message", {
    at: tick(),
    inputID: `${REQUEST_ID}:0`,
    requestID: REQUEST_ID,
    contextWindow: 200_000,
  });
  assert.ok(started.ok);
  let loop: RuntimeState = createConversation(started.value.state.conversationID);
  let turn = started.value.state;
  const messages: AgentServerMessage[] = [];
  const inputs: Input[] = [];
  const queue: Input[] = [started.value.input];
  let responseIndex = 0;
  let command: Command = { type: "wait_input" };
  let seqno = 0;
  while (queue.length > 0) {
    const input = queue.shift() as Input;
    inputs.push(input);
    const step = transition(loop, input);
    assert.equal(step.rejected, null, `rejected ${input.type}: ${step.rejected?.detail}`);
    loop = step.state;
    const callID = loop.committed.call?.callID ?? "";
    for (const event of step.emit) {
      const out = fromResponseEvent(turn, event, { at: tick(), callID });
      turn = out.state;
      messages.push(...out.messages);
    }
    command = step.command;
    if (command.type === "call_llm") {
      const response = scenario.responses[responseIndex];
      responseIndex += 1;
      assert.ok(response, "the scenario has a response for every model call");
      queue.push(
        ...toEvents(response, 8).map(
          (event): Input => ({
            type: "llm_event",
            callID: command.type === "call_llm" ? command.callID : "",
            event,
          }),
        ),
      );
    } else if (command.type === "call_client") {
      const name = command.toolCall.name;
      if (scenario.cancelAt === name) {
        const toolStep = startToolCall(turn, command, { at: tick(), inputID: command.operationID });
        turn = toolStep.state;
        messages.push(...toolStep.messages);
        seqno += 1;
        queue.push({
          type: "cancel",
          inputID: `${REQUEST_ID}:${seqno}`,
          at: tick(),
          reason: "user pressed stop",
        });
        continue;
      }
      // A tool that finishes without the client (todo_write) is keyed by its operation id.
      let toolStep = startToolCall(turn, command, { at: tick(), inputID: command.operationID });
      turn = toolStep.state;
      messages.push(...toolStep.messages);
      for (const reply of scenario.replies[name] ?? []) {
        if (toolStep.input !== null) break;
        seqno += 1;
        const event = fromClientMessage(reply(turn));
        toolStep = continueToolCall(turn, event, { at: tick(), inputID: `${REQUEST_ID}:${seqno}` });
        assert.equal(toolStep.ignored, null);
        turn = toolStep.state;
        messages.push(...toolStep.messages);
      }
      assert.ok(toolStep.input !== null, `the scenario finishes ${name}`);
      queue.push(toolStep.input);
    }
  }
  assert.ok(
    command.type === "final" || command.type === "failed" || command.type === "canceled",
    `ended with ${command.type}`,
  );
  const end = toTurnEnd(turn, command, { at: tick() });
  messages.push(...end.messages);
  return { messages, inputs, end };
}

/**
 * The messages as RunSSE envelopes (flag 0, 4-byte big-endian length, payload), each encoded as the
 * server encodes it (`toServerMessageBytes`: its direct writers for deltas and checkpoints, else
 * `toBinary`), so the goldens hold the bytes clients receive.
 */
function toEnvelopes(messages: readonly AgentServerMessage[]): Uint8Array {
  const parts = messages.map((message) => {
    const payload = toServerMessageBytes(message);
    const header = Buffer.alloc(5);
    header.writeUInt32BE(payload.length, 1);
    return Buffer.concat([header, payload]);
  });
  return new Uint8Array(Buffer.concat(parts));
}

function fromEnvelopes(bytes: Uint8Array): AgentServerMessage[] {
  const messages: AgentServerMessage[] = [];
  const buffer = Buffer.from(bytes);
  for (let offset = 0; offset < buffer.length; ) {
    const length = buffer.readUInt32BE(offset + 1);
    messages.push(
      fromBinary(AgentServerMessageSchema, buffer.subarray(offset + 5, offset + 5 + length)),
    );
    offset += 5 + length;
  }
  return messages;
}

function kinds(messages: readonly AgentServerMessage[]): string[] {
  return messages.map((message) => {
    const branch = message.message;
    if (branch.case === "interactionUpdate") return branch.value.message.case ?? "?";
    if (branch.case === "execServerMessage") return `exec:${branch.value.message.case}`;
    if (branch.case === "interactionQuery") return `query:${branch.value.query.case}`;
    if (branch.case === "execServerControlMessage") return `control:${branch.value.message.case}`;
    return branch.case ?? "?";
  });
}

function squash(list: string[]): string[] {
  return list.filter((kind, index) => kind !== list[index - 1]);
}

const READ_REPLY = (state: TurnState) => {
  const awaiting = state.open.at(-1)?.awaiting;
  assert.ok(awaiting?.type === "exec");
  return client({
    case: "execClientMessage",
    value: {
      id: awaiting.id,
      execId: awaiting.execID,
      message: {
        case: "readResult",
        value: {
          result: {
            case: "success",
            value: { output: { case: "content", value: "export const add = (a, b) => a - b;\n" } },
          },
        },
      },
    },
  });
};

test("golden: a turn with thinking, a read tool call and a final answer", () => {
  const run = runTurn({
    responses: [
      assistantMessage([
        thinking("Look at add()."),
        text("Reading the file."),
        toolCall("toolu_01", "read_file", { path: "src/math.ts" }),
      ]),
      assistantMessage([text("`add` subtracts; change `-` to `+`.")]),
    ],
    replies: { read_file: [READ_REPLY] },
  });
  assertGolden("out-turn-read", toEnvelopes(run.messages));
  const messages = fromEnvelopes(readGolden("out-turn-read"));
  assert.deepEqual(squash(kinds(messages)), [
    "thinkingDelta",
    "thinkingCompleted",
    "textDelta",
    "partialToolCall",
    "tokenDelta",
    "toolCallStarted",
    "conversationCheckpointUpdate",
    "exec:readArgs",
    "toolCallCompleted",
    "conversationCheckpointUpdate",
    "textDelta",
    "tokenDelta",
    "conversationCheckpointUpdate",
    "turnEnded",
  ]);
  assert.equal(run.end.error, null);
  // Ids are preserved end to end: the model's tool-call id on the UI and in the exec args.
  const exec = messages.find((message) => message.message.case === "execServerMessage")?.message;
  assert.ok(exec?.case === "execServerMessage" && exec.value.message.case === "readArgs");
  assert.equal(exec.value.message.value.toolCallId, "toolu_01");
  assert.equal(exec.value.message.value.path, "/home/dev/project/src/math.ts");
  const result = run.inputs.find((input) => input.type === "tool_result");
  assert.ok(result?.type === "tool_result");
  assert.equal(result.message.toolCallId, "toolu_01");
  assert.equal(result.inputID, `${REQUEST_ID}:1`);
  // No protocol id reaches model text.
  const modelText = JSON.stringify(
    run.inputs.map((input) => (input.type === "llm_event" ? null : input)),
  );
  assert.doesNotMatch(modelText, /exec-[0-9a-f]{24}/);
});

/**
 * The messages as a client that confirms every blob write at once receives them from the agent
 * stream (agent-stream/checkpoint-writer.ts): each checkpoint preceded by the `set_blob_args` of
 * its blobs not written before on the stream (kv ids from 1), and in the blob form. The other
 * goldens hold the inline form the dialect builds, which is also what a client that does not
 * confirm gets.
 */
function withBlobCheckpoints(messages: readonly AgentServerMessage[]): AgentServerMessage[] {
  const written = new Set<string>();
  let id = 0;
  return messages.flatMap((message) => {
    const state = toCheckpointSource(message);
    if (state === undefined) return [message];
    const { checkpoint, blobs } = toBlobCheckpoint(state);
    const writes = blobs.filter((blob) => !written.has(blob.key));
    for (const blob of writes) written.add(blob.key);
    return [...writes.map((blob) => toSetBlobMessage(++id, blob)), toCheckpointUpdate(checkpoint)];
  });
}

test("golden: the same turn with blob-backed checkpoints", () => {
  const run = runTurn({
    responses: [
      assistantMessage([
        thinking("Look at add()."),
        text("Reading the file."),
        toolCall("toolu_01", "read_file", { path: "src/math.ts" }),
      ]),
      assistantMessage([text("`add` subtracts; change `-` to `+`.")]),
    ],
    replies: { read_file: [READ_REPLY] },
  });
  assertGolden("out-turn-read-blobs", toEnvelopes(withBlobCheckpoints(run.messages)));
  const messages = fromEnvelopes(readGolden("out-turn-read-blobs"));
  assert.deepEqual(squash(kinds(messages)), [
    "thinkingDelta",
    "thinkingCompleted",
    "textDelta",
    "partialToolCall",
    "tokenDelta",
    "toolCallStarted",
    "kvServerMessage",
    "conversationCheckpointUpdate",
    "exec:readArgs",
    "toolCallCompleted",
    "kvServerMessage",
    "conversationCheckpointUpdate",
    "textDelta",
    "tokenDelta",
    "kvServerMessage",
    "conversationCheckpointUpdate",
    "turnEnded",
  ]);
  // Every turn, user message and step id resolves among the blobs written before it.
  const store = new Map<string, Uint8Array>();
  for (const message of messages) {
    const branch = message.message;
    if (branch.case === "kvServerMessage" && branch.value.message.case === "setBlobArgs") {
      const { blobId, blobData } = branch.value.message.value;
      assert.equal(createHash("sha256").update(blobData).digest("hex"), hex(blobId));
      store.set(hex(blobId), blobData);
    } else if (branch.case === "conversationCheckpointUpdate") {
      assert.equal(branch.value.turns.length, 1);
      const turn = store.get(hex(branch.value.turns[0]));
      assert.ok(turn !== undefined, "the turn blob was written first");
      const structure = fromBinary(ConversationTurnStructureSchema, turn).turn;
      assert.ok(structure.case === "agentConversationTurn");
      assert.equal(structure.value.requestId, REQUEST_ID);
      for (const id of [structure.value.userMessage, ...structure.value.steps]) {
        assert.ok(store.has(hex(id)), "user message and steps were written first");
      }
    }
  }
});

function hex(bytes: Uint8Array | undefined): string {
  return Buffer.from(bytes ?? []).toString("hex");
}

test("golden: a streamed shell call shows live output", () => {
  const reply =
    (event: { case: "stdout" | "stderr"; data: string } | { case: "exit"; code: number }) =>
    (state: TurnState) => {
      const awaiting = state.open.at(-1)?.awaiting;
      assert.ok(awaiting?.type === "exec");
      return client({
        case: "execClientMessage",
        value: {
          id: awaiting.id,
          execId: awaiting.execID,
          message: {
            case: "shellStream",
            value: {
              event:
                event.case === "exit"
                  ? { case: "exit", value: { code: event.code, cwd: "/home/dev/project" } }
                  : { case: event.case, value: { data: event.data } },
            },
          },
        },
      });
    };
  const run = runTurn({
    responses: [
      assistantMessage([toolCall("toolu_02", "shell", { command: "npm test" })]),
      assistantMessage([text("One test fails.")]),
    ],
    replies: {
      shell: [
        reply({ case: "stdout", data: "> test\n" }),
        reply({ case: "stderr", data: "FAIL add\n" }),
        reply({ case: "exit", code: 1 }),
      ],
    },
  });
  assertGolden("out-turn-shell", toEnvelopes(run.messages));
  const messages = fromEnvelopes(readGolden("out-turn-shell"));
  assert.deepEqual(squash(kinds(messages)).slice(0, 7), [
    "partialToolCall",
    "tokenDelta",
    "toolCallStarted",
    "conversationCheckpointUpdate",
    "exec:shellStreamArgs",
    "shellOutputDelta",
    "toolCallCompleted",
  ]);
  const result = run.inputs.find((input) => input.type === "tool_result");
  assert.ok(result?.type === "tool_result");
  assert.deepEqual(result.message.content, [
    { type: "text", text: "Exit code: 1\nstdout:\n> test\nstderr:\nFAIL add" },
  ]);
});

test("golden: an edit (read, then write) and an ask_question interaction", () => {
  const write = (state: TurnState) => {
    const awaiting = state.open.at(-1)?.awaiting;
    assert.ok(awaiting?.type === "exec");
    return client({
      case: "execClientMessage",
      value: {
        id: awaiting.id,
        execId: awaiting.execID,
        message: { case: "writeResult", value: { result: { case: "success", value: {} } } },
      },
    });
  };
  const answer = (state: TurnState) => {
    const awaiting = state.open.at(-1)?.awaiting;
    assert.ok(awaiting?.type === "query");
    return client({
      case: "interactionResponse",
      value: {
        id: awaiting.id,
        result: {
          case: "askQuestionInteractionResponse",
          value: {
            result: {
              result: {
                case: "success",
                value: { answers: [{ questionId: "q1", selectedOptionIds: ["o1"] }] },
              },
            },
          },
        },
      },
    });
  };
  const run = runTurn({
    responses: [
      assistantMessage([
        toolCall("toolu_03", "ask_question", {
          questions: [{ prompt: "Fix it?", options: [{ label: "Yes" }] }],
        }),
      ]),
      assistantMessage([
        toolCall("toolu_04", "edit_file", {
          path: "src/math.ts",
          old_string: "a - b",
          new_string: "a + b",
        }),
      ]),
      assistantMessage([text("Fixed.")]),
    ],
    replies: { ask_question: [answer], edit_file: [READ_REPLY, write] },
  });
  assertGolden("out-turn-edit-ask", toEnvelopes(run.messages));
  const messages = fromEnvelopes(readGolden("out-turn-edit-ask"));
  const requests = kinds(messages).filter(
    (kind) => kind.startsWith("exec:") || kind.startsWith("query:"),
  );
  assert.deepEqual(requests, [
    "query:askQuestionInteractionQuery",
    "exec:readArgs",
    "exec:writeArgs",
  ]);
  const results = run.inputs.flatMap((input) =>
    input.type === "tool_result" ? [input.message.content] : [],
  );
  assert.deepEqual(results, [
    [{ type: "text", text: "Fix it?\n→ Yes" }],
    [
      {
        type: "text",
        text: "Edited /home/dev/project/src/math.ts: replaced 1 occurrence (+1 -1 lines).",
      },
    ],
  ]);
});

test("golden: a canceled turn (exec abort, canceled end-stream)", () => {
  const run = runTurn({
    responses: [assistantMessage([toolCall("toolu_05", "read_file", { path: "big.log" })])],
    replies: {},
    cancelAt: "read_file",
  });
  assertGolden("out-turn-canceled", toEnvelopes(run.messages));
  const messages = fromEnvelopes(readGolden("out-turn-canceled"));
  assert.deepEqual(kinds(messages).slice(-4), [
    "control:abort",
    "toolCallCompleted",
    "conversationCheckpointUpdate",
    "turnEnded",
  ]);
  assertGolden(
    "out-end-canceled",
    new TextEncoder().encode(
      JSON.stringify(errorToJson(run.end.error ?? assert.fail(), undefined)),
    ),
  );
  assert.equal(
    JSON.parse(new TextDecoder().decode(readGolden("out-end-canceled"))).code,
    "canceled",
  );
});

test("golden: a failed model call (provider error → Connect error with ErrorDetails)", () => {
  const failed = { ...assistantMessage([], "error"), errorMessage: "429 rate limit exceeded" };
  const run = runTurn({ responses: [failed], replies: {} });
  assertGolden("out-turn-failed", toEnvelopes(run.messages));
  assert.deepEqual(kinds(fromEnvelopes(readGolden("out-turn-failed"))), [
    "conversationCheckpointUpdate",
    "turnEnded",
  ]);
  const json = errorToJson(run.end.error ?? assert.fail(), undefined);
  assertGolden("out-end-failed", new TextEncoder().encode(JSON.stringify(json)));
  const stored = JSON.parse(new TextDecoder().decode(readGolden("out-end-failed")));
  assert.equal(stored.code, "unavailable");
  assert.equal(stored.details[0].type, "aiserver.v1.ErrorDetails");
});

// ---------------------------------------------------------------------------------------------
// Start-up RPCs
// ---------------------------------------------------------------------------------------------

test("golden: start-up RPC responses", () => {
  const models = [
    {
      id: "claude-sonnet",
      displayName: "Claude Sonnet",
      contextWindow: 200_000,
      supportsThinking: true,
      supportsImages: true,
      supportsMaxMode: false,
      maxModeContextWindow: 200_000,
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
  const [first] = models;
  assert.ok(first);
  const cases: [string, Uint8Array, (bytes: Uint8Array) => void][] = [
    [
      "rpc-get-server-config",
      toBinary(GetServerConfigResponseSchema, toServerConfigResponse()),
      (bytes) => assert.equal(fromBinary(GetServerConfigResponseSchema, bytes).http2Config, 1),
    ],
    [
      "rpc-available-models",
      toBinary(AvailableModelsResponseSchema, toAvailableModelsResponse(models)),
      (bytes) => assert.equal(fromBinary(AvailableModelsResponseSchema, bytes).models.length, 2),
    ],
    [
      "rpc-get-usable-models",
      toBinary(GetUsableModelsResponseSchema, toUsableModelsResponse(models)),
      (bytes) =>
        assert.equal(fromBinary(GetUsableModelsResponseSchema, bytes).models[1]?.modelId, "gpt-5"),
    ],
    [
      "rpc-get-default-model-for-cli",
      toBinary(GetDefaultModelForCliResponseSchema, toDefaultModelForCliResponse(first)),
      (bytes) =>
        assert.equal(
          fromBinary(GetDefaultModelForCliResponseSchema, bytes).model?.modelId,
          "claude-sonnet",
        ),
    ],
    [
      "rpc-server-time",
      toBinary(ServerTimeResponseSchema, toServerTimeResponse(T0, T0 + 1)),
      (bytes) =>
        assert.equal(fromBinary(ServerTimeResponseSchema, bytes).transmitTimestamp, T0 + 1),
    ],
  ];
  for (const [name, bytes, check] of cases) {
    assertGolden(name, bytes);
    check(readGolden(name));
  }
});

test("golden: the indexing keys, health check, chat title, commit message and branch name", () => {
  const keys = { user: "dXNlci1rZXktMzItYnl0ZXMtZm9yLXRoZS1nb2xkZW4", team: "dGVhbS1rZXk" };
  const cases: [string, Uint8Array, (bytes: Uint8Array) => void][] = [
    [
      "rpc-get-server-config-keys",
      toBinary(
        GetServerConfigResponseSchema,
        toServerConfigResponse({ http2: false, pathEncryptionKeys: keys }),
      ),
      (bytes) => {
        const config = fromBinary(GetServerConfigResponseSchema, bytes);
        assert.equal(config.indexingConfig?.defaultUserPathEncryptionKey, keys.user);
        assert.equal(config.indexingConfig?.defaultTeamPathEncryptionKey, keys.team);
        assert.equal(config.http2Config, 1);
      },
    ],
    [
      "rpc-health-check",
      toBinary(HealthCheckResponseSchema, toHealthCheckResponse()),
      (bytes) => assert.equal(fromBinary(HealthCheckResponseSchema, bytes).status, 1),
    ],
    [
      "rpc-name-agent-request",
      toBinary(
        NameAgentRequestSchema,
        create(NameAgentRequestSchema, { userMessage: "Why does the login test fail?" }),
      ),
      (bytes) =>
        assert.equal(
          fromBinary(NameAgentRequestSchema, bytes).userMessage,
          "Why does the login test fail?",
        ),
    ],
    [
      "rpc-name-agent-response",
      toBinary(NameAgentResponseSchema, toNameAgentResponse("x", "Failing login test")),
      (bytes) =>
        assert.equal(fromBinary(NameAgentResponseSchema, bytes).name, "Failing login test"),
    ],
    [
      "rpc-create-transcript-overview-request",
      toBinary(
        CreateTranscriptOverviewRequestSchema,
        create(CreateTranscriptOverviewRequestSchema, {
          formattedConversation: "user: fix add\nassistant: fixed",
        }),
      ),
      (bytes) =>
        assert.equal(
          fromBinary(CreateTranscriptOverviewRequestSchema, bytes).formattedConversation,
          "user: fix add\nassistant: fixed",
        ),
    ],
    [
      "rpc-create-transcript-overview-response",
      toBinary(CreateTranscriptOverviewResponseSchema, toOverviewResponse("Fixed add.")),
      (bytes) =>
        assert.equal(
          fromBinary(CreateTranscriptOverviewResponseSchema, bytes).overview,
          "Fixed add.",
        ),
    ],
    [
      "rpc-write-git-commit-message-request",
      toBinary(
        WriteGitCommitMessageRequestSchema,
        create(WriteGitCommitMessageRequestSchema, {
          diffs: ["diff --git a/a.ts b/a.ts\n-a - b\n+a + b\n"],
          previousCommitMessages: ["Add the adder"],
          explicitContext: { context: "be brief" },
        }),
      ),
      (bytes) => {
        const request = fromBinary(WriteGitCommitMessageRequestSchema, bytes);
        assert.equal(request.diffs.length, 1);
        assert.deepEqual(request.previousCommitMessages, ["Add the adder"]);
        assert.equal(request.explicitContext?.context, "be brief");
      },
    ],
    [
      "rpc-write-git-commit-message-response",
      toBinary(WriteGitCommitMessageResponseSchema, toCommitMessageResponse("Fix add\n")),
      (bytes) =>
        assert.equal(
          fromBinary(WriteGitCommitMessageResponseSchema, bytes).commitMessage,
          "Fix add",
        ),
    ],
    [
      "rpc-write-git-branch-name-request",
      toBinary(
        WriteGitBranchNameRequestSchema,
        create(WriteGitBranchNameRequestSchema, {
          diffs: "+a + b",
          context: "fix the adder",
          conversationId: CONVERSATION_ID,
        }),
      ),
      (bytes) => {
        const request = fromBinary(WriteGitBranchNameRequestSchema, bytes);
        assert.equal(request.diffs, "+a + b");
        assert.equal(request.conversationId, CONVERSATION_ID);
      },
    ],
    [
      "rpc-write-git-branch-name-response",
      toBinary(WriteGitBranchNameResponseSchema, toBranchNameResponse("fix/adder")),
      (bytes) =>
        assert.equal(fromBinary(WriteGitBranchNameResponseSchema, bytes).branchName, "fix/adder"),
    ],
  ];
  for (const [name, bytes, check] of cases) {
    assertGolden(name, bytes);
    check(readGolden(name));
  }
});

// ---------------------------------------------------------------------------------------------
// Protocol completeness (issue 12): new execs, queries, actions and ends
// ---------------------------------------------------------------------------------------------

/** Runs one tool call; pins the server's request and the client's reply as bytes. */
function pinToolCall(
  names: { readonly request: string; readonly reply: string },
  tool: string,
  args: JsonObject,
  reply: (state: TurnState) => AgentClientMessage,
  state: TurnState = turnState(),
) {
  let sent: AgentClientMessage | undefined;
  const run = runTool(
    tool,
    args,
    [
      (current) => {
        sent = reply(current);
        return sent;
      },
    ],
    state,
  );
  const [request] = run.requests;
  assert.ok(request !== undefined && sent !== undefined);
  assertGolden(names.request, toServerMessageBytes(request));
  assertGolden(names.reply, toBinary(AgentClientMessageSchema, sent));
  return {
    request: fromBinary(AgentServerMessageSchema, readGolden(names.request)),
    reply: fromClientMessage(fromBinary(AgentClientMessageSchema, readGolden(names.reply))),
    run,
  };
}

test("golden: switch_mode query and the user's approval", () => {
  const { request, reply, run } = pinToolCall(
    { request: "out-query-switch-mode", reply: "in-response-switch-mode" },
    "switch_mode",
    { target_mode: "agent", explanation: "needs an edit" },
    (state) =>
      queryReply(state, {
        case: "switchModeRequestResponse",
        value: { result: { case: "approved", value: {} } },
      }),
    turnState({ mode: "ask", agentMode: AgentMode.ASK }),
  );
  assert.ok(request.message.case === "interactionQuery");
  const query = request.message.value.query;
  assert.ok(query.case === "switchModeRequestQuery");
  assert.equal(query.value.args?.targetModeId, "agent");
  assert.equal(reply.type, "interaction_response");
  assert.equal(run.state.mode, "agent");
});

test("golden: background shell spawn, stdin, and move to background", () => {
  const state = turnState({ terminalsFolder: "/home/dev/.cursor/terminals" });
  const spawn = pinToolCall(
    { request: "out-exec-background-shell-spawn", reply: "in-exec-background-shell-spawn-result" },
    "shell",
    { command: "npm run dev", run_in_background: true },
    (current) =>
      execReply(current, {
        case: "backgroundShellSpawnResult",
        value: {
          result: { case: "success", value: { shellId: 3, pid: 4100, command: "npm run dev" } },
        },
      }),
    state,
  );
  assert.equal(execOf(spawn.request).case, "backgroundShellSpawnArgs");
  assert.ok(spawn.reply.type === "exec_result");
  assert.equal(spawn.reply.result.case, "backgroundShellSpawnResult");

  const stdin = pinToolCall(
    { request: "out-exec-write-shell-stdin", reply: "in-exec-write-shell-stdin-result" },
    "write_shell_stdin",
    { shell_id: 3, chars: "q" },
    (current) =>
      execReply(current, {
        case: "writeShellStdinResult",
        value: { result: { case: "success", value: { shellId: 3 } } },
      }),
    state,
  );
  const stdinArgs = execOf(stdin.request);
  assert.ok(stdinArgs.case === "writeShellStdinArgs");
  assert.equal(stdinArgs.value.shellId, 3);

  const running = startToolCall(state, callClient("shell", { command: "npm start" }), {
    at: T0 + 1,
    inputID: "in-0",
  });
  const action = create(AgentClientMessageSchema, {
    message: {
      case: "conversationAction",
      value: { action: { case: "backgroundShellAction", value: { toolCallId: "toolu_01" } } },
    },
  });
  assertGolden("in-action-background-shell", toBinary(AgentClientMessageSchema, action));
  const event = fromClientMessage(
    fromBinary(AgentClientMessageSchema, readGolden("in-action-background-shell")),
  );
  assert.ok(event.type === "background_shell");
  const forced = toForceBackground(running.state, event.toolCallID);
  assert.ok(forced.type === "sent");
  const [force] = forced.messages;
  assert.ok(force !== undefined);
  assertGolden("out-exec-force-background-shell", toServerMessageBytes(force));
  const forceArgs = execOf(
    fromBinary(AgentServerMessageSchema, readGolden("out-exec-force-background-shell")),
  );
  assert.ok(forceArgs.case === "forceBackgroundShellArgs");
  assert.equal(forceArgs.value.toolCallId, "toolu_01");
});

test("golden: MCP resources list and read, MCP state", () => {
  const list = pinToolCall(
    { request: "out-exec-list-mcp-resources", reply: "in-exec-list-mcp-resources-result" },
    "list_mcp_resources",
    {},
    (state) =>
      execReply(state, {
        case: "listMcpResourcesExecResult",
        value: {
          result: {
            case: "success",
            value: { resources: [{ uri: "notes://roadmap", server: "notes", name: "Roadmap" }] },
          },
        },
      }),
  );
  assert.equal(execOf(list.request).case, "listMcpResourcesExecArgs");
  const read = pinToolCall(
    { request: "out-exec-read-mcp-resource", reply: "in-exec-read-mcp-resource-result" },
    "read_mcp_resource",
    { server: "notes", uri: "notes://roadmap" },
    (state) =>
      execReply(state, {
        case: "readMcpResourceExecResult",
        value: {
          result: {
            case: "success",
            value: { uri: "notes://roadmap", content: { case: "text", value: "Q3: dark mode" } },
          },
        },
      }),
  );
  const readArgs = execOf(read.request);
  assert.ok(readArgs.case === "readMcpResourceExecArgs");
  assert.deepEqual([readArgs.value.server, readArgs.value.uri], ["notes", "notes://roadmap"]);
  const state = pinToolCall(
    { request: "out-exec-mcp-state", reply: "in-exec-mcp-state-result" },
    "mcp_servers",
    {},
    (current) =>
      execReply(current, {
        case: "mcpStateExecResult",
        value: {
          result: {
            case: "success",
            value: {
              servers: [{ serverName: "notes", serverIdentifier: "notes-1", status: "ok" }],
            },
          },
        },
      }),
  );
  assert.equal(execOf(state.request).case, "mcpStateExecArgs");
  assert.ok(state.reply.type === "exec_result" && state.reply.result.case === "mcpStateExecResult");
});

test("golden: summarize and shell_command run requests; the not-supported end", () => {
  const summarize = cliRunRequest();
  summarize.action = create(ConversationActionSchema, {
    action: { case: "summarizeAction", value: {} },
  });
  assertGolden(
    "in-bidi-run-summarize",
    toBidiAppendBody(
      {
        requestID: "cli-req-2",
        appendSeqno: 0,
        message: client({ case: "runRequest", value: summarize }),
      },
      { form: "binary" },
    ),
  );
  assert.equal(fromClientMessage(decodeAppend("in-bidi-run-summarize").message).type, "summarize");

  const shellCommand = cliRunRequest();
  shellCommand.action = create(ConversationActionSchema, {
    action: {
      case: "shellCommandAction",
      value: { shellCommand: { command: "npm test" }, execId: "user-exec-1" },
    },
  });
  assertGolden(
    "in-bidi-run-shell-command",
    toBidiAppendBody(
      {
        requestID: "cli-req-3",
        appendSeqno: 0,
        message: client({ case: "runRequest", value: shellCommand }),
      },
      { form: "binary" },
    ),
  );
  const event = fromClientMessage(decodeAppend("in-bidi-run-shell-command").message);
  assert.ok(event.type === "shell_command");
  assert.deepEqual([event.command, event.execID], ["npm test", "user-exec-1"]);

  // The wire shape of a refusal, pinned with the text of the former /summarize refusal.
  const json = errorToJson(
    toNotSupportedError(
      "Summarizing a conversation (compaction) is not supported yet. When a chat grows too long " +
        "for the model, start a new chat.",
    ),
    undefined,
  );
  assertGolden("out-end-not-supported", new TextEncoder().encode(JSON.stringify(json)));
  const stored = JSON.parse(new TextDecoder().decode(readGolden("out-end-not-supported")));
  assert.equal(stored.code, "unimplemented");
  assert.equal(stored.details[0].type, "aiserver.v1.ErrorDetails");
});

test("golden: a subagent's task tool call, started and completed; cancel_subagent", () => {
  const state = turnState();
  const args = {
    description: "Find the export",
    prompt: "What does a.ts export?",
    subagent_type: "explore",
  };
  const started = startToolCall(state, callClient("task", args), { at: T0 + 1, inputID: "in-0" });
  assert.equal(started.ignored, null);
  // Nothing goes to the client but the UI: the server runs the subagent itself.
  assert.deepEqual(kinds(started.messages), ["toolCallStarted", "conversationCheckpointUpdate"]);
  assert.ok(started.work?.work.type === "subagent");
  assertGolden("out-task-started", toServerMessageBytes(started.messages[0] as never));
  const done = finishServerWork(
    started.state,
    started.work.id,
    {
      type: "subagent",
      outcome: {
        type: "completed",
        text: "a.ts exports the constant a.",
        agentID: `${CONVERSATION_ID}~task~0123456789abcdef01234567`,
        durationMs: 1_250,
      },
    },
    { at: T0 + 2, inputID: "in-1" },
  );
  const completed = done.messages.find((message) => kinds([message])[0] === "toolCallCompleted");
  assert.ok(completed !== undefined);
  assertGolden("out-task-completed", toServerMessageBytes(completed));

  const pinned = fromBinary(AgentServerMessageSchema, readGolden("out-task-completed"));
  assert.ok(pinned.message.case === "interactionUpdate");
  const update = pinned.message.value.message;
  assert.ok(update.case === "toolCallCompleted");
  const tool = update.value.toolCall?.tool;
  assert.ok(tool?.case === "taskToolCall");
  assert.equal(tool.value.args?.subagentType?.type.case, "explore");
  const result = tool.value.result?.result;
  assert.ok(result?.case === "success");
  assert.equal(result.value.durationMs, 1_250n);
  const step = fromBinary(ConversationStepSchema, result.value.conversationSteps[0] as Uint8Array);
  assert.ok(step.message.case === "assistantMessage");
  assert.equal(step.message.value.text, "a.ts exports the constant a.");
  assert.equal(done.input?.message.content[0]?.type, "text");

  // The subagent's own text, inside the task card.
  const [progress] = toTaskProgressEvents("toolu_01", [
    { type: "text_delta", contentIndex: 0, delta: "Reading a.ts", partial: assistantMessage([]) },
  ]);
  assert.ok(progress !== undefined);
  assertGolden("out-task-progress-text", toServerMessageBytes(progress));
  const shown = fromBinary(AgentServerMessageSchema, readGolden("out-task-progress-text"));
  assert.ok(shown.message.case === "interactionUpdate");
  const delta = shown.message.value.message;
  assert.ok(delta.case === "toolCallDelta" && delta.value.callId === "toolu_01");
  const nested = delta.value.toolCallDelta?.delta;
  assert.ok(nested?.case === "taskToolCallDelta");
  assert.deepEqual(fromBinary(InteractionUpdateSchema, nested.value.interactionUpdate).message, {
    case: "textDelta",
    value: create(TextDeltaUpdateSchema, { text: "Reading a.ts" }),
  });

  const cancel = create(AgentClientMessageSchema, {
    message: {
      case: "conversationAction",
      value: create(ConversationActionSchema, {
        action: { case: "cancelSubagentAction", value: { subagentId: "call_task_1" } },
      }),
    },
  });
  assertGolden("in-bidi-cancel-subagent", toBinary(AgentClientMessageSchema, cancel));
  assert.deepEqual(
    fromClientMessage(fromBinary(AgentClientMessageSchema, readGolden("in-bidi-cancel-subagent"))),
    { type: "cancel_subagent", subagentID: "call_task_1" },
  );
});
