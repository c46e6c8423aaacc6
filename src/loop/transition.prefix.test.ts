/**
 * The prefix-cache guarantee (docs/design.md §9) over serialised bytes: every request's messages
 * are a strict byte prefix of the next request's, within a turn and across turns.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Message } from "../llm/types.ts";
import { toCanonicalJSON } from "./canonical-json.ts";
import { hashHistory } from "./history-hash.ts";
import { createConversation } from "./state.ts";
import {
  assistantMessage,
  CONVERSATION_ID,
  type Driven,
  drive,
  start,
  text,
  thinking,
  toolCall,
} from "./testing.ts";
import type { CallLLMCommand, ContextSupplement } from "./types.ts";

/** The request's messages as bytes: each message's canonical JSON, newline-terminated. */
function toBytes(messages: readonly Message[]): string {
  return messages.map((message) => `${toCanonicalJSON(message)}\n`).join("");
}

function threeCallTurn(): Driven {
  const read = toolCall("toolu_01", "read", { path: "src/app.ts" });
  const edit = toolCall("toolu_02", "edit", { path: "src/app.ts", old: "a", new: "b" });
  const lint = toolCall("toolu_03", "read_lints", { paths: ["src/app.ts"] });
  return drive(createConversation(CONVERSATION_ID), start("fix the bug"), {
    responses: [
      assistantMessage([thinking("look first", "sig1"), read]),
      assistantMessage([text("Fixing."), edit, lint]),
      assistantMessage([text("Fixed: `a` is now `b`.")]),
    ],
    reverseResults: true,
  });
}

function assertPrefixChain(calls: readonly CallLLMCommand[]): void {
  for (let i = 1; i < calls.length; i += 1) {
    const before = calls[i - 1] as CallLLMCommand;
    const after = calls[i] as CallLLMCommand;
    const a = toBytes(before.request.messages);
    const b = toBytes(after.request.messages);
    assert.ok(b.length > a.length, `request ${i + 1} is not longer than request ${i}`);
    assert.equal(b.slice(0, a.length), a, `request ${i}'s messages are not a prefix of ${i + 1}'s`);
    assert.equal(
      hashHistory(after.request.messages.slice(0, before.messageCount)).chainHash,
      before.messagesHash,
    );
    assert.equal(after.request.systemPrompt, before.request.systemPrompt);
    assert.equal(toCanonicalJSON(after.request.tools), toCanonicalJSON(before.request.tools));
  }
}

describe("prefix relation", () => {
  test("request 1 ⊂ request 2 ⊂ request 3 within a turn with tool calls", () => {
    const driven = threeCallTurn();
    assert.equal(driven.calls.length, 3);
    assertPrefixChain(driven.calls);
  });

  test("each call carries the hashes of exactly the messages it sends", () => {
    for (const call of threeCallTurn().calls) {
      const hashes = hashHistory(call.request.messages);
      assert.equal(call.messagesHash, hashes.chainHash);
      assert.equal(call.lastMessageHash, hashes.lastMessageHash);
      assert.equal(call.messageCount, call.request.messages.length);
    }
  });

  test("across turns, with changing context, the prefix still holds", () => {
    const env = (cwd: string): ContextSupplement => ({ key: "environment", text: `cwd: ${cwd}` });
    const rules: ContextSupplement = { key: "rules", text: "Use tabs." };
    const first = threeCallTurn();
    const second = drive(first.state, start("and the tests?", { context: [env("/repo"), rules] }), {
      responses: [assistantMessage([text("They pass.")])],
    });
    const third = drive(second.state, start("now in /other", { context: [env("/other"), rules] }), {
      responses: [assistantMessage([text("OK.")])],
    });
    assertPrefixChain([...first.calls, ...second.calls, ...third.calls]);
  });
});

describe("context supplements", () => {
  const env: ContextSupplement = { key: "environment", text: "OS: linux\ncwd: /repo" };
  const rules: ContextSupplement = { key: "rules", text: "Always run the tests." };
  const reply = assistantMessage([text("ok")]);

  function userTurnContent(driven: Driven): unknown {
    const call = driven.calls[0] as CallLLMCommand;
    return call.request.messages.at(-1)?.content;
  }

  test("new context is prepended to the turn's user message, in order", () => {
    const first = drive(
      createConversation(CONVERSATION_ID),
      start("hi", { context: [env, rules] }),
      {
        responses: [reply],
      },
    );
    assert.deepEqual(userTurnContent(first), [
      { type: "text", text: env.text },
      { type: "text", text: rules.text },
      { type: "text", text: "hi" },
    ]);
  });

  test("unchanged context adds nothing; a changed key adds only that key", () => {
    const first = drive(
      createConversation(CONVERSATION_ID),
      start("hi", { context: [env, rules] }),
      {
        responses: [reply],
      },
    );
    const same = drive(first.state, start("again", { context: [env, rules] }), {
      responses: [reply],
    });
    assert.equal(userTurnContent(same), "again");
    const moved = { key: "environment", text: "OS: linux\ncwd: /elsewhere" };
    const changed = drive(same.state, start("moved", { context: [moved, rules] }), {
      responses: [reply],
    });
    assert.deepEqual(userTurnContent(changed), [
      { type: "text", text: moved.text },
      { type: "text", text: "moved" },
    ]);
  });
});
