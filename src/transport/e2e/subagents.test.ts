/**
 * Subagents end to end (README "Subagents", src/loop/subagent.ts): the real server, the fake
 * OpenAI-compatible provider on 127.0.0.1 and the protocol-faithful test client. The provider
 * answers from each request itself (which conversation: the parent, an explore or a general
 * subagent, told apart by their system prompts; which step: how many tool results it carries), so
 * concurrent subagents cannot put a reply queue out of step.
 *
 * - Two subagents asked for in one response run at once: the client holds the explorer's read
 *   until the general subagent's write has arrived, and the other way round, so a server running
 *   them one after the other never finishes.
 * - The explorer's write is refused by the server: the file never exists, the client never sees
 *   the exec.
 * - The parent's calls show as `task_tool_call` (TaskArgs, then TaskResult.success with the answer
 *   as an assistant step); the children's answers are the parent's tool results.
 * - Every child model call's tokens count for the parent turn (turn_ended, the turn-ended log).
 * - Cancel of the parent cancels a running child; `cancel_subagent` stops one child and the
 *   parent goes on with an error result.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { create, fromBinary } from "@bufbuild/protobuf";
import { toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import type { RecordedRequest } from "../../llm/testing/fake-provider.ts";
import { toSubagentConversationID } from "../../loop/index.ts";
import { AgentMode } from "../cursor/gen/agent/v1/common_pb.js";
import { ConversationActionSchema } from "../cursor/gen/agent/v1/conversation_action_pb.js";
import {
  ConversationStepSchema,
  ConversationTurnStructureSchema,
} from "../cursor/gen/agent/v1/conversation_state_pb.js";
import {
  type InteractionUpdate,
  InteractionUpdateSchema,
} from "../cursor/gen/agent/v1/interaction_update_pb.js";
import {
  CustomSubagentPermissionMode,
  CustomSubagentSchema,
  RequestContextSchema,
} from "../cursor/gen/agent/v1/request_context_pb.js";
import { DEFAULT_SERVER_OPTIONS } from "../server.ts";
import type { TurnResult } from "../testing/index.ts";
import { API_KEY, createGate, type Harness, MODEL, startHarness } from "./test-harness.ts";

interface Body {
  readonly messages: readonly { role: string; content?: unknown; tool_call_id?: string }[];
  readonly tools?: readonly { function: { name: string } }[];
}

const parse = (request: RecordedRequest): Body => JSON.parse(request.body) as Body;
const systemOf = (body: Body): string => String(body.messages[0]?.content ?? "");
const toolResults = (body: Body) => body.messages.filter((message) => message.role === "tool");
const toolNames = (body: Body) => (body.tools ?? []).map((entry) => entry.function.name);
const who = (body: Body): "parent" | "explore" | "general" =>
  systemOf(body).includes("# Read-only")
    ? "explore"
    : systemOf(body).includes("# You are a subagent")
      ? "general"
      : "parent";
const USAGE = { prompt: 10, completion: 5 };

/** The updates shown inside task call `callID`'s card (`task_tool_call_delta`), in order. */
function nestedUpdates(result: TurnResult, callID: string): InteractionUpdate[] {
  return result.messages.flatMap((message) => {
    if (message.message.case !== "interactionUpdate") return [];
    const update = message.message.value.message;
    if (update.case !== "toolCallDelta" || update.value.callId !== callID) return [];
    const delta = update.value.toolCallDelta?.delta;
    if (delta?.case !== "taskToolCallDelta") return [];
    return [fromBinary(InteractionUpdateSchema, delta.value.interactionUpdate)];
  });
}
const sse = (reply: Parameters<typeof toChatCompletionSse>[0]) =>
  ({ type: "sse", body: toChatCompletionSse({ ...reply, usage: USAGE }) }) as const;

describe("two subagents at once: explore and general", () => {
  let harness: Harness;
  let result: TurnResult;
  let blobs: ReadonlyMap<string, Uint8Array> = new Map();
  const conversationId = "5ab0a9e0-0000-4000-8000-000000000001";
  const arrivals: string[] = [];

  before(async () => {
    harness = await startHarness();
    writeFileSync(join(harness.workspace, "a.ts"), "export const a = 1;\n");
    harness.provider.answer((request) => {
      const body = parse(request);
      const step = toolResults(body).length;
      switch (who(body)) {
        case "parent":
          return step === 0
            ? sse({
                text: "Delegating.",
                toolCalls: [
                  {
                    id: "call_explore",
                    name: "task",
                    arguments: {
                      description: "Find the export",
                      prompt: "What does a.ts export?",
                      subagent_type: "explore",
                    },
                  },
                  {
                    id: "call_general",
                    name: "task",
                    arguments: {
                      description: "Write the note",
                      prompt: "Write ok to out.txt",
                      subagent_type: "general",
                    },
                  },
                ],
              })
            : sse({ text: "Both done." });
        case "explore":
          return step === 0
            ? sse({
                toolCalls: [
                  { id: "call_read", name: "read_file", arguments: { path: "a.ts" } },
                  {
                    id: "call_sneaky",
                    name: "write_file",
                    arguments: { path: "sneaky.txt", content: "no\n" },
                  },
                ],
              })
            : sse({ text: "a.ts exports the constant a." });
        case "general":
          return step === 0
            ? sse({
                toolCalls: [
                  {
                    id: "call_write",
                    name: "write_file",
                    arguments: { path: "out.txt", content: "ok\n" },
                  },
                ],
              })
            : sse({ text: "Wrote out.txt." });
      }
    });
    // Each child's first exec waits for the other's: only concurrent subagents get past this.
    const readArrived = createGate();
    const writeArrived = createGate();
    const client = harness.client({
      onExec: async (exec) => {
        const kind = exec.message.case ?? "";
        arrivals.push(kind);
        if (kind === "readArgs") {
          readArrived.open();
          await writeArrived.promise;
        }
        if (kind === "writeArgs") {
          writeArrived.open();
          await readArrived.promise;
        }
        return undefined;
      },
    });
    blobs = client.blobs;
    result = await client.startTurn({ conversationId, text: "Split it up.", modelId: MODEL }).done;
  });
  after(() => harness.close());

  test("the turn ends with the parent's answer", () => {
    assert.equal(result.error, undefined);
    assert.equal(result.view.text, "Delegating.Both done.");
  });

  test("both subagents ran at once; the explorer's write never reached the client", () => {
    assert.deepEqual([...arrivals].sort(), ["readArgs", "writeArgs"]);
    assert.equal(readFileSync(join(harness.workspace, "out.txt"), "utf8"), "ok\n");
    assert.equal(existsSync(join(harness.workspace, "sneaky.txt")), false);
  });

  test("each subagent got its own tool set and prompt; no subagent can delegate again", () => {
    const bodies = harness.provider.requests.map(parse);
    const explore = bodies.find((body) => who(body) === "explore");
    const general = bodies.find((body) => who(body) === "general");
    const parent = bodies.find((body) => who(body) === "parent");
    assert.ok(explore && general && parent);
    assert.ok(toolNames(parent).includes("task"));
    // Asking the user, the todo list and the mode stay the parent's.
    for (const name of ["task", "ask_question", "switch_mode", "todo_write"]) {
      assert.ok(!toolNames(general).includes(name), name);
    }
    assert.ok(toolNames(general).includes("write_file"));
    assert.deepEqual(toolNames(explore), ["read_file", "list_dir", "grep", "glob", "read_lints"]);
    // The explorer's refused call has its error result in the child's history.
    const second = bodies.find((body) => who(body) === "explore" && toolResults(body).length > 0);
    const refused = toolResults(second as Body).find((m) => m.tool_call_id === "call_sneaky");
    assert.match(JSON.stringify(refused?.content), /not available to this subagent/);
  });

  test("the client sees task_tool_call started and completed with the answer", () => {
    const started = result.view.toolCallsStarted.filter((call) => call.variant === "taskToolCall");
    assert.deepEqual(started.map((call) => call.callId).sort(), ["call_explore", "call_general"]);
    const completed = result.view.toolCallsCompleted.find((c) => c.callId === "call_explore");
    const tool = completed?.toolCall?.tool;
    assert.ok(tool?.case === "taskToolCall");
    assert.equal(tool.value.args?.description, "Find the export");
    assert.equal(tool.value.args?.subagentType?.type.case, "explore");
    const success = tool.value.result?.result;
    assert.ok(success?.case === "success");
    const step = fromBinary(
      ConversationStepSchema,
      success.value.conversationSteps[0] ?? new Uint8Array(),
    );
    assert.deepEqual(step.message, {
      case: "assistantMessage",
      value: step.message.value,
    });
    assert.equal(
      step.message.case === "assistantMessage" ? step.message.value.text : "",
      "a.ts exports the constant a.",
    );
    assert.equal(
      success.value.agentId,
      toSubagentConversationID(conversationId, `${conversationId}:t1:c0:call_explore`),
    );
  });

  test("each subagent's text and tool calls show inside its own task card only", () => {
    const explore = nestedUpdates(result, "call_explore");
    const text = explore
      .flatMap((update) => (update.message.case === "textDelta" ? [update.message.value.text] : []))
      .join("");
    assert.equal(text, "a.ts exports the constant a.");
    const started = explore.flatMap((update) =>
      update.message.case === "toolCallStarted"
        ? [update.message.value.toolCall?.tool.case ?? ""]
        : [],
    );
    // The refused write never started: the loop answered it.
    assert.deepEqual(started, ["readToolCall"]);
    // Shown under an id unique on the stream (subagents-concurrency.test.ts), not the model's.
    const general = nestedUpdates(result, "call_general").flatMap((update) =>
      update.message.case === "toolCallCompleted"
        ? [`${update.message.value.toolCall?.tool.case}:${update.message.value.callId}`]
        : [],
    );
    assert.equal(general.length, 1);
    assert.match(general[0] ?? "", /^editToolCall:task_[0-9a-f]{24}$/);
    // At the top level: the parent's text and its two task cards, nothing of the subagents.
    const topLevel = result.view.toolCallsStarted.map((call) => call.callId);
    assert.deepEqual(topLevel.sort(), ["call_explore", "call_general"]);
    assert.equal(result.view.text, "Delegating.Both done.");
  });

  test("the checkpoint's steps are the parent's: its task calls, none of the subagents' calls", () => {
    const checkpoint = result.view.checkpoint;
    assert.ok(checkpoint !== undefined);
    // Blob-backed: the turn and its steps are ids in the client's store.
    const blob = (id: Uint8Array | undefined) =>
      blobs.get(Buffer.from(id ?? []).toString("hex")) ?? new Uint8Array();
    const turn = fromBinary(ConversationTurnStructureSchema, blob(checkpoint.turns.at(-1)));
    assert.ok(turn.turn.case === "agentConversationTurn");
    const toolCalls = turn.turn.value.steps.flatMap((id) => {
      const step = fromBinary(ConversationStepSchema, blob(id));
      return step.message.case === "toolCall" ? [step.message.value.toolCallId] : [];
    });
    assert.deepEqual(toolCalls.sort(), ["call_explore", "call_general"]);
  });

  test("the children's answers are the parent's tool results, in the model's order", () => {
    const last = parse(harness.provider.requests.at(-1) as RecordedRequest);
    assert.equal(who(last), "parent");
    // Each answer ends with the subagent's id, for the model to continue it (`resume`).
    const agent = (call: string) =>
      toSubagentConversationID(conversationId, `${conversationId}:t1:c0:${call}`);
    assert.deepEqual(
      toolResults(last).map((message) => [message.tool_call_id, message.content]),
      [
        ["call_explore", `a.ts exports the constant a.\n\nagent_id: ${agent("call_explore")}`],
        ["call_general", `Wrote out.txt.\n\nagent_id: ${agent("call_general")}`],
      ],
    );
  });

  test("each child is a conversation of its own, linked to the parent's call", async () => {
    const childID = toSubagentConversationID(
      conversationId,
      `${conversationId}:t1:c0:call_general`,
    );
    const child = await harness.store.load(childID);
    assert.equal(child?.state.status, "final");
    assert.deepEqual(child?.state.parent, {
      conversationID: conversationId,
      operationID: `${conversationId}:t1:c0:call_general`,
      toolCallID: "call_general",
      subagentType: "general",
    });
    assert.equal(child?.state.messages.at(0)?.role, "user");
  });

  test("nothing went wrong in the runner", () => {
    assert.deepEqual(
      harness.logs.filter((line) => line.level === "error").map((line) => line.message),
      [],
    );
  });

  test("the children's tokens count for the parent turn", () => {
    // Six model calls of 10 input and 5 output tokens: two of the parent, two of each child.
    assert.equal(harness.provider.requests.length, 6);
    assert.equal(result.view.usage?.inputTokens, 60);
    assert.equal(result.view.usage?.outputTokens, 30);
    const ended = harness.logs.find(
      (line) => line.message === "turn ended" && line.fields.conversation === conversationId,
    );
    assert.equal(ended?.fields.inputTokens, 60);
    assert.equal(ended?.fields.outputTokens, 30);
    const children = harness.logs.filter((line) => line.message === "subagent ended");
    assert.deepEqual(children.map((line) => [line.fields.type, line.fields.inputTokens]).sort(), [
      ["explore", 20],
      ["general", 20],
    ]);
  });
});

describe("cancel", () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness();
    writeFileSync(join(harness.workspace, "a.ts"), "export const a = 1;\n");
    harness.provider.answer((request) => {
      const body = parse(request);
      const step = toolResults(body).length;
      if (who(body) === "parent") {
        return step === 0
          ? sse({
              toolCalls: [
                {
                  id: "call_task",
                  name: "task",
                  arguments: { description: "Look", prompt: "Read a.ts", subagent_type: "general" },
                },
              ],
            })
          : sse({ text: "Went on without it." });
      }
      return step === 0
        ? sse({ toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "a.ts" } }] })
        : sse({ text: "unreachable" });
    });
  });
  after(() => {
    // A child canceled with its parent is no fault of the runner's.
    const faults = harness.logs.filter((line) => line.level === "error");
    assert.deepEqual(
      faults.map((line) => [line.message, line.fields]),
      [],
    );
    return harness.close();
  });

  /** Starts a turn whose subagent's read is held by the client until `release`. */
  function startHeld(conversationId: string) {
    const arrived = createGate();
    const release = createGate();
    const client = harness.client({
      onExec: async () => {
        arrived.open();
        await release.promise;
        return undefined;
      },
    });
    const turn = client.startTurn({ conversationId, text: "Go.", modelId: MODEL });
    return { turn, arrived: arrived.promise, release: release.open };
  }

  test("canceling the parent cancels its running subagent", async () => {
    const conversationId = "5ab0a9e0-0000-4000-8000-000000000002";
    const { turn, arrived, release } = startHeld(conversationId);
    await arrived;
    await turn.cancel("stop");
    // The client finishes the held read (as a real one would) before its turn is done.
    release();
    const result = await turn.done;
    assert.equal((await harness.store.load(conversationId))?.state.status, "canceled");
    const childID = toSubagentConversationID(conversationId, `${conversationId}:t1:c0:call_task`);
    // The child's cancel is applied right after the parent's; wait for it through the store.
    let child = await harness.store.load(childID);
    for (let i = 0; i < 200 && child?.state.status !== "canceled"; i += 1) {
      await new Promise((resolve) => setImmediate(resolve));
      child = await harness.store.load(childID);
    }
    assert.equal(child?.state.status, "canceled");
    // The task card is closed; the subagent's read is closed inside it, not as a call of its own.
    const completed = result.view.toolCallsCompleted.map((call) => call.callId);
    assert.deepEqual(completed, ["call_task"]);
    const nested = nestedUpdates(result, "call_task").map((update) => update.message.case);
    assert.deepEqual(
      nested.filter((kind) => kind === "toolCallStarted" || kind === "toolCallCompleted"),
      ["toolCallStarted", "toolCallCompleted"],
    );
  });

  test("cancel_subagent stops one subagent; the parent goes on with an error result", async () => {
    const conversationId = "5ab0a9e0-0000-4000-8000-000000000003";
    const before = harness.provider.requests.length;
    const { turn, arrived, release } = startHeld(conversationId);
    await arrived;
    await turn.send({
      message: {
        case: "conversationAction",
        value: create(ConversationActionSchema, {
          action: { case: "cancelSubagentAction", value: { subagentId: "call_task" } },
        }),
      },
    });
    release();
    const result = await turn.done;
    assert.equal(result.error, undefined);
    assert.equal(result.view.text, "Went on without it.");
    const last = parse(harness.provider.requests.at(-1) as RecordedRequest);
    assert.equal(harness.provider.requests.length - before, 3);
    const [taskResult] = toolResults(last);
    assert.equal(taskResult?.tool_call_id, "call_task");
    assert.match(
      String(taskResult?.content),
      /^The subagent did not complete: it was canceled \(canceled by the user\)/,
    );
    const completed = result.view.toolCallsCompleted.find((c) => c.callId === "call_task");
    const tool = completed?.toolCall?.tool;
    assert.ok(tool?.case === "taskToolCall" && tool.value.result?.result.case === "error");
  });
});

describe("models per type and the client's custom subagents", () => {
  let harness: Harness;
  let result: TurnResult;
  const conversationId = "5ab0a9e0-0000-4000-8000-000000000004";

  before(async () => {
    harness = await startHarness({
      models: (url) =>
        ["scripted", "fast", "cheap"].map((name) => ({
          name,
          api: "openai-compatible",
          model: `${name}-model`,
          baseUrl: url,
          apiKey: API_KEY,
        })),
      server: { stream: { ...DEFAULT_SERVER_OPTIONS.stream, subagentModels: { explore: "fast" } } },
    });
    harness.provider.answer((request) => {
      const body = parse(request);
      const step = toolResults(body).length;
      if (systemOf(body).includes("REVIEWER_INSTRUCTIONS")) {
        return sse({ text: "Reviewed: fine." });
      }
      if (who(body) === "explore") return sse({ text: "Explored." });
      return step === 0
        ? sse({
            toolCalls: [
              {
                id: "call_x",
                name: "task",
                arguments: { description: "Explore", prompt: "Look", subagent_type: "explore" },
              },
              {
                id: "call_r",
                name: "task",
                arguments: { description: "Review", prompt: "Review", subagent_type: "reviewer" },
              },
              {
                id: "call_u",
                name: "task",
                arguments: { description: "Nope", prompt: "Nope", subagent_type: "nobody" },
              },
            ],
          })
        : sse({ text: "Done." });
    });
    const client = harness.client();
    result = await client.startTurn({
      conversationId,
      text: "Go.",
      modelId: MODEL,
      edit: (request) => {
        const action = request.action?.action;
        if (action?.case !== "userMessageAction") throw new Error("not a user message");
        action.value.requestContext ??= create(RequestContextSchema);
        action.value.requestContext.customSubagents.push(
          create(CustomSubagentSchema, {
            name: "reviewer",
            description: "Reviews changes",
            prompt: "REVIEWER_INSTRUCTIONS",
            tools: ["read_file", "grep", "edit_file"],
            model: "cheap",
            permissionMode: CustomSubagentPermissionMode.READONLY,
          }),
        );
      },
    }).done;
  });
  after(() => harness.close());

  test("explore runs on its configured model, the custom one on its own, the parent on its", () => {
    assert.equal(result.error, undefined);
    const bodies = harness.provider.requests.map(
      (request) => JSON.parse(request.body) as Body & { model: string },
    );
    const model = (match: (body: Body) => boolean) => bodies.find(match)?.model;
    assert.equal(
      model((body) => who(body) === "explore"),
      "fast-model",
    );
    assert.equal(
      model((body) => systemOf(body).includes("REVIEWER_INSTRUCTIONS")),
      "cheap-model",
    );
    assert.equal(
      model((body) => who(body) === "parent"),
      "scripted-model",
    );
  });

  test("a read-only custom subagent gets only its listed read-only tools", () => {
    const reviewer = harness.provider.requests
      .map(parse)
      .find((body) => systemOf(body).includes("REVIEWER_INSTRUCTIONS"));
    assert.deepEqual(toolNames(reviewer as Body), ["read_file", "grep"]);
  });

  test("an unknown type is an error result naming the types; the others complete", () => {
    const last = parse(harness.provider.requests.at(-1) as RecordedRequest);
    const results = toolResults(last).map((message) => [message.tool_call_id, message.content]);
    assert.deepEqual(
      results.slice(0, 2).map(([id, content]) => [id, String(content).split("\n\nagent_id: ")[0]]),
      [
        ["call_x", "Explored."],
        ["call_r", "Reviewed: fine."],
      ],
    );
    assert.match(
      String(results[2]?.[1]),
      /there is no subagent type "nobody"; the types are: explore, general, reviewer/,
    );
  });
});

describe("ask mode", () => {
  test("a general subagent of an ask-mode turn only reads, and its prompt says so", async () => {
    const harness = await startHarness();
    try {
      harness.provider.answer((request) => {
        const body = parse(request);
        if (!systemOf(body).includes("# You are a subagent")) {
          return toolResults(body).length === 0
            ? sse({
                toolCalls: [
                  {
                    id: "call_t",
                    name: "task",
                    arguments: { description: "Look", prompt: "Look", subagent_type: "general" },
                  },
                ],
              })
            : sse({ text: "Answered." });
        }
        return sse({ text: "Looked." });
      });
      const result = await harness.client().startTurn({
        conversationId: "5ab0a9e0-0000-4000-8000-000000000005",
        text: "How does it work?",
        modelId: MODEL,
        edit: (request) => {
          const action = request.action?.action;
          if (action?.case !== "userMessageAction" || action.value.userMessage === undefined) {
            throw new Error("not a user message");
          }
          action.value.userMessage.mode = AgentMode.ASK;
        },
      }).done;
      assert.equal(result.error, undefined);
      assert.equal(result.view.text, "Answered.");
      const child = harness.provider.requests
        .map(parse)
        .find((body) => systemOf(body).includes("# You are a subagent"));
      assert.ok(child !== undefined);
      assert.match(systemOf(child), /# Read-only/);
      assert.deepEqual(toolNames(child), ["read_file", "list_dir", "grep", "glob", "read_lints"]);
    } finally {
      await harness.close();
    }
  });
});

describe("a subagent whose model call fails", () => {
  test("the parent gets an error result saying why, and goes on", async () => {
    const harness = await startHarness();
    try {
      harness.provider.answer((request) => {
        const body = parse(request);
        if (who(body) !== "parent") {
          return {
            type: "status",
            status: 400,
            headers: { "content-type": "application/json" },
            body: JSON.stringify({
              error: { message: "CHILD_MODEL_REFUSED", type: "bad_request" },
            }),
          };
        }
        return toolResults(body).length === 0
          ? sse({
              toolCalls: [
                {
                  id: "call_t",
                  name: "task",
                  arguments: { description: "Try", prompt: "Try", subagent_type: "general" },
                },
              ],
            })
          : sse({ text: "It failed; I will do it myself." });
      });
      const result = await harness.client().startTurn({
        conversationId: "5ab0a9e0-0000-4000-8000-000000000006",
        text: "Go.",
        modelId: MODEL,
      }).done;
      assert.equal(result.error, undefined);
      assert.equal(result.view.text, "It failed; I will do it myself.");
      const last = parse(harness.provider.requests.at(-1) as RecordedRequest);
      const [taskResult] = toolResults(last);
      assert.match(
        String(taskResult?.content),
        /^The subagent did not complete: its turn failed: .*CHILD_MODEL_REFUSED/,
      );
      const completed = result.view.toolCallsCompleted.find((call) => call.callId === "call_t");
      const tool = completed?.toolCall?.tool;
      assert.ok(tool?.case === "taskToolCall");
      assert.equal(tool.value.result?.result.case, "error");
    } finally {
      await harness.close();
    }
  });
});

describe("resume: continuing an earlier subagent", () => {
  test("a later task call with its agent_id continues it with its history; bad ids are refused", async () => {
    const harness = await startHarness();
    const conversationId = "5ab0a9e0-0000-4000-8000-000000000007";
    const first = toSubagentConversationID(conversationId, `${conversationId}:t1:c0:call_a`);
    try {
      harness.provider.answer((request) => {
        const body = parse(request);
        const step = toolResults(body).length;
        if (who(body) !== "parent") {
          // The child: its first answer, then (resumed) an answer that shows it kept its history.
          const users = body.messages.filter((message) => message.role === "user").length;
          return sse({ text: users === 1 ? "Found 3 files." : `Still know: ${users} prompts.` });
        }
        if (step === 0) {
          return sse({
            toolCalls: [
              {
                id: "call_a",
                name: "task",
                arguments: {
                  description: "Count",
                  prompt: "Count files",
                  subagent_type: "explore",
                },
              },
            ],
          });
        }
        if (step === 1) {
          return sse({
            toolCalls: [
              {
                id: "call_b",
                name: "task",
                arguments: {
                  description: "More",
                  prompt: "And the tests?",
                  subagent_type: "general",
                  resume: first,
                },
              },
              {
                id: "call_c",
                name: "task",
                arguments: {
                  description: "Other",
                  prompt: "x",
                  subagent_type: "explore",
                  resume: "someone-else~task~0123",
                },
              },
            ],
          });
        }
        return sse({ text: "Done." });
      });
      const result = await harness.client().startTurn({
        conversationId,
        text: "Go.",
        modelId: MODEL,
      }).done;
      assert.equal(result.error, undefined);
      const last = parse(harness.provider.requests.at(-1) as RecordedRequest);
      const results = toolResults(last).map((message) => [message.tool_call_id, message.content]);
      assert.deepEqual(results[1], ["call_b", `Still know: 2 prompts.\n\nagent_id: ${first}`]);
      assert.match(
        String(results[2]?.[1]),
        /did not complete: there is no subagent "someone-else~task~0123" in this conversation/,
      );
      // One child conversation, two turns; the resumed turn kept the explorer's settings.
      const child = await harness.store.load(first);
      assert.equal(child?.state.turnCount, 2);
      assert.equal(child?.state.parent?.toolCallID, "call_a");
      const resumedBody = harness.provider.requests
        .map(parse)
        .find(
          (body) =>
            who(body) === "explore" && toolNames(body).length > 0 && body.messages.length > 3,
        );
      assert.ok(resumedBody !== undefined, "the resumed call went out with the explorer's prompt");
      assert.ok(!toolNames(resumedBody).includes("write_file"));
    } finally {
      await harness.close();
    }
  });
});

describe("cancel_subagent on a resumed subagent", () => {
  test("each turn of a resumed subagent can be stopped on its own", async () => {
    const harness = await startHarness();
    const conversationId = "5ab0a9e0-0000-4000-8000-000000000008";
    const childID = toSubagentConversationID(conversationId, `${conversationId}:t1:c0:call_a`);
    try {
      writeFileSync(join(harness.workspace, "a.ts"), "export const a = 1;\n");
      harness.provider.answer((request) => {
        const body = parse(request);
        if (who(body) !== "parent") {
          // The child reads whenever its last message is a new prompt.
          return body.messages.at(-1)?.role === "user"
            ? sse({
                toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "a.ts" } }],
              })
            : sse({ text: "unreachable" });
        }
        const step = toolResults(body).length;
        const task = (id: string, extra: Record<string, unknown>) =>
          sse({
            toolCalls: [
              {
                id,
                name: "task",
                arguments: {
                  description: "Read",
                  prompt: "Read a.ts",
                  subagent_type: "general",
                  ...extra,
                },
              },
            ],
          });
        return step === 0
          ? task("call_a", {})
          : step === 1
            ? task("call_b", { resume: childID })
            : sse({ text: "Done." });
      });
      const arrivals = [createGate(), createGate()];
      const releases = [createGate(), createGate()];
      let reads = 0;
      const turn = harness
        .client({
          onExec: async (exec) => {
            if (exec.message.case !== "readArgs") return undefined;
            const index = reads;
            reads += 1;
            arrivals[index]?.open();
            await releases[index]?.promise;
            return undefined;
          },
        })
        .startTurn({ conversationId, text: "Go.", modelId: MODEL });
      const stop = (subagentId: string) =>
        turn.send({
          message: {
            case: "conversationAction",
            value: create(ConversationActionSchema, {
              action: { case: "cancelSubagentAction", value: { subagentId } },
            }),
          },
        });
      await arrivals[0]?.promise;
      await stop("call_a");
      releases[0]?.open();
      await arrivals[1]?.promise;
      await stop("call_b");
      releases[1]?.open();
      const result = await turn.done;
      assert.equal(result.error, undefined);
      assert.equal(result.view.text, "Done.");
      const last = parse(harness.provider.requests.at(-1) as RecordedRequest);
      for (const message of toolResults(last)) {
        assert.match(
          String(message.content),
          /did not complete: it was canceled/,
          message.tool_call_id,
        );
      }
      const child = await harness.store.load(childID);
      assert.equal(child?.state.turnCount, 2);
      assert.equal(child?.state.status, "canceled");
    } finally {
      await harness.close();
    }
  });
});
