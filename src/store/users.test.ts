/** Budget verdicts (users.ts): which limit is reached, when it resets, what the client is told. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { hashAccessToken, toBudgetVerdict, toMonthStart } from "./users.ts";

const NOW = Date.UTC(2026, 10, 30, 11, 0); // 2026-11-30 11:00 UTC
const usage = (dayTokens: number, dayCost: number, monthTokens: number, monthCost: number) => ({
  day: { tokens: dayTokens, cost: dayCost, reservedTokens: 0, reservedCost: 0 },
  month: { tokens: monthTokens, cost: monthCost, reservedTokens: 0, reservedCost: 0 },
});

test("under every limit: ok; no budgets: ok", () => {
  const budgets = [
    { period: "day" as const, maxTokens: 1000, maxCost: 2 },
    { period: "month" as const, maxTokens: null, maxCost: 50 },
  ];
  assert.deepEqual(toBudgetVerdict("a", budgets, usage(999, 1.99, 5000, 49.99), NOW), {
    type: "ok",
  });
  assert.deepEqual(toBudgetVerdict("a", [], usage(10 ** 9, 10 ** 6, 10 ** 9, 10 ** 6), NOW), {
    type: "ok",
  });
});

test("a reached limit refuses until the period ends, and names it", () => {
  const day = toBudgetVerdict(
    "ann",
    [{ period: "day", maxTokens: 1000, maxCost: null }],
    usage(1000, 0, 1000, 0),
    NOW,
  );
  assert.equal(day.type, "exceeded");
  assert.ok(day.type === "exceeded");
  assert.equal(day.resetsAt, Date.UTC(2026, 11, 1));
  assert.match(day.message, /ann has used 1,000 tokens of 1,000 tokens today \(UTC\)/);
  assert.match(day.message, /resume at 2026-12-01 00:00 UTC/);

  const month = toBudgetVerdict(
    "ann",
    [{ period: "month", maxTokens: null, maxCost: 20 }],
    usage(0, 0, 10, 20.5),
    NOW,
  );
  assert.ok(month.type === "exceeded");
  assert.equal(month.limit, "cost");
  assert.equal(month.resetsAt, Date.UTC(2026, 11, 1));
  assert.match(month.message, /\$20\.50 of \$20\.00 this month/);
});

test("reservations of calls in progress count as used, and the message says so", () => {
  const budgets = [{ period: "day" as const, maxTokens: 1000, maxCost: null }];
  const reserved = (tokens: number, held: number) => ({
    day: { tokens, cost: 0, reservedTokens: held, reservedCost: 0 },
    month: { tokens, cost: 0, reservedTokens: held, reservedCost: 0 },
  });
  assert.deepEqual(toBudgetVerdict("ann", budgets, reserved(900, 99), NOW), { type: "ok" });
  const verdict = toBudgetVerdict("ann", budgets, reserved(900, 100), NOW);
  assert.ok(verdict.type === "exceeded");
  assert.match(
    verdict.message,
    /^Budget reached: ann has used 900 tokens of 1,000 tokens today \(UTC\), and calls in progress hold 100 tokens more\. /,
  );
});

test("the month starts on the 1st (UTC); a token's hash is its SHA-256", () => {
  assert.equal(toMonthStart(NOW), "2026-11-01");
  assert.equal(
    hashAccessToken("abc"),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
});
