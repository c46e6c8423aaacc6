/**
 * Sibling subagents on one stream (README "Subagents"): the real server, the fake
 * OpenAI-compatible provider on 127.0.0.1 answering from each request, the protocol-faithful
 * test client.
 *
 * - Writes never race across siblings: two `general` subagents each edit a line of the same file
 *   with `edit_file` (read, replace, write the whole file). The client holds the first read until
 *   either the other subagent's read has arrived too (both edits are open at once: one would be
 *   lost) or the server says the second edit waits for the first; both edits must survive.
 * - Call ids on the wire never collide: the parent's task calls are `call_0`/`call_1` and both
 *   explore subagents' models call `read_file` as `call_0` (providers reuse ids); every tool call
 *   the client sees has its own id, and each child's history keeps the id its model sent.
 * - Limits: task calls beyond `subagentMaxConcurrent` get a result saying so; a subagent that
 *   keeps calling tools is stopped after `subagentMaxSteps` model calls.
 * - Context: a subagent starts with the parent's rules.
 * - Routing: after the parent failed over, a subagent on its model starts on the fallback.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { create, fromBinary } from "@bufbuild/protobuf";
import { toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import type { RecordedRequest } from "../../llm/testing/fake-provider.ts";
import {
  type InteractionUpdate,
  InteractionUpdateSchema,
} from "../cursor/gen/agent/v1/interaction_update_pb.js";
import { RequestContextSchema } from "../cursor/gen/agent/v1/request_context_pb.js";
import { DEFAULT_SERVER_OPTIONS } from "../server.ts";
import type { TurnResult } from "../testing/index.ts";
import { API_KEY, createGate, type LogLine, MODEL, startHarness } from "./test-harness.ts";

interface Body {
  readonly messages: readonly { role: string; content?: unknown }[];
}
const parse = (request: RecordedRequest): Body => JSON.parse(request.body) as Body;
const isChild = (body: Body) =>
  String(body.messages[0]?.content ?? "").includes("# You are a subagent");
const toolResults = (body: Body) => body.messages.filter((message) => message.role === "tool");
const userText = (body: Body): string => {
  // The task prompt is the last part of the first user message; the context comes before it.
  const content = body.messages.find((message) => message.role === "user")?.content;
  if (!Array.isArray(content)) return String(content ?? "");
  const last: unknown = content.at(-1);
  return typeof last === "object" && last !== null && "text" in last ? String(last.text) : "";
};
const userTextAll = (body: Body): string =>
  JSON.stringify(body.messages.find((message) => message.role === "user")?.content ?? "");
const sse = (reply: Parameters<typeof toChatCompletionSse>[0]) =>
  ({ type: "sse", body: toChatCompletionSse(reply) }) as const;

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

/** Calls `listener` for every log line from now on. */
function onLog(logs: LogLine[], listener: (line: LogLine) => void): void {
  const push = logs.push.bind(logs);
  logs.push = (...lines: LogLine[]) => {
    for (const line of lines) listener(line);
    return push(...lines);
  };
}

describe("sibling subagents with effects", () => {
  test("two general subagents editing one file: both edits survive", async () => {
    const harness = await startHarness();
    try {
      writeFileSync(join(harness.workspace, "f.ts"), "export const a = 1;\nexport const b = 1;\n");
      harness.provider.answer((request) => {
        const body = parse(request);
        const step = toolResults(body).length;
        if (!isChild(body)) {
          return step === 0
            ? sse({
                toolCalls: ["a", "b"].map((name) => ({
                  id: `call_${name}`,
                  name: "task",
                  arguments: {
                    description: name,
                    prompt: `set ${name} to 2`,
                    subagent_type: "general",
                  },
                })),
              })
            : sse({ text: "done" });
        }
        const name = userText(body).includes("set a") ? "a" : "b";
        return step === 0
          ? sse({
              toolCalls: [
                {
                  id: `edit_${name}`,
                  name: "edit_file",
                  arguments: {
                    path: "f.ts",
                    old_string: `export const ${name} = 1;`,
                    new_string: `export const ${name} = 2;`,
                  },
                },
              ],
            })
          : sse({ text: `edited ${name}` });
      });
      const release = createGate();
      let reads = 0;
      let waited = 0;
      onLog(harness.logs, (line) => {
        if (line.message.startsWith("subagent tool call waits")) {
          waited += 1;
          release.open();
        }
      });
      const client = harness.client({
        onExec: async (exec) => {
          if (exec.message.case === "readArgs") {
            reads += 1;
            if (reads === 2) release.open();
            await release.promise;
          }
          return undefined;
        },
      });
      const result = await client.startTurn({
        conversationId: "5ab0a9e0-0000-4000-8000-0000000000c1",
        text: "Set both to 2.",
        modelId: MODEL,
      }).done;
      assert.equal(result.error, undefined, result.error?.message);
      assert.equal(
        readFileSync(join(harness.workspace, "f.ts"), "utf8"),
        "export const a = 2;\nexport const b = 2;\n",
      );
      assert.equal(waited, 1, "the second edit waited for the first");
    } finally {
      await harness.close();
    }
  });
});

describe("call ids on the wire", () => {
  test("children reusing their model's call ids: every call the client sees has its own id", async () => {
    const harness = await startHarness();
    try {
      writeFileSync(join(harness.workspace, "a.ts"), "AAA\n");
      writeFileSync(join(harness.workspace, "b.ts"), "BBB\n");
      harness.provider.answer((request) => {
        const body = parse(request);
        const step = toolResults(body).length;
        if (!isChild(body)) {
          return step === 0
            ? sse({
                toolCalls: ["a", "b"].map((name, at) => ({
                  id: `call_${at}`,
                  name: "task",
                  arguments: {
                    description: name,
                    prompt: `read ${name}.ts`,
                    subagent_type: "explore",
                  },
                })),
              })
            : sse({ text: "done" });
        }
        const file = userText(body).includes("a.ts") ? "a.ts" : "b.ts";
        return step === 0
          ? sse({ toolCalls: [{ id: "call_0", name: "read_file", arguments: { path: file } }] })
          : sse({ text: `${file}: ${JSON.stringify(toolResults(body)[0]?.content)}` });
      });
      const conversationId = "5ab0a9e0-0000-4000-8000-0000000000c2";
      const execs: { toolCallId: string }[] = [];
      const client = harness.client({
        onExec: async (exec) => {
          if (exec.message.case === "readArgs") execs.push(exec.message.value);
          return undefined;
        },
      });
      const result = await client.startTurn({ conversationId, text: "go", modelId: MODEL }).done;
      assert.equal(result.error, undefined, result.error?.message);
      // The parent's task cards at the top level, the children's reads inside them, and the
      // reads' execs: one id each.
      const started = [...result.view.toolCallsStarted.map((call) => call.callId)];
      for (const card of ["call_0", "call_1"]) {
        for (const update of nestedUpdates(result, card)) {
          if (update.message.case === "toolCallStarted") started.push(update.message.value.callId);
        }
      }
      assert.equal(started.length, 4);
      assert.equal(new Set(started).size, 4, `call ids collide: ${started.join(", ")}`);
      const execIDs = execs.map((exec) => exec.toolCallId);
      assert.equal(execIDs.length, 2);
      assert.equal(new Set([...started, ...execIDs]).size, 4, `exec ids: ${execIDs.join(", ")}`);
      // Each explorer read its own file, and its history keeps its model's id.
      const last = parse(harness.provider.requests.at(-1) as RecordedRequest);
      const answers = toolResults(last).map((message) => String(message.content));
      assert.ok(answers[0]?.includes("AAA") && answers[1]?.includes("BBB"), answers.join(" | "));
      const children = harness.provider.requests
        .map(parse)
        .filter((body) => isChild(body) && toolResults(body).length === 1);
      assert.equal(children.length, 2);
      for (const body of children) {
        const tool = body.messages.find((message) => message.role === "tool") as
          | { tool_call_id?: string }
          | undefined;
        assert.equal(tool?.tool_call_id, "call_0");
      }
    } finally {
      await harness.close();
    }
  });
});

describe("limits", () => {
  test("subagents beyond maxConcurrent are refused with a clear result; the others run at once", async () => {
    const harness = await startHarness({
      server: { stream: { ...DEFAULT_SERVER_OPTIONS.stream, subagentMaxConcurrent: 2 } },
    });
    try {
      for (const name of ["a", "b", "c"]) {
        writeFileSync(join(harness.workspace, `${name}.ts`), `${name.toUpperCase()}\n`);
      }
      harness.provider.answer((request) => {
        const body = parse(request);
        const step = toolResults(body).length;
        if (!isChild(body)) {
          return step === 0
            ? sse({
                toolCalls: ["a", "b", "c"].map((name) => ({
                  id: `call_${name}`,
                  name: "task",
                  arguments: {
                    description: name,
                    prompt: `read ${name}.ts`,
                    subagent_type: "explore",
                  },
                })),
              })
            : sse({ text: "done" });
        }
        const file = /read (\w)\.ts/.exec(userText(body))?.[1] ?? "?";
        return step === 0
          ? sse({ toolCalls: [{ id: "r", name: "read_file", arguments: { path: `${file}.ts` } }] })
          : sse({ text: `read ${file}` });
      });
      // Each running child's read waits for the other's: two run at once.
      const bothRead = createGate();
      let reads = 0;
      const client = harness.client({
        onExec: async (exec) => {
          if (exec.message.case === "readArgs") {
            reads += 1;
            if (reads === 2) bothRead.open();
            await bothRead.promise;
          }
          return undefined;
        },
      });
      const result = await client.startTurn({
        conversationId: "5ab0a9e0-0000-4000-8000-0000000000c3",
        text: "go",
        modelId: MODEL,
      }).done;
      assert.equal(result.error, undefined, result.error?.message);
      assert.equal(reads, 2);
      const last = parse(harness.provider.requests.at(-1) as RecordedRequest);
      const answers = toolResults(last).map((message) => String(message.content));
      assert.match(answers[0] ?? "", /read a/);
      assert.match(answers[1] ?? "", /read b/);
      assert.match(answers[2] ?? "", /at most 2 subagents run at once/);
    } finally {
      await harness.close();
    }
  });

  test("a subagent that never stops calling tools is stopped after maxSteps model calls", async () => {
    const harness = await startHarness({
      server: { stream: { ...DEFAULT_SERVER_OPTIONS.stream, subagentMaxSteps: 3 } },
    });
    try {
      writeFileSync(join(harness.workspace, "a.ts"), "A\n");
      harness.provider.answer((request) => {
        const body = parse(request);
        const step = toolResults(body).length;
        if (!isChild(body)) {
          return step === 0
            ? sse({
                toolCalls: [
                  {
                    id: "call_loop",
                    name: "task",
                    arguments: { description: "loop", prompt: "loop", subagent_type: "explore" },
                  },
                ],
              })
            : sse({ text: "stopped" });
        }
        return sse({
          text: `step ${step + 1}`,
          toolCalls: [{ id: `r${step}`, name: "read_file", arguments: { path: "a.ts" } }],
        });
      });
      const result = await harness.client().startTurn({
        conversationId: "5ab0a9e0-0000-4000-8000-0000000000c4",
        text: "go",
        modelId: MODEL,
      }).done;
      assert.equal(result.error, undefined, result.error?.message);
      const childCalls = harness.provider.requests.map(parse).filter(isChild);
      assert.equal(childCalls.length, 3);
      const last = parse(harness.provider.requests.at(-1) as RecordedRequest);
      const [answer] = toolResults(last).map((message) => String(message.content));
      assert.match(answer ?? "", /limit of 3 steps reached.*its last text: step 3/);
    } finally {
      await harness.close();
    }
  });
});

describe("a subagent's context", () => {
  test("a subagent starts with the parent's rules, which its system prompt refers to", async () => {
    const harness = await startHarness();
    try {
      harness.provider.answer((request) => {
        const body = parse(request);
        if (isChild(body)) return sse({ text: "followed" });
        return toolResults(body).length === 0
          ? sse({
              toolCalls: [
                {
                  id: "call_t",
                  name: "task",
                  arguments: { description: "t", prompt: "TASK_PROMPT", subagent_type: "general" },
                },
              ],
            })
          : sse({ text: "done" });
      });
      const result = await harness.client().startTurn({
        conversationId: "5ab0a9e0-0000-4000-8000-0000000000c5",
        text: "go",
        modelId: MODEL,
        edit: (request) => {
          const action = request.action?.action;
          if (action?.case !== "userMessageAction") throw new Error("not a user message");
          action.value.requestContext ??= create(RequestContextSchema);
          action.value.requestContext.cloudRule = "TEAM_RULE_USE_TABS";
        },
      }).done;
      assert.equal(result.error, undefined, result.error?.message);
      const child = harness.provider.requests.map(parse).find(isChild);
      const user = child === undefined ? "" : userTextAll(child);
      assert.match(user, /<rules>.*TEAM_RULE_USE_TABS/);
      assert.match(user, /TASK_PROMPT/);
    } finally {
      await harness.close();
    }
  });
});

describe("a subagent after the parent failed over", () => {
  test("it starts on the parent's sticky fallback, not on the failing primary", async () => {
    const harness = await startHarness({
      models: (url) => {
        const compatible = { api: "openai-compatible", baseUrl: url, apiKey: API_KEY };
        return [
          { ...compatible, name: "main", model: "main-up", fallbacks: ["spare"] },
          { ...compatible, name: "spare", model: "spare-up" },
        ];
      },
      health: { cooldownAfter429s: 1000 },
    });
    try {
      harness.provider.answer((request) => {
        const body = JSON.parse(request.body) as Body & { model: string };
        if (body.model === "main-up") {
          return { type: "status", status: 429, body: '{"error":"slow down"}' };
        }
        if (isChild(body)) return sse({ text: "child answer" });
        return toolResults(body).length === 0
          ? sse({
              toolCalls: [
                {
                  id: "call_t",
                  name: "task",
                  arguments: { description: "t", prompt: "t", subagent_type: "general" },
                },
              ],
            })
          : sse({ text: "done" });
      });
      const result = await harness.client().startTurn({
        conversationId: "5ab0a9e0-0000-4000-8000-0000000000c6",
        text: "go",
        modelId: "main",
      }).done;
      assert.equal(result.error, undefined, result.error?.message);
      const childModels = harness.provider.requests
        .map((request) => JSON.parse(request.body) as Body & { model: string })
        .filter(isChild)
        .map((body) => body.model);
      assert.deepEqual(childModels, ["spare-up"]);
    } finally {
      await harness.close();
    }
  });
});
