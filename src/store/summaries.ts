/**
 * The dashboard's derived rows (dashboard-types.ts), kept in the commit that appends the messages
 * they derive from, so listing conversations or usage never reads history. A commit costs one
 * more read and a few writes, O(new messages) like the rest of the commit.
 *
 * Usage counts for the UTC day of the assistant message's own `timestamp` (pi-ai sets it when the
 * call starts), so the figures depend on history alone; the store clock is used only when a
 * message carries no usable timestamp.
 */
import type { ConversationState, Message } from "../loop/types.ts";
import type { ConversationSummary, UsageFigures } from "./dashboard-types.ts";
import { TITLE_LENGTH } from "./dashboard-types.ts";
import type { CallUsageRow, DailyUsageRow, SummaryRow, Tables } from "./tables.ts";
import type { RecordWrite } from "./types.ts";

/** What of a conversation's state its dashboard rows derive from. */
export type SummarizedState = Pick<
  ConversationState,
  "conversationID" | "status" | "settings" | "messages" | "copied"
>;

/** The rows one commit writes for the dashboard. */
export interface SummaryWrites {
  readonly summary: SummaryRow;
  readonly callUsage: readonly CallUsageRow[];
  readonly dailyUsage: readonly DailyUsageRow[];
}

/**
 * Updates the summary, call usage and daily totals for the messages of `state` the summary has
 * not counted yet (`planSummary`), inside the commit's transaction.
 */
export async function summarizeCommit(
  tables: Pick<Tables, "readSummary" | "writeSummary" | "insertCallUsage" | "addDailyUsage">,
  state: SummarizedState,
  storedCount: number,
  records: readonly RecordWrite[],
  now: number,
): Promise<void> {
  const before = await tables.readSummary(state.conversationID);
  const writes = planSummary(before, state, storedCount, records, now);
  for (const row of writes.callUsage) await tables.insertCallUsage(row);
  for (const row of writes.dailyUsage) await tables.addDailyUsage(row);
  await tables.writeSummary(writes.summary);
}

/**
 * The dashboard rows for the messages of `state` the summary `before` has not counted yet. That
 * is the summary's own `messageCount`, not the stored history's: a process older than the
 * dashboard (schema version 3) may have committed to this file without summaries, and the next
 * commit then counts what it missed. `records` are the commit's record writes: the call marked
 * `committed` there is the call of an assistant message this commit appends (at or after
 * `storedCount`). The messages a copy starts with (`state.copied`: a rewind's branch, a fork, an
 * import) count as history — turns, title, message count — but no call of this conversation made
 * them: they add no call, tokens or cost, and no call usage or daily row (the source counted
 * them when its calls made them). Pure, so the SQLite migration's synchronous backfill uses it too.
 */
export function planSummary(
  before: SummaryRow | null,
  state: SummarizedState,
  storedCount: number,
  records: readonly RecordWrite[],
  now: number,
  /** `createdAt` of a new summary (the backfill passes the conversation's). */
  createdAt: number = now,
): SummaryWrites {
  const conversationID = state.conversationID;
  const callUsage: CallUsageRow[] = [];
  const dailyUsage: DailyUsageRow[] = [];
  let row: SummaryRow = before ?? {
    conversationID,
    title: "",
    model: "",
    provider: "",
    status: state.status,
    turns: 0,
    modelCalls: 0,
    messageCount: 0,
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    cost: 0,
    createdAt,
    updatedAt: now,
  };
  const committedCalls = records.flatMap((write) =>
    write.type === "llm_call_status" && write.status === "committed" ? [write.callID] : [],
  );
  let model = row.model === "" ? (state.settings?.model ?? "") : row.model;
  let provider = row.provider;
  const messages = state.messages;
  const copied = state.copied ?? 0;
  for (let seq = before?.messageCount ?? 0; seq < messages.length; seq++) {
    const message = messages[seq] as Message;
    if (message.role === "user") {
      row = { ...row, turns: row.turns + 1, title: row.title || toTitle(message.content) };
    } else if (message.role === "assistant" && seq >= copied) {
      const usage = toUsageFigures(message.usage);
      const day = toDay(
        Number.isSafeInteger(message.timestamp) && message.timestamp > 0 ? message.timestamp : now,
      );
      model = String(message.model ?? "");
      provider = String(message.provider ?? "");
      callUsage.push({
        conversationID,
        seq,
        callID: seq >= storedCount ? (committedCalls.shift() ?? null) : null,
        provider,
        model,
        day,
        ...usage,
        committedAt: now,
      });
      dailyUsage.push({ day, provider, model, calls: 1, ...usage });
      row = {
        ...row,
        modelCalls: row.modelCalls + 1,
        input: row.input + usage.input,
        output: row.output + usage.output,
        cacheRead: row.cacheRead + usage.cacheRead,
        cacheWrite: row.cacheWrite + usage.cacheWrite,
        cost: row.cost + usage.cost,
      };
    }
  }
  return {
    summary: {
      ...row,
      model,
      provider,
      status: state.status,
      messageCount: messages.length,
      updatedAt: now,
    },
    callUsage,
    dailyUsage,
  };
}

/**
 * Figures of a pi-ai `Usage`. Whatever a provider reported, a commit must not fail over it:
 * anything missing, negative or not a finite number counts as 0, and token counts are rounded to
 * whole tokens (they are stored as integers).
 */
export function toUsageFigures(usage: unknown): UsageFigures {
  const value = (usage ?? {}) as Record<string, unknown>;
  const amount = (field: unknown): number =>
    typeof field === "number" && Number.isFinite(field) && field > 0 ? field : 0;
  const count = (field: unknown): number => Math.min(Math.round(amount(field)), MAX_TOKENS);
  return {
    input: count(value.input),
    output: count(value.output),
    cacheRead: count(value.cacheRead),
    cacheWrite: count(value.cacheWrite),
    cost: amount((value.cost as Record<string, unknown> | undefined)?.total),
  };
}

/** Far above any real count, and safely inside SQLite's 64-bit integers once summed. */
const MAX_TOKENS = 2 ** 40;

/**
 * The user's own text of a user message: its last text block, since context supplements come
 * first (loop/context-message.ts); whitespace collapsed, cut to `TITLE_LENGTH`.
 */
export function toTitle(content: unknown): string {
  const text =
    typeof content === "string"
      ? content
      : Array.isArray(content)
        ? (content
            .flatMap((block: { type?: unknown; text?: unknown }) =>
              block?.type === "text" && typeof block.text === "string" ? [block.text] : [],
            )
            .at(-1) ?? "")
        : "";
  return collapsedStart(text);
}

/**
 * `text.replace(/\s+/g, " ").trim().slice(0, TITLE_LENGTH)`, from no more of the text than it
 * takes: collapsing a prefix of the text gives a prefix of the collapsed whole (a run of
 * whitespace cut at its end still becomes one space), and trimming the end removes at most the
 * last character, so once a prefix collapses to more than `TITLE_LENGTH` characters the rest
 * changes none of them. A message can be hundreds of KB; the whole of it took ≈0.7 ms per 100 KB
 * in the commit that starts a conversation (issue #19).
 */
function collapsedStart(text: string): string {
  for (let length = TITLE_LENGTH * 4; length < text.length; length *= 4) {
    const collapsed = text.slice(0, length).replace(/\s+/g, " ").trimStart();
    if (collapsed.length > TITLE_LENGTH) return collapsed.slice(0, TITLE_LENGTH);
  }
  return text.replace(/\s+/g, " ").trim().slice(0, TITLE_LENGTH);
}

/** `YYYY-MM-DD` (UTC) of epoch milliseconds. */
export function toDay(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

export function toSummary(row: SummaryRow): ConversationSummary {
  return {
    conversationID: row.conversationID,
    title: row.title,
    model: row.model,
    provider: row.provider,
    status: row.status as ConversationSummary["status"],
    turns: row.turns,
    modelCalls: row.modelCalls,
    messageCount: row.messageCount,
    usage: {
      input: row.input,
      output: row.output,
      cacheRead: row.cacheRead,
      cacheWrite: row.cacheWrite,
      cost: row.cost,
    },
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
