/**
 * The client's per-request model options reach the provider request body, for every provider
 * kind: thinking off, an effort, max mode's larger output limit; and parallel tool calls are
 * asked for where the provider takes the field. Bodies are read from a fake provider on
 * 127.0.0.1 answering with the provider's recorded transcript.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createModelConfig, type ModelConfigInput } from "./config.ts";
import { createLLM } from "./llm.ts";
import type { ModelOptions } from "./model-options.ts";
import { firstRequest } from "./testing/behaviours.ts";
import { readFixture, startFakeProvider } from "./testing/fake-provider.ts";
import {
  ANTHROPIC,
  GEMINI,
  type JsonRecord,
  OPENAI_CHAT,
  OPENAI_COMPATIBLE,
  OPENAI_RESPONSES,
  type ProviderSpec,
} from "./testing/provider-specs.ts";

interface BodyReading {
  readonly spec: ProviderSpec;
  /** The reasoning setting in a body, comparable across calls; "off" when reasoning is off. */
  reasoning(body: JsonRecord): unknown;
  /** The output-token limit in a body. */
  maxOutput(body: JsonRecord): unknown;
  /** `parallel_tool_calls` as sent (undefined when the provider gets none). */
  readonly parallel: true | undefined;
  /** The reasoning settings for efforts low and high, in max mode. */
  readonly efforts: readonly [unknown, unknown];
}

const get = (value: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>(
    (at, key) =>
      typeof at === "object" && at !== null ? (at as Record<string, unknown>)[key] : undefined,
    value,
  );

const READINGS: readonly BodyReading[] = [
  {
    spec: OPENAI_CHAT,
    reasoning: (body) => body.reasoning_effort ?? "off",
    maxOutput: (body) => body.max_completion_tokens,
    parallel: true,
    efforts: ["low", "high"],
  },
  {
    spec: OPENAI_RESPONSES,
    reasoning: (body) => get(body, "reasoning", "effort") ?? "off",
    maxOutput: (body) => body.max_output_tokens,
    parallel: true,
    efforts: ["low", "high"],
  },
  {
    spec: ANTHROPIC,
    reasoning: (body) =>
      get(body, "thinking", "type") === "enabled" ? get(body, "thinking", "budget_tokens") : "off",
    maxOutput: (body) => body.max_tokens,
    parallel: undefined,
    efforts: [2048, 16384],
  },
  {
    spec: GEMINI,
    // Gemini 3 cannot turn thinking off: "off" is its lowest level, with no thoughts returned.
    reasoning: (body) => {
      const config = get(body, "generationConfig", "thinkingConfig");
      return get(config, "includeThoughts") === true ? get(config, "thinkingLevel") : "off";
    },
    maxOutput: (body) => get(body, "generationConfig", "maxOutputTokens"),
    parallel: undefined,
    efforts: ["LOW", "HIGH"],
  },
  {
    spec: OPENAI_COMPATIBLE,
    reasoning: (body) =>
      get(body, "thinking", "type") === "enabled" ? (body.reasoning_effort ?? "on") : "off",
    maxOutput: (body) => body.max_tokens,
    parallel: undefined,
    // DeepSeek accepts only high and max: a low effort is clamped up to high.
    efforts: ["high", "high"],
  },
];

const LIMITS = {
  reasoning: true,
  contextWindow: 200_000,
  maxOutput: 8_000,
  maxMode: { contextWindow: 1_000_000, maxOutput: 32_000 },
} as const;

async function bodies(
  spec: ProviderSpec,
  overrides: Partial<ModelConfigInput>,
  calls: readonly (ModelOptions | undefined)[],
): Promise<JsonRecord[]> {
  const fake = await startFakeProvider();
  try {
    const config = createModelConfig({ ...spec.config(fake.url), ...overrides });
    const llm = createLLM({ models: [config] });
    const sent: JsonRecord[] = [];
    for (const [index, options] of calls.entries()) {
      fake.reply({ type: "sse", body: readFixture(spec.id, spec.fixtures.text) });
      const stream = llm.stream({
        callID: `call-${index}`,
        model: config.name,
        request: firstRequest(),
        conversationID: "conv-options",
        ...(options === undefined ? {} : { options }),
      });
      for await (const _event of stream) {
        // drain
      }
      sent.push(JSON.parse((await fake.request(index)).body) as JsonRecord);
    }
    return sent;
  } finally {
    await fake.close();
  }
}

describe("model options reach the provider request body", () => {
  for (const reading of READINGS) {
    test(`${reading.spec.id}: thinking off, effort, max mode, parallel tool calls`, async () => {
      const [configured, off, low, high, max] = await bodies(reading.spec, LIMITS, [
        undefined,
        { thinking: false },
        { effort: "low", maxMode: true },
        { effort: "high", maxMode: true },
        { maxMode: true },
      ]);
      assert.notEqual(reading.reasoning(configured ?? {}), "off", "the configured default reasons");
      assert.equal(reading.reasoning(off ?? {}), "off", "thinking off");
      assert.deepEqual(
        [reading.reasoning(low ?? {}), reading.reasoning(high ?? {})],
        reading.efforts,
        "efforts low and high",
      );
      assert.equal(reading.maxOutput(configured ?? {}), 8_000, "the normal output limit");
      assert.equal(reading.maxOutput(max ?? {}), 32_000, "max mode's output limit");
      assert.equal(configured?.parallel_tool_calls, reading.parallel);
    });
  }

  test("a model that does not reason, or has no max mode, ignores those options", async () => {
    for (const reading of READINGS) {
      const [plain, asked] = await bodies(
        reading.spec,
        { reasoning: false, maxOutput: 8_000, contextWindow: 200_000 },
        [undefined, { thinking: true, effort: "high", maxMode: true }],
      );
      assert.equal(reading.reasoning(asked ?? {}), reading.reasoning(plain ?? {}), reading.spec.id);
      assert.equal(reading.maxOutput(asked ?? {}), 8_000, reading.spec.id);
    }
  });
});
