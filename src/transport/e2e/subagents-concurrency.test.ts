/**
 * Sibling subagents on one stream (README "Subagents"): the real server, the fake
 * OpenAI-compatible provider on 127.0.0.1 answering from each request, the protocol-faithful
 * test client.
 *
 * - Writes never race across siblings: two `general` subagents each edit a line of the same file
 *   with `edit_file` (read, replace, write the whole file). The client holds the first read until
 *   either the other subagent's read has arrived too (both edits are open at once: one would be
 *   lost) or the server says the second edit waits for the first; both edits must survive.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import type { RecordedRequest } from "../../llm/testing/fake-provider.ts";
import { createGate, type LogLine, MODEL, startHarness } from "./test-harness.ts";

interface Body {
  readonly messages: readonly { role: string; content?: unknown }[];
}
const parse = (request: RecordedRequest): Body => JSON.parse(request.body) as Body;
const isChild = (body: Body) =>
  String(body.messages[0]?.content ?? "").includes("# You are a subagent");
const toolResults = (body: Body) => body.messages.filter((message) => message.role === "tool");
const userText = (body: Body) =>
  String(body.messages.find((message) => message.role === "user")?.content ?? "");
const sse = (reply: Parameters<typeof toChatCompletionSse>[0]) =>
  ({ type: "sse", body: toChatCompletionSse(reply) }) as const;

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
