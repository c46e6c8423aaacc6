/**
 * `npm run bench:cache`: a 200-turn agent session (two tool calls of ~1.5 KB results per turn)
 * through the real runner, loop, store and LLM layer against a fake provider with a small context
 * window (docs/compaction.md). Prints, per provider kind and window, the number of compactions
 * (summary calls, and elisions of old tool outputs), the largest request against the window, and
 * the share of input tokens that were a cached prefix of the previous request — computed from the
 * request bodies as sent (bytes stand in for tokens; the provider caches by prefix). Target: ≥ 90%
 * cached overall. Printed, not asserted.
 */
import type { ProviderID } from "../src/llm/testing/provider-specs.ts";
import { cachedShare, runLongSession } from "../src/runner/testing/long-session.ts";

const TURNS = 200;

interface Case {
  readonly kind: ProviderID;
  readonly contextWindow: number;
  readonly maxOutput: number;
}

const CASES: readonly Case[] = [
  { kind: "openai-chat", contextWindow: 32_000, maxOutput: 4_000 },
  { kind: "openai-responses", contextWindow: 32_000, maxOutput: 4_000 },
  { kind: "anthropic", contextWindow: 32_000, maxOutput: 4_000 },
  { kind: "gemini", contextWindow: 32_000, maxOutput: 4_000 },
  { kind: "openai-compatible", contextWindow: 32_000, maxOutput: 4_000 },
  { kind: "openai-chat", contextWindow: 16_000, maxOutput: 2_000 },
  { kind: "openai-chat", contextWindow: 8_000, maxOutput: 1_000 },
];

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

console.log(`${TURNS}-turn session, 2 tool calls per turn with ~1.5 KB results each\n`);
console.log(
  [
    "provider".padEnd(18),
    "window".padStart(7),
    "requests".padStart(9),
    "summaries".padStart(10),
    "elisions".padStart(9),
    "max request".padStart(12),
    "failed turns".padStart(13),
    "cached (all)".padStart(13),
    "cached (agent calls)".padStart(21),
  ].join(" "),
);
for (const c of CASES) {
  const result = await runLongSession({
    kind: c.kind,
    turns: TURNS,
    toolsPerTurn: 2,
    toolOutputChars: 1_500,
    contextWindow: c.contextWindow,
    maxOutput: c.maxOutput,
  });
  const compactions = result.state?.compactions?.length ?? 0;
  const maxTokens = Math.max(...result.requests.map((r) => r.tokens));
  const failed = result.outcomes.filter((o) => o.type !== "final").length;
  const agent = result.requests.filter((r) => !r.summary);
  console.log(
    [
      c.kind.padEnd(18),
      String(c.contextWindow).padStart(7),
      String(result.requests.length).padStart(9),
      String(compactions).padStart(10),
      String(result.state?.elisions?.length ?? 0).padStart(9),
      `${maxTokens}/${c.contextWindow - c.maxOutput}`.padStart(12),
      String(failed).padStart(13),
      pct(cachedShare(result.requests)).padStart(13),
      pct(cachedShare(agent)).padStart(21),
    ].join(" "),
  );
}
console.log(
  "\ncached: Σ over requests of the bytes shared as a prefix with the previous request, / Σ bytes." +
    "\n'agent calls' leaves the summary calls out of the sequence (they are one-off transcripts)." +
    "\nelisions: compaction points where old tool outputs stopped being re-sent (no model call).",
);
