/**
 * What the dashboard reads (docs/dashboard.md): per-conversation summaries, per model call usage
 * and timing, and usage by day, model and provider. All of it is derived from committed history
 * in the commit that appended it (summaries.ts), so a read never scans messages.
 *
 * Token figures follow pi-ai's `Usage`: `input` is the uncached input, `cacheRead` and
 * `cacheWrite` are counted apart; `cost` is pi-ai's catalogue cost in US dollars.
 */
import type { Failure, Message, Status } from "../loop/types.ts";
import type { ClientOperationStatus, LLMCallStatus } from "./record-status.ts";

export interface UsageFigures {
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
  /** US dollars. */
  readonly cost: number;
}

export const NO_USAGE: UsageFigures = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 };

export interface ConversationSummary {
  readonly conversationID: string;
  /** The text of the first user message, at most `TITLE_LENGTH` characters; "" when none. */
  readonly title: string;
  /** The model of the last model call (or of the turn settings before any call); "" when none. */
  readonly model: string;
  readonly provider: string;
  readonly status: Status;
  /** User messages in history. */
  readonly turns: number;
  /** Assistant messages in history (one per committed model call). */
  readonly modelCalls: number;
  readonly messageCount: number;
  readonly usage: UsageFigures;
  readonly createdAt: number;
  /** The last commit, epoch milliseconds (store clock). */
  readonly updatedAt: number;
}

export const TITLE_LENGTH = 200;

export interface ConversationQuery {
  /** Case-insensitive substring of the title or the conversation id. */
  readonly search?: string;
  /** 1..200; default 50. */
  readonly limit?: number;
  /** `nextCursor` of the previous page. */
  readonly cursor?: string;
}

/** Newest activity first (`updatedAt` desc, then id desc). */
export interface ConversationPage {
  readonly items: readonly ConversationSummary[];
  /**
   * Conversations matching the search, all pages together; counted for the first page only
   * (`null` on a page after a cursor), since a count reads every summary.
   */
  readonly total: number | null;
  /** Pass as `cursor` for the next page; `null` on the last page. */
  readonly nextCursor: string | null;
}

export interface StoredMessage {
  readonly seq: number;
  readonly message: Message;
}

/** A model call as the dashboard shows it: the record without its body, usage and timing. */
export interface CallView {
  readonly callID: string;
  readonly turnID: string;
  readonly model: string;
  readonly status: LLMCallStatus;
  readonly requestHash: string;
  /** UTF-8 bytes of the exact request body. */
  readonly requestBytes: number;
  readonly messageCount: number;
  /** Saved before the upstream request (epoch ms, store clock). */
  readonly createdAt: number;
  /** When the first content delta arrived (runner clock), `null` when not recorded. */
  readonly firstEventAt: number | null;
  /** When the call's end was committed; `null` while it runs. */
  readonly endedAt: number | null;
  /** Of the assistant message the call committed; `null` when none was committed. */
  readonly usage: UsageFigures | null;
  readonly provider: string | null;
  /** Position of that assistant message in history. */
  readonly messageSeq: number | null;
}

/** A client operation (tool call run by the client) as the dashboard shows it. */
export interface OperationView {
  readonly operationID: string;
  readonly turnID: string;
  readonly toolCallID: string;
  /** Plain JSON, as saved. */
  readonly request: unknown;
  readonly status: ClientOperationStatus;
  /** `null` until completed. */
  readonly result: unknown;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface ConversationDetail {
  readonly summary: ConversationSummary;
  /** Why the last turn failed (a model error: nothing was appended for it), or `null`. */
  readonly failure: Failure | null;
  readonly calls: readonly CallView[];
  readonly operations: readonly OperationView[];
}

export interface UsageQuery {
  /** Inclusive UTC days `YYYY-MM-DD`; default: all. */
  readonly fromDay?: string;
  readonly toDay?: string;
}

/** One day × provider × model. */
export interface UsageRow {
  readonly day: string;
  readonly provider: string;
  readonly model: string;
  readonly calls: number;
  readonly usage: UsageFigures;
}

/** The store's dashboard reads; every one is a bounded number of indexed queries. */
export interface DashboardReads {
  listConversations(query?: ConversationQuery): Promise<ConversationPage>;
  /** `null` for an unknown conversation. */
  readConversationDetail(conversationID: string): Promise<ConversationDetail | null>;
  /** Messages from position `fromSeq`, at most `limit` (1..500, default 200), in order. */
  listMessages(conversationID: string, fromSeq?: number, limit?: number): Promise<StoredMessage[]>;
  /** Ordered by day, provider, model. */
  listUsage(query?: UsageQuery): Promise<UsageRow[]>;
}
