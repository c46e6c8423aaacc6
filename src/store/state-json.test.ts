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
  withSparseArray: true,
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
      tools: fc.oneof(
        fc.array(tool, { maxLength: 4 }),
        fc.sparseArray(tool, { maxLength: 4 }),
        // Frozen, as the catalogue's shared lists are (written once whole).
        fc.array(tool, { maxLength: 4 }).map(freezeAll),
        fc.array(tool, { maxLength: 4 }).map((list) => Object.freeze(list)),
        anything,
      ),
      readOnlyTools: fc.array(fc.string(), { maxLength: 2 }),
      extra: anything,
    },
    { requiredKeys: ["model"] },
  ),
  anything,
);

/** `value` and everything reachable from it frozen (Map and Set entries aside). */
function freezeAll<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const key of Reflect.ownKeys(value))
      freezeAll((value as Record<PropertyKey, unknown>)[key]);
    Object.freeze(value);
  }
  return value;
}

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

  test("a frozen tool list is written once whole; a frozen list of definitions not all frozen is written each time", () => {
    const definition = (name: string) =>
      freezeAll({ name, description: "d", parameters: { type: "object" } });
    const shared = Object.freeze([definition("read"), definition("grep")]);
    const stateOf = (tools: readonly object[], turnCount: number) =>
      ({
        conversationID: "c",
        settings: { model: "m", systemPrompt: "p", tools },
        messages: [],
        turnCount,
      }) as unknown as ConversationState;
    for (const turnCount of [1, 2, 3]) {
      const value = stateOf(shared, turnCount);
      assert.equal(toStateJSON(value, toCanonicalJSON), reference(value));
    }
    // A definition that is not frozen may change between commits: its list is not remembered.
    const open = { name: "edit", description: "before", parameters: {} };
    const mixed = Object.freeze([definition("read"), open]);
    const before = toStateJSON(stateOf(mixed, 1), toCanonicalJSON);
    open.description = "after";
    const after = toStateJSON(stateOf(mixed, 1), toCanonicalJSON);
    assert.notEqual(after, before);
    assert.equal(after, reference(stateOf(mixed, 1)));
  });

  test("a list that is not frozen, of frozen definitions, is written as it is now", () => {
    // Only a frozen list is remembered whole: an open one may grow between commits.
    const definition = (name: string) =>
      freezeAll({ name, description: "d", parameters: { type: "object" } });
    const tools: object[] = [definition("read")];
    const stateOf = () =>
      ({
        conversationID: "c",
        settings: { model: "m", systemPrompt: "p", tools },
        messages: [],
        turnCount: 1,
      }) as unknown as ConversationState;
    assert.equal(toStateJSON(stateOf(), toCanonicalJSON), reference(stateOf()));
    tools.push(definition("grep"));
    const after = toStateJSON(stateOf(), toCanonicalJSON);
    assert.match(after, /"grep"/);
    assert.equal(after, reference(stateOf()));
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
