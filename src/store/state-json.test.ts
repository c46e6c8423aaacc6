import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { toCanonicalJSON } from "../loop/canonical-json.ts";
import type { ConversationState } from "../loop/types.ts";
import { toStateJSON } from "./history.ts";

/** What the store wrote before issue #19: the whole state, messages as `[]`, in one pass. */
function reference(state: ConversationState): string {
  return toCanonicalJSON({ ...state, messages: [] });
}

function outcome(write: (state: ConversationState) => string, state: ConversationState): string {
  try {
    return `ok ${write(state)}`;
  } catch (error) {
    return `throws ${(error as Error).message}`;
  }
}

const anything = fc.anything({
  maxDepth: 3,
  withBoxedValues: true,
  withMap: true,
  withDate: true,
  withNullPrototype: true,
  withSparseArray: false,
});

/** A tool definition: usually plain, sometimes not (the writer must fail as before). */
const tool = fc.oneof(
  fc.record({ name: fc.string(), description: fc.string(), parameters: fc.jsonValue() }),
  anything,
);

const settings = fc.oneof(
  fc.constant(null),
  fc.record(
    {
      model: fc.string(),
      systemPrompt: fc.string(),
      tools: fc.oneof(fc.array(tool, { maxLength: 4 }), anything),
      readOnlyTools: fc.array(fc.string(), { maxLength: 2 }),
      extra: anything,
    },
    { requiredKeys: ["model"] },
  ),
  anything,
);

const state = fc
  .record(
    {
      conversationID: fc.string(),
      turnCount: fc.integer(),
      settings,
      messages: fc.array(fc.record({ role: fc.constant("user"), content: fc.string() }), {
        maxLength: 2,
      }),
      call: anything,
      failure: fc.constant(undefined),
    },
    { requiredKeys: ["conversationID", "messages"] },
  )
  .map((value) => value as unknown as ConversationState);

describe("toStateJSON()", () => {
  test("writes what one canonical pass over the state writes, and fails where it fails (property)", () => {
    fc.assert(
      fc.property(state, (value) => {
        assert.equal(
          outcome((s) => toStateJSON(s, toCanonicalJSON), value),
          outcome(reference, value),
        );
      }),
      { numRuns: 2_000 },
    );
  });

  test("the same settings and tools in later states are written the same", () => {
    const tools = [{ name: "read", description: "reads", parameters: { type: "object" } }];
    const shared = { model: "m", systemPrompt: "p", tools };
    const first = { conversationID: "c", settings: shared, messages: [], turnCount: 1 };
    const later = { ...first, turnCount: 2, settings: { ...shared, tools: [...tools] } };
    for (const value of [first, later, first]) {
      const state = value as unknown as ConversationState;
      assert.equal(toStateJSON(state, toCanonicalJSON), reference(state));
    }
  });
});
