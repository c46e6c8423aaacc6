/**
 * The dashboard's reads (dashboard-types.ts), written once over a `Backend` like the rest of the
 * store logic. Each read is one snapshot and a fixed number of indexed queries, whatever the
 * number of conversations: a page of the list is a keyset query (plus a count on the first page); a conversation's
 * detail is five queries; usage is one query over the daily totals.
 */
import { hashMessageBytes } from "../loop/history-hash.ts";
import type { Failure, Message } from "../loop/types.ts";
import type {
  CallView,
  ConversationPage,
  DashboardReads,
  StoredMessage,
  UsageRow,
} from "./dashboard-types.ts";
import { StoreError } from "./errors.ts";
import type { MessageHashCache } from "./history.ts";
import { fromJSONText } from "./json-text.ts";
import { toClientOperationRecord } from "./records.ts";
import { toSummary, toUsageFigures } from "./summaries.ts";
import type { Backend, SummaryPosition } from "./tables.ts";

export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 200;
export const DEFAULT_MESSAGES = 200;
export const MAX_MESSAGES = 500;

const FIRST_DAY = "0000-00-00";
const LAST_DAY = "9999-99-99";
const DAY = /^\d{4}-\d{2}-\d{2}$/;

export function createDashboardReads(
  open: () => Backend,
  location: string,
  cache: MessageHashCache,
): DashboardReads {
  const invalid = (detail: string): StoreError =>
    new StoreError("invalid_argument", location, `Cannot read ${location}: ${detail}.`);
  const toLimit = (value: number | undefined, fallback: number, max: number): number => {
    if (value === undefined) return fallback;
    if (!Number.isSafeInteger(value) || value < 1 || value > max) {
      throw invalid(`a limit must be an integer from 1 to ${max}`);
    }
    return value;
  };
  const toDayBound = (value: string | undefined, fallback: string): string => {
    if (value === undefined) return fallback;
    if (!DAY.test(value)) throw invalid(`a day must be written YYYY-MM-DD, not ${value}`);
    return value;
  };

  return {
    async listConversations(query = {}): Promise<ConversationPage> {
      const limit = toLimit(query.limit, DEFAULT_PAGE, MAX_PAGE);
      const search = (query.search ?? "").trim().toLowerCase();
      const after = query.cursor === undefined ? null : fromCursor(query.cursor, invalid);
      return open().read(async (tables) => {
        // One row more than asked tells whether there is a next page.
        // Counting reads every summary (with a search, every title): first page only.
        const { rows, total } = await tables.listSummaries(
          search,
          after,
          limit + 1,
          after === null,
        );
        const items = rows.slice(0, limit).map(toSummary);
        const last = items.at(-1);
        return {
          items,
          total,
          nextCursor: rows.length > limit && last !== undefined ? toCursor(last) : null,
        };
      });
    },

    async readConversationDetail(conversationID) {
      return open().read(async (tables) => {
        const summary = await tables.readSummary(conversationID);
        if (summary === null) return null;
        const usage = await tables.listCallUsageOf(conversationID);
        const byCall = new Map(
          usage.flatMap((row) => (row.callID === null ? [] : [[row.callID, row]])),
        );
        const calls = (await tables.listCallsOf(conversationID)).map((row): CallView => {
          const used = byCall.get(row.callID);
          const ended = row.status !== "planned" && row.status !== "streaming";
          return {
            callID: row.callID,
            turnID: row.turnID,
            model: row.model,
            status: row.status,
            requestHash: row.requestHash,
            requestBytes: row.requestBytes,
            messageCount: row.messageCount,
            createdAt: row.createdAt,
            firstEventAt: row.firstEventAt,
            endedAt: ended ? row.updatedAt : null,
            usage:
              used === undefined ? null : toUsageFigures({ ...used, cost: { total: used.cost } }),
            provider: used?.provider ?? null,
            messageSeq: used?.seq ?? null,
          };
        });
        const state = await tables.readConversation(conversationID);
        const failure = state === null ? null : toFailure(fromJSONText(state.stateJSON));
        return {
          summary: toSummary(summary),
          failure,
          calls,
          operations: (await tables.listOperationsOf(conversationID)).map(toClientOperationRecord),
        };
      });
    },

    async listMessages(conversationID, fromSeq = 0, limit) {
      const count = toLimit(limit, DEFAULT_MESSAGES, MAX_MESSAGES);
      if (!Number.isSafeInteger(fromSeq) || fromSeq < 0) {
        throw invalid("a message position must be a non-negative integer");
      }
      return open().read(async (tables) =>
        (await tables.readMessagesFrom(conversationID, fromSeq, count)).map(
          (row): StoredMessage => {
            // The stored bytes are shown; damaged ones are reported, never shown as history.
            if (hashMessageBytes(Buffer.from(row.json, "utf8")) !== row.hash) {
              throw new StoreError(
                "corrupt_database",
                location,
                `Conversation ${conversationID} in ${location} is damaged: message ${row.seq} ` +
                  "does not match its stored hash.",
              );
            }
            const message = fromJSONText(row.json) as Message;
            cache.set(message, row.hash);
            return { seq: row.seq, message };
          },
        ),
      );
    },

    async listUsage(query = {}) {
      const fromDay = toDayBound(query.fromDay, FIRST_DAY);
      const toDay = toDayBound(query.toDay, LAST_DAY);
      return open().read(async (tables) =>
        (await tables.listDailyUsage(fromDay, toDay)).map(
          (row): UsageRow => ({
            day: row.day,
            provider: row.provider,
            model: row.model,
            calls: row.calls,
            usage: {
              input: row.input,
              output: row.output,
              cacheRead: row.cacheRead,
              cacheWrite: row.cacheWrite,
              cost: row.cost,
            },
          }),
        ),
      );
    },
  };
}

/** `<updatedAt>.<base64url id>`: opaque to callers. */
function toCursor(position: SummaryPosition): string {
  return `${position.updatedAt}.${Buffer.from(position.conversationID, "utf8").toString("base64url")}`;
}

function fromCursor(cursor: string, invalid: (detail: string) => StoreError): SummaryPosition {
  const match = /^(\d{1,16})\.([A-Za-z0-9_-]*)$/.exec(cursor);
  if (match === null) throw invalid("the page cursor is not one this store gave out");
  return {
    updatedAt: Number(match[1]),
    conversationID: Buffer.from(match[2] ?? "", "base64url").toString("utf8"),
  };
}

/** The state's `failure`, when it is one (the state text is the loop's, read back as is). */
function toFailure(state: unknown): Failure | null {
  const failure = (state as { failure?: unknown } | null)?.failure as Failure | null | undefined;
  return failure !== null && typeof failure === "object" && typeof failure.message === "string"
    ? { callID: String(failure.callID), reason: failure.reason, message: failure.message }
    : null;
}
