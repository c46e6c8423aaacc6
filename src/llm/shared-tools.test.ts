import assert from "node:assert/strict";
import { test } from "node:test";
import { sameJson, shareTools } from "./shared-tools.ts";

const schema = { type: "object", properties: { path: { type: "string" } }, required: ["path"] };

/** A body as pi-ai builds it for each call: new tool objects around the same schema. */
const body = (description = "Reads a file", extra: Record<string, unknown> = {}) => ({
  model: "m",
  messages: [{ role: "user", content: "hi" }],
  tools: [
    { type: "function", function: { name: "read", description, parameters: schema, ...extra } },
    { type: "function", function: { name: "ls", description: "Lists", parameters: schema } },
  ],
  stream: true,
});

test("a later body with equal tools gets the first body's list; its JSON does not change", () => {
  const first = shareTools(body()) as ReturnType<typeof body>;
  const later = body();
  const shared = shareTools(later) as ReturnType<typeof body>;
  assert.notEqual(shared, later);
  assert.equal(shared.tools, first.tools);
  assert.equal(JSON.stringify(shared), JSON.stringify(later));
  assert.deepEqual(Object.keys(shared), Object.keys(later));
  assert.equal(shared.messages, later.messages);
});

test("tools that would serialise differently are not shared", () => {
  const first = shareTools(body("first")) as ReturnType<typeof body>;
  const cases = [
    body("other"),
    body("first", { strict: false }),
    // The same members in another order: other bytes.
    {
      ...body("first"),
      tools: body("first").tools.map((tool) => ({ function: tool.function, type: tool.type })),
    },
    { ...body("first"), tools: body("first").tools.slice(0, 1) },
  ];
  for (const payload of cases) {
    const out = shareTools(payload) as ReturnType<typeof body>;
    assert.notEqual(out.tools, first.tools);
    assert.equal(JSON.stringify(out), JSON.stringify(payload));
  }
});

test("bodies without tools, and values that are not bodies, pass through", () => {
  for (const payload of [{ model: "m", tools: [] }, { model: "m" }, "text", null, [1]]) {
    assert.equal(shareTools(payload), payload);
  }
});

test("sameJson: equal JSON text, compared without serialising", () => {
  assert.equal(sameJson({ a: [1, "x", null, true] }, { a: [1, "x", null, true] }), true);
  assert.equal(sameJson({ a: 1, b: 2 }, { b: 2, a: 1 }), false);
  assert.equal(sameJson({ a: 1 }, { a: 1, b: 2 }), false);
  assert.equal(sameJson([1, 2], [1, 2, 3]), false);
  assert.equal(sameJson({ a: "1" }, { a: 1 }), false);
  assert.equal(sameJson([], {}), false);
  // Only plain objects are compared member by member: a toJSON or a class instance is equal
  // only to itself.
  const withToJson = { toJSON: () => "x" };
  assert.equal(sameJson(withToJson, { toJSON: withToJson.toJSON }), false);
  assert.equal(sameJson(new Date(0), new Date(0)), false);
  const date = new Date(0);
  assert.equal(sameJson({ at: date }, { at: date }), true);
});
