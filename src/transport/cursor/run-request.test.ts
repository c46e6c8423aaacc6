import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { create, toBinary } from "@bufbuild/protobuf";
import { toCanonicalJSON } from "../../loop/canonical-json.ts";
import { fromAgentClientMessageBytes } from "./bidi-append.ts";
import { toCheckpoint } from "./checkpoint.ts";
import { AgentClientMessageSchema } from "./gen/agent/v1/agent_stream_pb.js";
import { AgentMode, TodoItemSchema, TodoStatus } from "./gen/agent/v1/common_pb.js";
import { ConversationActionSchema } from "./gen/agent/v1/conversation_action_pb.js";
import {
  ConversationStateStructureSchema,
  ConversationTurnStructureSchema,
} from "./gen/agent/v1/conversation_state_pb.js";
import { ApiKeyCredentialsSchema } from "./gen/agent/v1/models_pb.js";
import type { AgentRunRequest } from "./gen/agent/v1/run_request_pb.js";
import { toSystemPrompt } from "./prompt/index.ts";
import {
  fromModeSettings,
  fromRunRequest,
  type RunOptions,
  toModelSelection,
  toModeSettings,
  toResumedTurnState,
} from "./run-request.ts";
import {
  CONVERSATION_ID,
  cliRunRequest,
  ideRunRequest,
  REQUEST_ID,
  T0,
  WORKSPACE,
} from "./testing.ts";

setFlagsFromString("--expose-gc");
/** A full collection, from a fresh context where `--expose-gc` took effect. */
const collect = runInNewContext("gc") as () => void;

const OPTIONS: RunOptions = {
  at: T0,
  inputID: `${REQUEST_ID}:0`,
  requestID: REQUEST_ID,
  contextWindow: 200_000,
};

function start(
  request: AgentRunRequest,
  action: "user_message" | "start_plan" | "execute_plan" = "user_message",
) {
  const result = fromRunRequest(request, action, OPTIONS);
  assert.ok(result.ok, result.ok ? "" : result.error.message);
  return result.value;
}

test("an IDE run request becomes a start input with settings, context and turn state", () => {
  const turn = start(ideRunRequest());
  assert.equal(turn.harness, "cursor-ide");
  assert.equal(turn.messageID, "msg-1");
  assert.equal(turn.input.type, "start");
  assert.equal(turn.input.inputID, `${REQUEST_ID}:0`);
  assert.equal(turn.input.at, T0);
  assert.deepEqual(turn.input.userMessage, {
    role: "user",
    content: "Fix the failing test in src/math.ts",
    timestamp: T0,
  });
  assert.equal(turn.input.settings.model, "claude-sonnet");
  assert.equal(turn.input.settings.systemPrompt, toSystemPrompt("agent"));
  const names = turn.input.settings.tools.map((tool) => tool.name);
  assert.deepEqual(names, [
    "read_file",
    "edit_file",
    "write_file",
    "delete_file",
    "list_dir",
    "grep",
    "glob",
    "shell",
    "write_shell_stdin",
    "read_lints",
    "todo_write",
    "ask_question",
    "switch_mode",
    "task",
    "list_mcp_resources",
    "read_mcp_resource",
    "mcp_servers",
    "mcp__github__create_issue",
  ]);
  assert.deepEqual(
    turn.input.context.map((supplement) => supplement.key),
    ["environment", "git", "rules", `file:${WORKSPACE}/src/math.ts`],
  );
  assert.equal(turn.state.conversationID, CONVERSATION_ID);
  assert.equal(turn.state.requestID, REQUEST_ID);
  assert.equal(turn.state.mode, "agent");
  assert.equal(turn.state.workspaceRoot, WORKSPACE);
  assert.equal(turn.state.contextWindow, 200_000);
  assert.equal(turn.state.nextID, 1);
});

test("a CLI run request (no harness, model only in model_details) starts a turn too", () => {
  const turn = start(cliRunRequest());
  assert.equal(turn.harness, "");
  assert.equal(turn.input.settings.model, "gpt-5");
  assert.equal(turn.state.workspaceRoot, "/Users/dev/app");
  assert.deepEqual(
    turn.input.context.map((supplement) => supplement.key),
    ["environment"],
  );
  assert.ok(!turn.input.settings.tools.some((tool) => tool.name.startsWith("mcp__")));
});

test("settings and context are byte-identical for the same request (prefix-cache stability)", () => {
  const a = start(ideRunRequest());
  const b = start(ideRunRequest());
  assert.equal(toCanonicalJSON(a.input.settings), toCanonicalJSON(b.input.settings));
  assert.equal(toCanonicalJSON(a.input.context), toCanonicalJSON(b.input.context));
  const digest = createHash("sha256").update(toCanonicalJSON(a.input.settings.tools)).digest("hex");
  assert.equal(
    digest,
    createHash("sha256").update(toCanonicalJSON(b.input.settings.tools)).digest("hex"),
  );
});

test("MCP schema key order from the client does not change the tool bytes", () => {
  const reordered = ideRunRequest((request) => {
    const tool = request.mcpTools?.mcpTools[0];
    assert.ok(tool !== undefined);
    tool.inputSchemaJson = JSON.stringify({
      properties: { body: { type: "string" }, title: { type: "string" } },
      type: "object",
      required: ["title"],
    });
  });
  assert.equal(
    toCanonicalJSON(start(reordered).input.settings.tools),
    toCanonicalJSON(start(ideRunRequest()).input.settings.tools),
  );
});

test("the model comes from requested_model, else model_details; parameters are kept", () => {
  assert.deepEqual(toModelSelection(ideRunRequest()), {
    model: "claude-sonnet",
    maxMode: false,
    parameters: [{ id: "thinking", value: "high" }],
    isVariantString: false,
  });
  assert.equal(toModelSelection(cliRunRequest())?.model, "gpt-5");
  const noModel = ideRunRequest((request) => {
    request.requestedModel = undefined;
    request.modelDetails = undefined;
  });
  assert.equal(toModelSelection(noModel), null);
  const result = fromRunRequest(noModel, "user_message", OPTIONS);
  assert.equal(result.ok, false);
});

test("credentials the client attaches to the model never reach the loop input", () => {
  const request = ideRunRequest((value) => {
    if (value.modelDetails) {
      value.modelDetails.credentials = {
        case: "apiKeyCredentials",
        value: create(ApiKeyCredentialsSchema, { apiKey: "sk-live-SECRET-1234567890" }),
      };
    }
  });
  const turn = start(request);
  assert.doesNotMatch(toCanonicalJSON(turn.input), /SECRET/);
});

test("a run request without conversation_id or user message is a typed error", () => {
  const noConversation = ideRunRequest((request) => {
    request.conversationId = undefined;
  });
  const result = fromRunRequest(noConversation, "user_message", OPTIONS);
  assert.equal(result.ok, false);
  if (!result.ok) assert.equal(result.error.reason, "bad_field");
  const empty = ideRunRequest((request) => {
    const action = request.action?.action;
    if (action?.case === "userMessageAction" && action.value.userMessage)
      action.value.userMessage.text = "";
  });
  assert.equal(fromRunRequest(empty, "user_message", OPTIONS).ok, false);
  assert.equal(fromRunRequest(ideRunRequest(), "start_plan", OPTIONS).ok, false, "action mismatch");
});

test("the mode comes from the user message, else the checkpoint; modes pick prompt and tools", () => {
  const ask = start(
    ideRunRequest((request) => {
      const action = request.action?.action;
      if (action?.case === "userMessageAction" && action.value.userMessage)
        action.value.userMessage.mode = AgentMode.ASK;
    }),
  );
  assert.equal(ask.state.mode, "ask");
  assert.equal(ask.input.settings.systemPrompt, toSystemPrompt("ask"));
  assert.deepEqual(
    ask.input.settings.tools.map((tool) => tool.name),
    [
      "read_file",
      "list_dir",
      "grep",
      "glob",
      "read_lints",
      "ask_question",
      "switch_mode",
      "task",
      // The IDE request carries an MCP server: its resources and state are offered in every mode.
      "list_mcp_resources",
      "read_mcp_resource",
      "mcp_servers",
    ],
  );
  const fromCheckpoint = start(
    ideRunRequest((request) => {
      const action = request.action?.action;
      if (action?.case === "userMessageAction" && action.value.userMessage) {
        action.value.userMessage.mode = AgentMode.UNSPECIFIED;
      }
      request.conversationState = create(ConversationStateStructureSchema, {
        mode: AgentMode.DEBUG,
      });
    }),
  );
  assert.equal(fromCheckpoint.state.mode, "debug");
});

test("start_plan runs in plan mode with create_plan", () => {
  const request = ideRunRequest((value) => {
    value.action = create(ConversationActionSchema, {
      action: {
        case: "startPlanAction",
        value: { userMessage: { text: "Plan the refactor", messageId: "m", mode: AgentMode.PLAN } },
      },
    });
  });
  const turn = start(request, "start_plan");
  assert.equal(turn.state.mode, "plan");
  assert.ok(turn.input.settings.tools.some((tool) => tool.name === "create_plan"));
  assert.ok(!turn.input.settings.tools.some((tool) => tool.name === "shell"));
});

test("execute_plan starts an agent turn that carries the plan", () => {
  const request = ideRunRequest((value) => {
    value.action = create(ConversationActionSchema, {
      action: {
        case: "executePlanAction",
        value: {
          planFileContent: "1. Fix add()\n2. Run tests",
          executionMode: AgentMode.AGENT,
          kickoffMessageId: "kick-1",
        },
      },
    });
  });
  const turn = start(request, "execute_plan");
  assert.equal(turn.state.mode, "agent");
  assert.equal(turn.messageID, "kick-1");
  assert.equal(
    turn.input.userMessage.content,
    "Implement the following plan.\n\n1. Fix add()\n2. Run tests",
  );
});

test("the previous checkpoint's todos and turns carry into the turn state", () => {
  const todo = create(TodoItemSchema, { id: "1", content: "Fix add", status: TodoStatus.PENDING });
  const previous = create(ConversationStateStructureSchema, {
    todos: [toBinary(TodoItemSchema, todo), new Uint8Array([0xff, 0xff])],
    turns: [new Uint8Array([1, 2, 3])],
    tokenDetails: { usedTokens: 1234, maxTokens: 200_000 },
  });
  const turn = start(
    ideRunRequest((request) => {
      request.conversationState = previous;
    }),
  );
  assert.equal(turn.state.todos.length, 1, "the undecodable entry is dropped");
  assert.equal(turn.state.todos[0]?.content, "Fix add");
  assert.equal(turn.state.previous, previous);
  assert.equal(turn.state.contextTokens, 1234);
});

/** The turn state of a run request decoded as the server decodes it, with a checkpoint. */
function decodedTurn(): {
  readonly turn: ReturnType<typeof start>;
  readonly body: WeakRef<object>;
} {
  const earlier = toBinary(
    ConversationTurnStructureSchema,
    create(ConversationTurnStructureSchema, {
      turn: {
        case: "agentConversationTurn",
        value: { userMessage: new Uint8Array(2000).fill(7), requestId: "earlier" },
      },
    }),
  );
  const todo = create(TodoItemSchema, { id: "1", content: "Fix add" });
  const request = ideRunRequest((run) => {
    run.conversationState = create(ConversationStateStructureSchema, {
      turns: [earlier, earlier],
      todos: [toBinary(TodoItemSchema, todo)],
      summary: new Uint8Array([1, 2, 3]),
    });
    run.customSystemPrompt = "Be brief. ".repeat(2000);
  });
  const bytes = toBinary(
    AgentClientMessageSchema,
    create(AgentClientMessageSchema, { message: { case: "runRequest", value: request } }),
  );
  const decoded = fromAgentClientMessageBytes(bytes);
  assert.ok(decoded.ok && decoded.value.message.case === "runRequest");
  const turn = start(decoded.value.message.value);
  // Still a checkpoint of the same content: the next one sends the same bytes.
  assert.deepEqual(
    toBinary(ConversationStateStructureSchema, turn.state.previous),
    toBinary(
      ConversationStateStructureSchema,
      request.conversationState ?? create(ConversationStateStructureSchema),
    ),
  );
  assert.deepEqual(toCheckpoint(turn.state).turns.slice(0, 2), [earlier, earlier]);
  assert.equal(turn.state.todos[0]?.content, "Fix add");
  return { turn, body: new WeakRef(bytes.buffer) };
}

test("the turn state keeps no part of the run request's body alive (issue #19)", async () => {
  // A stream keeps its turn state for the whole turn; the body it was decoded from (checkpoint,
  // request context, …: up to several hundred KiB from the IDE) must not stay with it.
  const { turn, body } = decodedTurn();
  // WeakRef targets live to the end of the job that created or read them.
  await new Promise((resolve) => setImmediate(resolve));
  collect();
  assert.equal(body.deref(), undefined, "the run request's body is still reachable");
  assert.equal(turn.state.previous.turns.length, 2);
});

test("exclude_workspace_context drops environment, git and rules but keeps attachments", () => {
  const turn = start(
    ideRunRequest((request) => {
      request.excludeWorkspaceContext = true;
      request.customSystemPrompt = "Answer in French.";
    }),
  );
  assert.deepEqual(
    turn.input.context.map((supplement) => supplement.key),
    ["custom-instructions", `file:${WORKSPACE}/src/math.ts`],
  );
});

test("a resumed stream gets the turn state its run request gives, without a loop input", () => {
  const resumedFromSaved = toResumedTurnState(ideRunRequest(), OPTIONS);
  assert.ok(resumedFromSaved.ok);
  assert.deepEqual(resumedFromSaved.value, start(ideRunRequest()).state);

  const resumeAction = ideRunRequest((value) => {
    value.action = create(ConversationActionSchema, {
      action: { case: "resumeAction", value: {} },
    });
    value.conversationState = create(ConversationStateStructureSchema, { mode: AgentMode.ASK });
  });
  const resumed = toResumedTurnState(resumeAction, OPTIONS);
  assert.ok(resumed.ok);
  assert.equal(resumed.value.conversationID, CONVERSATION_ID);
  assert.equal(resumed.value.mode, "ask");
  assert.equal(resumed.value.requestID, REQUEST_ID);

  const anonymous = toResumedTurnState(
    ideRunRequest((value) => {
      value.conversationId = undefined;
    }),
    OPTIONS,
  );
  assert.ok(!anonymous.ok && anonymous.error.reason === "bad_field");
});

test("a mode switch keeps what is not the mode's: fallbacks, compaction, the client's options", () => {
  const before = {
    ...toModeSettings({ model: "m" }, "ask", []),
    fallbacks: ["spare"],
    compaction: {
      auto: true,
      contextWindow: 8_000,
      outputReserve: 1_000,
      threshold: 0.8,
      summaryModel: "cheap",
      tailMessages: 6,
      charsPerToken: 4,
    },
    modelOptions: { thinking: true },
  };
  const after = toModeSettings(before, "agent", []);
  assert.deepEqual(
    { ...after, systemPrompt: "", tools: [], readOnlyTools: [], concurrentTools: [] },
    { ...before, systemPrompt: "", tools: [], readOnlyTools: [], concurrentTools: [] },
  );
  assert.equal(fromModeSettings(after), "agent");
  // Every mode offers task, and its calls run together.
  assert.deepEqual(after.concurrentTools, ["task"]);
  assert.deepEqual(toModeSettings(after, "ask", []).concurrentTools, ["task"]);
  const withoutTask = { ...after, tools: after.tools.filter((tool) => tool.name !== "task") };
  assert.deepEqual(toModeSettings(withoutTask, "plan", []).concurrentTools, ["task"]);
});

test("the mode reads back from its settings; other settings name no mode", () => {
  for (const mode of ["agent", "ask", "plan", "debug"] as const) {
    assert.equal(fromModeSettings(toModeSettings({ model: "m" }, mode, [])), mode);
  }
  assert.equal(fromModeSettings({ systemPrompt: "You are a careful coding agent." }), null);
});

test("first turns share one frozen empty checkpoint and empty lists; their checkpoints are as with their own", () => {
  const first = (request: AgentRunRequest) => {
    request.conversationState = undefined;
    return start(request).state;
  };
  const a = first(cliRunRequest());
  const b = first(ideRunRequest());
  assert.equal(a.previous, b.previous);
  assert.ok(Object.isFrozen(a.previous));
  assert.throws(() => {
    (a.previous as { turns: unknown[] }).turns.push(new Uint8Array(1));
  }, TypeError);
  assert.equal(a.previous.turns.length, 0);
  for (const list of [a.open, a.steps, a.streaming, a.thinkingDurations, a.todos, a.mcpTools]) {
    assert.equal(list, b.steps);
    assert.ok(Object.isFrozen(list));
  }
  // The same checkpoint as from an empty checkpoint of its own.
  const own = { ...a, previous: create(ConversationStateStructureSchema) };
  assert.deepEqual(
    toBinary(ConversationStateStructureSchema, toCheckpoint(a)),
    toBinary(ConversationStateStructureSchema, toCheckpoint(own)),
  );
  // Resumed turn states without a checkpoint share it too.
  const resumed = toResumedTurnState(
    Object.assign(cliRunRequest(), { conversationState: undefined }),
    OPTIONS,
  );
  assert.ok(resumed.ok);
  assert.equal(resumed.value.previous, a.previous);
});

test("the subagent context is kept in a list of its own length, equal to the rendered one", () => {
  const state = start(ideRunRequest()).state;
  const context = state.subagentContext ?? [];
  assert.ok(context.length > 0);
  assert.deepEqual(
    context.map((supplement) => supplement.key),
    start(ideRunRequest())
      .input.context.map((supplement) => supplement.key)
      .filter((key) => context.some((kept) => kept.key === key)),
  );
  assert.equal(state.customSubagents?.length, 0);
});

test("streams sharing the empty checkpoint that carry different client entries each get their own back", () => {
  const first = () => {
    const request = cliRunRequest();
    request.conversationState = undefined;
    return start(request).state;
  };
  const carrying = (entry: Uint8Array) => ({
    ...first(),
    carried: { requestID: "r-earlier", entry, ids: null, bytes: null },
  });
  const one = carrying(new Uint8Array([1, 1, 1]));
  const two = carrying(new Uint8Array([2, 2]));
  assert.equal(one.previous, two.previous);
  for (const state of [one, two, one]) {
    const turns = toCheckpoint(state).turns;
    assert.equal(turns.length, 2);
    assert.deepEqual(turns[0], state.carried.entry);
  }
});
