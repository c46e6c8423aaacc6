/**
 * The loop's subagent decisions (subagent.ts): the child's tool set and model, its conversation
 * id, and the property that a subagent never gets a call to a tool outside its set to the client.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { Tool } from "../llm/types.ts";
import { toCallID } from "./ids.ts";
import { createConversation } from "./state.ts";
import {
  EXPLORE,
  GENERAL,
  type SubagentDefinition,
  toRefusedResults,
  toRootConversationID,
  toStickySubagentSettings,
  toSubagentConversationID,
  toSubagentModel,
  toSubagentSettings,
} from "./subagent.ts";
import {
  assistantMessage,
  CONVERSATION_ID,
  checkedTransition,
  result,
  start,
  streamed,
  toolCall,
} from "./testing.ts";
import type { Command, Input, RuntimeState, TurnSettings } from "./types.ts";

const tool = (name: string): Tool => ({
  name,
  description: name,
  parameters: { type: "object", properties: {} },
});

const PARENT: TurnSettings = {
  model: "big",
  fallbacks: ["backup"],
  systemPrompt: "parent prompt",
  tools: ["read_file", "grep", "edit_file", "shell", "task"].map(tool),
  readOnlyTools: ["read_file", "grep"],
  concurrentTools: ["task"],
  modelOptions: { thinking: true },
};

const names = (settings: TurnSettings) => settings.tools.map((entry) => entry.name);

describe("toSubagentSettings", () => {
  test("explore: only the parent's read-only tools, refused outside them", () => {
    const settings = toSubagentSettings(PARENT, EXPLORE, { model: "big", systemPrompt: "sub" });
    assert.deepEqual(names(settings), ["read_file", "grep"]);
    assert.deepEqual(settings.readOnlyTools, ["read_file", "grep"]);
    assert.equal(settings.onlyOfferedTools, true);
    assert.equal(settings.systemPrompt, "sub");
    assert.equal(settings.concurrentTools, undefined);
    // The parent's options and fallbacks stay on the parent's model (a failing primary fails
    // the subagent over too); another model's fallbacks are its own.
    assert.deepEqual(settings.modelOptions, { thinking: true });
    assert.deepEqual(settings.fallbacks, ["backup"]);
    const other = toSubagentSettings(PARENT, EXPLORE, { model: "small", systemPrompt: "sub" });
    assert.equal(other.fallbacks, undefined);
  });

  test("a read-only type gets only the effect-free tools, never an MCP tool claiming read-only", () => {
    const parent: TurnSettings = {
      ...PARENT,
      tools: [...PARENT.tools, tool("mcp__db__drop_table")],
      // The batching list trusts the MCP server's readOnlyHint.
      readOnlyTools: ["read_file", "grep", "mcp__db__drop_table"],
    };
    const options = { model: "big", systemPrompt: "sub", effectFree: ["read_file", "grep"] };
    const explore = toSubagentSettings(parent, EXPLORE, options);
    assert.deepEqual(names(explore), ["read_file", "grep"]);
    const call = toolCall("c1", "mcp__db__drop_table", {});
    assert.notEqual(toRefusedResults(explore, [call], 1)[0], null);
    // Batching turned off (readOnlyTools: []) still leaves the explorer its reads.
    const unbatched = toSubagentSettings({ ...parent, readOnlyTools: [] }, EXPLORE, options);
    assert.deepEqual(names(unbatched), ["read_file", "grep"]);
    // A read-only custom subagent that names the MCP tool explicitly gets it (the user's choice).
    const named: SubagentDefinition = {
      name: "dba",
      instructions: "",
      tools: ["grep", "mcp__db__drop_table"],
      readOnly: true,
      model: "",
    };
    assert.deepEqual(names(toSubagentSettings(parent, named, options)), [
      "grep",
      "mcp__db__drop_table",
    ]);
  });

  test("general: every tool of the parent but task (no nesting) and the withheld ones", () => {
    const settings = toSubagentSettings(PARENT, GENERAL, { model: "big", systemPrompt: "sub" });
    assert.deepEqual(names(settings), ["read_file", "grep", "edit_file", "shell"]);
    const withheld = toSubagentSettings(PARENT, GENERAL, {
      model: "big",
      systemPrompt: "sub",
      withheld: ["shell"],
    });
    assert.deepEqual(names(withheld), ["read_file", "grep", "edit_file"]);
  });

  test("custom: the named tools within the parent's; read-only narrows them further", () => {
    const custom: SubagentDefinition = {
      name: "fixer",
      instructions: "fix",
      tools: ["edit_file", "grep", "web_search", "task"],
      readOnly: false,
      model: "",
    };
    const model = { model: "big", systemPrompt: "sub" };
    assert.deepEqual(names(toSubagentSettings(PARENT, custom, model)), ["grep", "edit_file"]);
    assert.deepEqual(names(toSubagentSettings(PARENT, { ...custom, readOnly: true }, model)), [
      "grep",
    ]);
  });
});

test("a subagent on the parent's model starts on the parent's sticky model after a failover", () => {
  const child = toSubagentSettings(PARENT, GENERAL, { model: "big", systemPrompt: "sub" });
  const failedOver = { settings: PARENT, route: { requested: "big", model: "backup" } };
  const sticky = toStickySubagentSettings(child, failedOver);
  assert.equal(sticky.model, "backup");
  assert.deepEqual(sticky.fallbacks, ["big"]);
  // No route, another model, or a route for another request: unchanged.
  assert.equal(toStickySubagentSettings(child, { settings: PARENT }), child);
  const other = toSubagentSettings(PARENT, GENERAL, { model: "small", systemPrompt: "sub" });
  assert.equal(toStickySubagentSettings(other, failedOver), other);
  const stale = { settings: PARENT, route: { requested: "other", model: "backup" } };
  assert.equal(toStickySubagentSettings(child, stale), child);
});

describe("toSubagentModel", () => {
  const configured = new Set(["big", "fast", "cheap"]);
  const isConfigured = (model: string) => configured.has(model);
  const choose = (override: string | undefined, requested: string, definition: string) =>
    toSubagentModel({ override, requested, definition, parent: "big", isConfigured });

  test("the operator's override, then the call's, then the definition's, then the parent's", () => {
    assert.equal(choose("cheap", "fast", "fast"), "cheap");
    assert.equal(choose(undefined, "fast", "cheap"), "fast");
    assert.equal(choose(undefined, "", "cheap"), "cheap");
    assert.equal(choose(undefined, "", ""), "big");
  });

  test("models that are not configured, and `inherit`, are skipped", () => {
    assert.equal(choose("gone", "unknown", "inherit"), "big");
    assert.equal(choose("gone", "unknown", "fast"), "fast");
  });
});

test("a subagent's conversation id is stable per parent call and distinct across calls", () => {
  const a = toSubagentConversationID("conv", "conv:t1:c0:call_0");
  assert.equal(a, toSubagentConversationID("conv", "conv:t1:c0:call_0"));
  assert.notEqual(a, toSubagentConversationID("conv", "conv:t1:c1:call_0"));
  assert.ok(a.startsWith("conv~task~"));
});

test("a subagent's conversation, at any depth, has its top-level conversation as root", () => {
  const child = toSubagentConversationID("conv", "conv:t1:c0:call_0");
  const grandchild = toSubagentConversationID(child, `${child}:t1:c0:call_0`);
  assert.equal(toRootConversationID(child), "conv");
  assert.equal(toRootConversationID(grandchild), "conv");
  assert.equal(toRootConversationID("conv"), "conv");
});

test("without onlyOfferedTools nothing is refused", () => {
  const calls = [toolCall("a", "shell")];
  assert.deepEqual(toRefusedResults(PARENT, calls, 0), [null]);
  assert.deepEqual(toRefusedResults(null, calls, 0), [null]);
});

test("property: a subagent never sends a call to a tool outside its set to the client", () => {
  const offered = toSubagentSettings(PARENT, EXPLORE, { model: "big", systemPrompt: "sub" });
  const allowed = new Set(names(offered));
  const toolName = fc.constantFrom("read_file", "grep", "edit_file", "shell", "task", "delete");
  fc.assert(
    fc.property(
      fc.array(fc.array(toolName, { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 4 }),
      (responses) => {
        let state: RuntimeState = createConversation(CONVERSATION_ID);
        const sent: Command[] = [];
        const apply = (input: Input) => {
          const step = checkedTransition(state, input);
          state = step.state;
          sent.push(step.command);
          return step;
        };
        apply(start("go", { settings: offered }));
        responses.forEach((tools, step) => {
          const callID = toCallID(CONVERSATION_ID, "t1", step);
          const calls = tools.map((name, i) => toolCall(`s${step}-${i}`, name));
          for (const input of streamed(callID, assistantMessage(calls))) apply(input);
          // Answer every call the client was asked for, in order, until the next model call.
          for (const call of calls) {
            if (state.committed.status !== "waiting_client") break;
            const waiting = state.committed.waiting;
            const index = waiting?.calls.findIndex((entry) => entry.id === call.id) ?? -1;
            if (index < 0 || index < (waiting?.answered ?? 0) || waiting?.early[index]) continue;
            apply(result(call, "ok"));
          }
        });
        for (const command of sent) {
          const calls =
            command.type === "call_client"
              ? [command]
              : command.type === "call_clients"
                ? command.calls
                : [];
          for (const call of calls) assert.ok(allowed.has(call.toolCall.name), call.toolCall.name);
        }
      },
    ),
    { numRuns: 200 },
  );
});

test("property: task calls batch together, never with reads; any arrival order gives one history", () => {
  const settings: TurnSettings = {
    model: "big",
    systemPrompt: "parent",
    tools: ["read", "shell", "task"].map(tool),
    readOnlyTools: ["read"],
    concurrentTools: ["task"],
  };
  const run = (names: readonly string[], keys: readonly number[]) => {
    let state: RuntimeState = createConversation(CONVERSATION_ID);
    const batches: string[][] = [];
    let command = { type: "wait_input" } as Command;
    const apply = (input: Input) => {
      const step = checkedTransition(state, input);
      state = step.state;
      command = step.command;
    };
    apply(start("go", { settings }));
    const calls = names.map((name, i) => toolCall(`c${i}`, name));
    const callID = toCallID(CONVERSATION_ID, "t1", 0);
    for (const input of streamed(callID, assistantMessage(calls))) apply(input);
    while (command.type === "call_client" || command.type === "call_clients") {
      const batch = command.type === "call_client" ? [command] : command.calls;
      batches.push(batch.map((call) => call.toolCall.name));
      // Answer the batch in the order the keys give (a client finishing them in any order).
      const order = batch
        .map((call, i) => ({
          call,
          key: keys[(Number(call.toolCall.id.slice(1)) + i) % keys.length] ?? 0,
        }))
        .sort((a, b) => a.key - b.key);
      for (const { call } of order) apply(result(call.toolCall, `done ${call.toolCall.id}`));
    }
    return { batches, messages: state.committed.messages, command };
  };
  fc.assert(
    fc.property(
      fc.array(fc.constantFrom("read", "shell", "task"), { minLength: 1, maxLength: 7 }),
      fc.array(fc.integer({ min: 0, max: 100 }), { minLength: 1, maxLength: 7 }),
      (names, keys) => {
        const shuffled = run(names, keys);
        const inOrder = run(names, [0]);
        assert.equal(shuffled.command.type, "call_llm");
        // Each batch is one read run, one task run, or a single call; runs are maximal.
        for (const batch of shuffled.batches) {
          const kinds = new Set(batch);
          assert.equal(kinds.size, 1, batch.join(","));
          if (batch.length > 1) assert.notEqual(batch[0], "shell");
        }
        assert.deepEqual(shuffled.batches.flat(), names);
        shuffled.batches.forEach((batch, i) => {
          const next = shuffled.batches[i + 1];
          if (next !== undefined && batch[0] !== "shell") assert.notEqual(next[0], batch[0]);
        });
        // Results in content order, whatever order they came in: the same history.
        assert.deepEqual(shuffled.messages, inOrder.messages);
      },
    ),
    { numRuns: 300 },
  );
});
