import assert from "node:assert/strict";
import { test } from "node:test";
import { toChosenModel } from "./model-options.ts";
import type { ModelSelection } from "./run-request.ts";

const CONFIGURED = new Set(["claude", "gpt-5", "gpt-5-high"]);
const isConfigured = (name: string) => CONFIGURED.has(name);

function selection(model: string, more: Partial<ModelSelection> = {}): ModelSelection {
  return { model, maxMode: false, parameters: [], isVariantString: false, ...more };
}

test("parameters: thinking on/off, effort (or reasoning), max mode; unknown ones are left out", () => {
  assert.deepEqual(
    toChosenModel(
      selection("claude", {
        maxMode: true,
        parameters: [
          { id: "thinking", value: "true" },
          { id: "effort", value: "high" },
          { id: "fast", value: "true" },
          { id: "context", value: "300k" },
        ],
      }),
      isConfigured,
    ),
    { model: "claude", options: { thinking: true, effort: "high", maxMode: true } },
  );
  assert.deepEqual(
    toChosenModel(
      selection("claude", { parameters: [{ id: "thinking", value: "false" }] }),
      isConfigured,
    ),
    { model: "claude", options: { thinking: false } },
  );
  assert.deepEqual(
    toChosenModel(
      selection("claude", { parameters: [{ id: "reasoning", value: "xhigh" }] }),
      isConfigured,
    ),
    { model: "claude", options: { effort: "xhigh" } },
  );
  assert.deepEqual(
    toChosenModel(
      selection("claude", { parameters: [{ id: "effort", value: "loud" }] }),
      isConfigured,
    ),
    { model: "claude", options: {} },
  );
});

test("variant strings: a colon suffix, or trailing -thinking / effort / -max tokens", () => {
  assert.deepEqual(toChosenModel(selection("claude:high"), isConfigured), {
    model: "claude",
    options: { effort: "high" },
  });
  assert.deepEqual(toChosenModel(selection("claude-thinking-low-max"), isConfigured), {
    model: "claude",
    options: { thinking: true, effort: "low", maxMode: true },
  });
  assert.deepEqual(toChosenModel(selection("gpt-5-xhigh"), isConfigured), {
    model: "gpt-5",
    options: { effort: "xhigh" },
  });
});

test("a configured name that looks like a variant is taken as it is", () => {
  assert.deepEqual(toChosenModel(selection("gpt-5-high"), isConfigured), {
    model: "gpt-5-high",
    options: {},
  });
  // An unknown name is returned unchanged (the caller falls back to the default model).
  assert.deepEqual(toChosenModel(selection("mystery-high"), isConfigured), {
    model: "mystery-high",
    options: { effort: "high" },
  });
});
