import assert from "node:assert/strict";
import { test } from "node:test";
import { create, fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { fromClientMessage } from "./client-message.ts";
import { AgentClientMessageSchema } from "./gen/agent/v1/agent_stream_pb.js";
import { ConversationActionSchema } from "./gen/agent/v1/conversation_action_pb.js";
import { ideRunRequest } from "./testing.ts";

function event(message: MessageInitShape<typeof AgentClientMessageSchema>["message"]) {
  return fromClientMessage(create(AgentClientMessageSchema, { message }));
}

test("a run request with a user message starts a turn", () => {
  const request = ideRunRequest();
  const result = fromClientMessage(
    create(AgentClientMessageSchema, { message: { case: "runRequest", value: request } }),
  );
  assert.equal(result.type, "run");
  if (result.type === "run") {
    assert.equal(result.action, "user_message");
    assert.equal(result.request, request);
  }
});

test("plan actions start a turn; resume resumes; no action prewarms", () => {
  const withAction = (action: MessageInitShape<typeof AgentClientMessageSchema>["message"]) =>
    event(action);
  assert.deepEqual(
    pick(
      withAction({
        case: "runRequest",
        value: { action: { action: { case: "startPlanAction", value: {} } } },
      }),
    ),
    { type: "run", action: "start_plan" },
  );
  assert.deepEqual(
    pick(
      withAction({
        case: "runRequest",
        value: { action: { action: { case: "executePlanAction", value: {} } } },
      }),
    ),
    { type: "run", action: "execute_plan" },
  );
  assert.equal(
    withAction({
      case: "runRequest",
      value: { action: { action: { case: "resumeAction", value: {} } } },
    }).type,
    "resume",
  );
  assert.deepEqual(event({ case: "runRequest", value: { conversationId: "c1" } }), {
    type: "prewarm",
    conversationID: "c1",
  });
  assert.deepEqual(
    event({
      case: "runRequest",
      value: { action: { action: { case: "summarizeAction", value: {} } } },
    }).type,
    "summarize",
  );
  assert.deepEqual(
    event({
      case: "runRequest",
      value: { action: { action: { case: "cancelSubagentAction", value: {} } } },
    }),
    { type: "unserved_action", action: "cancel subagent" },
  );
  const shell = event({
    case: "runRequest",
    value: {
      conversationId: "c9",
      action: {
        action: {
          case: "shellCommandAction",
          value: { shellCommand: { command: "npm test" }, execId: "x1" },
        },
      },
    },
  });
  assert.ok(shell.type === "shell_command");
  assert.deepEqual(
    [shell.command, shell.execID, shell.request?.conversationId],
    ["npm test", "x1", "c9"],
  );
  assert.deepEqual(
    event({
      case: "conversationAction",
      value: { action: { case: "shellCommandAction", value: { execId: "x2" } } },
    }),
    { type: "shell_command", command: "", execID: "x2", request: null },
  );
});

test("an action this schema does not model is not mistaken for no action", () => {
  // ConversationAction field 18 (goal continuation), an empty message: 0x92 0x01 0x00.
  const action = fromBinary(ConversationActionSchema, new Uint8Array([0x92, 0x01, 0x00]), {
    readUnknownFields: true,
  });
  assert.equal(action.action.case, undefined);
  assert.deepEqual(event({ case: "runRequest", value: { action } }), {
    type: "unserved_action",
    action: "goal continuation (field 18)",
  });
  assert.deepEqual(event({ case: "conversationAction", value: action }), {
    type: "unserved_action",
    action: "goal continuation (field 18)",
  });
  // An action message with no branch at all is still "no action" in a run request.
  assert.equal(event({ case: "runRequest", value: { action: {} } }).type, "prewarm");
});

test("every modelled action the server does not serve is unserved, never ignored", () => {
  // (summarize, shell command and background shell are served: their own events, tested above.)
  for (const branch of ["asyncAskQuestionCompletionAction", "backgroundSubagentAction"] as const) {
    for (const wrap of ["runRequest", "conversationAction"] as const) {
      const action = { action: { case: branch, value: {} } } as MessageInitShape<
        typeof ConversationActionSchema
      >;
      const result =
        wrap === "runRequest"
          ? event({ case: "runRequest", value: { action } })
          : event({ case: "conversationAction", value: action });
      assert.equal(result.type, "unserved_action", `${wrap} ${branch}`);
    }
  }
});

test("cancel_subagent (10) names the subagent to stop; inside a run request it is not served", () => {
  assert.deepEqual(
    event({
      case: "conversationAction",
      value: { action: { case: "cancelSubagentAction", value: { subagentId: "tc-7" } } },
    }),
    { type: "cancel_subagent", subagentID: "tc-7" },
  );
  const inRun = event({
    case: "runRequest",
    value: { action: { action: { case: "cancelSubagentAction", value: { subagentId: "tc-7" } } } },
  });
  assert.equal(inRun.type, "unserved_action");
});

test("prewarm requests carry their conversation id", () => {
  assert.deepEqual(event({ case: "prewarmRequest", value: { conversationId: "c2" } }), {
    type: "prewarm",
    conversationID: "c2",
  });
  assert.deepEqual(event({ case: "prewarmRequest", value: {} }), {
    type: "prewarm",
    conversationID: null,
  });
});

test("cancel, resume and other standalone actions", () => {
  assert.deepEqual(
    event({
      case: "conversationAction",
      value: { action: { case: "cancelAction", value: { reason: "user" } } },
    }),
    { type: "cancel", reason: "user" },
  );
  assert.deepEqual(
    event({ case: "conversationAction", value: { action: { case: "resumeAction", value: {} } } }),
    {
      type: "resume",
      request: null,
    },
  );
  assert.equal(event({ case: "conversationAction", value: {} }).type, "unserved_action");
  assert.deepEqual(
    event({
      case: "conversationAction",
      value: { action: { case: "summarizeAction", value: {} } },
    }),
    { type: "summarize", request: null },
  );
  assert.equal(
    event({
      case: "conversationAction",
      value: { action: { case: "backgroundSubagentAction", value: {} } },
    }).type,
    "unserved_action",
  );
});

test("exec results keep both ids and the result branch", () => {
  const result = event({
    case: "execClientMessage",
    value: {
      id: 7,
      execId: "exec-abc",
      message: {
        case: "readResult",
        value: { result: { case: "fileNotFound", value: { path: "/x" } } },
      },
    },
  });
  assert.equal(result.type, "exec_result");
  if (result.type === "exec_result") {
    assert.equal(result.id, 7);
    assert.equal(result.execID, "exec-abc");
    assert.equal(result.result.case, "readResult");
  }
});

test("exec control messages", () => {
  assert.deepEqual(
    event({
      case: "execClientControlMessage",
      value: { message: { case: "streamClose", value: { id: 3 } } },
    }),
    { type: "exec_stream_close", id: 3 },
  );
  assert.deepEqual(
    event({
      case: "execClientControlMessage",
      value: { message: { case: "throw", value: { id: 4, error: "boom" } } },
    }),
    { type: "exec_throw", id: 4, error: "boom" },
  );
  assert.deepEqual(
    event({
      case: "execClientControlMessage",
      value: { message: { case: "heartbeat", value: { id: 5 } } },
    }),
    { type: "exec_heartbeat", id: 5 },
  );
  assert.equal(event({ case: "execClientControlMessage", value: {} }).type, "unsupported");
});

test("interaction responses, KV results and heartbeats", () => {
  const response = event({
    case: "interactionResponse",
    value: {
      id: 9,
      result: {
        case: "switchModeRequestResponse",
        value: { result: { case: "approved", value: {} } },
      },
    },
  });
  assert.equal(response.type, "interaction_response");
  if (response.type === "interaction_response")
    assert.equal(response.result.case, "switchModeRequestResponse");
  const kv = event({
    case: "kvClientMessage",
    value: { id: 2, message: { case: "setBlobResult", value: {} } },
  });
  assert.equal(kv.type, "kv_result");
  assert.deepEqual(event({ case: "clientHeartbeat", value: {} }), { type: "heartbeat" });
});

test("a message without a known branch is unsupported, not an error", () => {
  assert.equal(fromClientMessage(create(AgentClientMessageSchema)).type, "unsupported");
});

function pick(value: ReturnType<typeof fromClientMessage>) {
  return value.type === "run" ? { type: value.type, action: value.action } : { type: value.type };
}
