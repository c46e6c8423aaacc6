/**
 * Compaction end to end through the runner (docs/compaction.md): long scripted sessions with
 * tool results against a fake provider with a small window, for every provider kind, never fail
 * for context size (old tool outputs are elided first, summaries come when that is not enough); the provider's own context-length error (in its kind's real shape) compacts
 * and repeats the call; a failed summary call fails only its turn, and the next turn compacts.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { PROVIDERS } from "../llm/testing/provider-specs.ts";
import { type LongSessionResult, runLongSession } from "./testing/long-session.ts";

const SMALL = { contextWindow: 8_000, maxOutput: 1_000, tailMessages: 4 } as const;

function assertComplete(result: LongSessionResult, turns: number, toolsPerTurn: number): void {
  const failed = result.outcomes.filter((outcome) => outcome.type !== "final");
  assert.deepEqual(failed, [], "every turn ended with an answer");
  const state = result.state;
  assert.ok(state !== null);
  // user message, then per tool an assistant message and its result, then the answer
  assert.equal(state.messages.length, turns * (2 + 2 * toolsPerTurn), "the history is complete");
  const summaries = result.requests.filter((r) => r.summary && !r.overflow).length;
  assert.equal(state.compactions?.length, summaries, "one record per summary call");
}

describe("compaction through the runner", () => {
  for (const spec of PROVIDERS) {
    test(`${spec.id}: 60 turns with tool results in an 8k window never fail`, async () => {
      const result = await runLongSession({
        kind: spec.id,
        turns: 60,
        toolsPerTurn: 2,
        toolOutputChars: 1_500,
        ...SMALL,
      });
      assertComplete(result, 60, 2);
      assert.equal(result.requests.filter((r) => r.overflow).length, 0, "no request overflowed");
      assert.ok(result.requests.every((r) => r.tokens <= SMALL.contextWindow - SMALL.maxOutput));
      // the cheaper step (old tool outputs no longer re-sent) first, summaries when not enough
      assert.ok((result.state?.elisions?.length ?? 0) >= 3, "elisions");
      assert.ok((result.state?.compactions?.length ?? 0) >= 1, "summaries");
      // Each summary call's tokens reach the output (the turn's figure), as the provider
      // reported them: they publish no events.
      assert.deepEqual(
        result.countedUsage,
        result.requests.filter((r) => r.summary).map((r) => r.tokens),
      );
    });

    test(`${spec.id}: the provider's context-length error compacts and repeats the call`, async () => {
      // The provider enforces a smaller window than configured: the estimate cannot see it
      // coming, so only the provider's error tells.
      const result = await runLongSession({
        kind: spec.id,
        turns: 20,
        toolsPerTurn: 2,
        toolOutputChars: 1_500,
        providerWindow: 4_500,
        ...SMALL,
      });
      assertComplete(result, 20, 2);
      const overflows = result.requests.filter((r) => r.overflow);
      assert.ok(overflows.length > 0, "the provider rejected some requests");
      assert.ok(result.state?.compactions?.some((c) => c.trigger === "overflow"));
      for (const [i, request] of result.requests.entries()) {
        if (!request.overflow) continue;
        assert.ok(result.requests[i + 1]?.summary, "a summary call follows each overflow");
        assert.equal(result.requests[i + 2]?.overflow, false, "the repeated call fits");
      }
    });
  }

  test("200 turns in an 8k window: every accepted request under the window", async () => {
    const result = await runLongSession({
      kind: "openai-chat",
      turns: 200,
      toolsPerTurn: 2,
      toolOutputChars: 1_500,
      ...SMALL,
    });
    assertComplete(result, 200, 2);
    assert.equal(result.requests.filter((r) => r.overflow).length, 0);
  });

  test("a failed summary call fails its turn clearly; the next turn compacts", async () => {
    // Tool outputs too short to elide: every compaction is a summary.
    const result = await runLongSession({
      kind: "anthropic",
      turns: 16,
      toolsPerTurn: 2,
      toolOutputChars: 900,
      failSummaries: 1,
      ...SMALL,
    });
    const failed = result.outcomes.filter((outcome) => outcome.type === "failed");
    assert.equal(failed.length, 1);
    const message = failed[0]?.type === "failed" ? (failed[0].message.errorMessage ?? "") : "";
    assert.match(message, /could not be summarised: .*Nothing was lost/);
    const state = result.state;
    assert.ok(state !== null);
    assert.equal(state.status, "final", "the conversation went on");
    assert.ok((state.compactions?.length ?? 0) >= 1, "a later turn compacted");
    // the failed turn left no record: each record comes from a summary call that succeeded
    const succeeded = result.requests.filter((r) => r.summary).length - 1;
    assert.equal(state.compactions?.length, succeeded);
  });
});
