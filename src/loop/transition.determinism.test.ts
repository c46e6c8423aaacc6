/**
 * Determinism over serialised bytes: the same state and input give byte-identical state, emitted
 * events, command and hashes — also after the state went through JSON (as it does in the store).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { toCanonicalJSON } from "./canonical-json.ts";
import { createConversation } from "./state.ts";
import {
  assistantMessage,
  CONVERSATION_ID,
  drive,
  type Script,
  start,
  text,
  thinking,
  toolCall,
} from "./testing.ts";
import { transition } from "./transition.ts";
import type { RuntimeState } from "./types.ts";

const script: Script = {
  responses: [
    assistantMessage([
      thinking("plan", "sig"),
      toolCall("a", "read", { path: "x" }),
      toolCall("b", "ls", {}),
    ]),
    assistantMessage([text("Done.")]),
  ],
  reverseResults: true,
};

describe("determinism", () => {
  test("two runs of the same inputs give byte-identical transitions", () => {
    const first = drive(
      createConversation(CONVERSATION_ID),
      start("go", { inputID: "in-1" }),
      script,
    );
    const second = drive(
      createConversation(CONVERSATION_ID),
      start("go", { inputID: "in-1" }),
      script,
    );
    assert.equal(first.transitions.length, second.transitions.length);
    first.transitions.forEach((step, i) => {
      assert.equal(
        toCanonicalJSON(step),
        toCanonicalJSON(second.transitions[i]),
        `transition ${i}`,
      );
    });
  });

  test("a state restored from its JSON continues exactly like the original", () => {
    const driven = drive(createConversation(CONVERSATION_ID), start("go"), script);
    let state = createConversation(CONVERSATION_ID);
    for (const [i, input] of driven.inputs.entries()) {
      const restored: RuntimeState = JSON.parse(toCanonicalJSON(state));
      assert.equal(toCanonicalJSON(restored), toCanonicalJSON(state));
      const step = transition(restored, input);
      assert.equal(
        toCanonicalJSON(step),
        toCanonicalJSON(driven.transitions[i]),
        `transition ${i}`,
      );
      state = step.state;
    }
    assert.equal(state.committed.status, "final");
  });
});
