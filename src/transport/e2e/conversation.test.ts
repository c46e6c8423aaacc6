/**
 * A whole conversation through the real server, as the IDE drives it: thinking, several tool calls
 * in one message, an edit, a streamed shell command, a final answer, then a second turn. The
 * workspace really changes; every delta arrives in order; the provider receives request bodies
 * that extend each other byte for byte, within the turn and across turns.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { type TurnResult, toTurnView } from "../testing/index.ts";
import { API_KEY, type Harness, MODEL, startHarness } from "./test-harness.ts";

const CONVERSATION = "9b2f3c4d-1111-4a5b-8c6d-7e8f9a0b1c2d";

/** The part of a Chat Completions body that must extend: its messages, as bytes. */
function messagesBytes(body: string): string {
  const messages = JSON.parse(body).messages as unknown[];
  return messages.map((message) => JSON.stringify(message)).join("\n");
}

describe("a conversation end to end (RunSSE + BidiAppend)", () => {
  let harness: Harness;
  let first: TurnResult;
  let second: TurnResult;

  before(async () => {
    harness = await startHarness();
    writeFileSync(join(harness.workspace, "greet.ts"), "export const greeting = 'hello';\n");
    harness.reply(
      {
        reasoning: "The user wants the greeting changed. I will look at the file and the folder.",
        text: "Let me look first.",
        toolCalls: [
          { id: "call_read", name: "read_file", arguments: { path: "greet.ts" } },
          { id: "call_ls", name: "list_dir", arguments: { path: "." } },
        ],
        chunkSize: 7,
      },
      {
        text: "Changing it.",
        toolCalls: [
          {
            id: "call_edit",
            name: "edit_file",
            arguments: { path: "greet.ts", old_string: "'hello'", new_string: "'hello, world'" },
          },
        ],
      },
      {
        toolCalls: [
          {
            id: "call_sh",
            name: "shell",
            arguments: { command: "cat greet.ts; echo oops >&2; exit 3" },
          },
        ],
      },
      {
        text: "Done: greeting is now 'hello, world'.",
        usage: { prompt: 900, completion: 12, cached: 800 },
      },
      { text: "Yes, it still says hello, world." },
    );
    const client = harness.client();
    first = await client.startTurn({
      conversationId: CONVERSATION,
      text: "Change the greeting.",
      modelId: MODEL,
    }).done;
    second = await client.startTurn({
      conversationId: CONVERSATION,
      text: "Still fine?",
      modelId: MODEL,
    }).done;
  });
  after(() => harness.close());

  test("the turn ends normally with the final answer and usage", () => {
    assert.equal(first.error, undefined);
    assert.match(
      first.view.text,
      /^Let me look first\.Changing it\.Done: greeting is now 'hello, world'\.$/,
    );
    assert.equal(
      first.view.thinking,
      "The user wants the greeting changed. I will look at the file and the folder.",
    );
    assert.ok(first.view.turnEnded, "turn_ended was sent");
    assert.equal(first.view.usage?.cacheReadTokens, 800);
    assert.ok((first.view.usage?.outputTokens ?? 0) >= 12);
  });

  test("the workspace really changed", () => {
    assert.equal(
      readFileSync(join(harness.workspace, "greet.ts"), "utf8"),
      "export const greeting = 'hello, world';\n",
    );
  });

  test("the reads ran together, the edit and the shell alone after them, each in its own call", () => {
    const started = first.view.toolCallsStarted.map((call) => call.callId);
    const completed = first.view.toolCallsCompleted.map((call) => call.callId);
    assert.deepEqual(started, ["call_read", "call_ls", "call_edit", "call_sh"]);
    // read_file and list_dir are read-only: both go out before either completes (their
    // completions may come in either order); the edit and the shell each run alone, in order.
    assert.deepEqual([...completed.slice(0, 2)].sort(), ["call_ls", "call_read"]);
    assert.deepEqual(completed.slice(2), ["call_edit", "call_sh"]);
    // The edit starts only once both reads completed (parallel-tools.test.ts shows the reads
    // are in flight together).
    const sequence = first.view.kinds.filter((kind) =>
      ["toolCallStarted", "toolCallCompleted"].includes(kind),
    );
    assert.deepEqual(sequence.slice(4), [
      "toolCallStarted",
      "toolCallCompleted",
      "toolCallStarted",
      "toolCallCompleted",
    ]);
    assert.deepEqual(
      first.view.toolCallsCompleted.slice(2).map((call) => call.variant),
      ["editToolCall", "shellToolCall"],
    );
    // Each client exec is sent after its call started (the edit is a read then a write).
    const execs = first.view.kinds.filter((kind) => kind.startsWith("exec:"));
    assert.deepEqual(execs, [
      "exec:readArgs",
      "exec:lsArgs",
      "exec:readArgs",
      "exec:writeArgs",
      "exec:shellStreamArgs",
    ]);
    assert.ok(first.view.kinds.includes("conversationCheckpointUpdate"));
  });

  test("shell output streamed live, with both streams and the exit code", () => {
    assert.match(first.view.shellOutput.stdout, /hello, world/);
    assert.match(first.view.shellOutput.stderr, /oops/);
    assert.equal(first.view.shellOutput.exitCode, 3);
  });

  test("every text delta arrived in the provider's order, none lost or repeated", () => {
    const deltas = toTurnView(first.messages).text;
    assert.equal(deltas, "Let me look first.Changing it.Done: greeting is now 'hello, world'.");
  });

  test("the model was called once per step, each after the previous tool results", () => {
    assert.equal(harness.provider.requests.length, 5);
    const roles = harness.provider.requests.map((request) =>
      (JSON.parse(request.body).messages as { role: string }[]).map((m) => m.role).join(","),
    );
    assert.deepEqual(roles.slice(0, 4), [
      "system,user",
      "system,user,assistant,tool,tool",
      "system,user,assistant,tool,tool,assistant,tool",
      "system,user,assistant,tool,tool,assistant,tool,assistant,tool",
    ]);
  });

  test("request bodies extend each other byte for byte, within the turn and across turns", () => {
    const bodies = harness.provider.requests.map((request) => messagesBytes(request.body));
    for (let i = 1; i < bodies.length; i += 1) {
      const previous = bodies[i - 1] as string;
      assert.ok(
        (bodies[i] as string).startsWith(previous),
        `request ${i + 1} extends request ${i}`,
      );
    }
    const systemPrompts = harness.provider.requests.map(
      (request) => (JSON.parse(request.body).messages as { content: unknown }[])[0]?.content,
    );
    assert.equal(
      new Set(systemPrompts.map((p) => JSON.stringify(p))).size,
      1,
      "one byte-stable system prompt",
    );
    // The golden prompt of agent mode, and one byte-identical tool list across turns and steps.
    const golden = readFileSync(
      new URL("../cursor/fixtures/prompt/agent.txt", import.meta.url),
      "utf8",
    ).replace(/\n$/, "");
    assert.equal(systemPrompts[0], golden);
    const tools = harness.provider.requests.map((request) =>
      JSON.stringify(JSON.parse(request.body).tools),
    );
    assert.equal(new Set(tools).size, 1, "one byte-stable tool list");
  });

  test("the second turn sees the first and ends normally", () => {
    assert.equal(second.error, undefined);
    assert.equal(second.view.text, "Yes, it still says hello, world.");
  });

  test("the store holds the complete history once; no key anywhere", async () => {
    const loaded = await harness.store.load(CONVERSATION);
    assert.deepEqual(
      loaded?.state.messages.map((m) => m.role),
      [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
        "assistant",
        "user",
        "assistant",
      ],
    );
    assert.ok(!JSON.stringify(loaded).includes(API_KEY));
    for (const line of harness.logs) assert.ok(!JSON.stringify(line).includes(API_KEY));
  });
});
