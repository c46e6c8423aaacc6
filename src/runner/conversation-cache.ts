/**
 * The conversations the runner holds in memory: every conversation with work in this process
 * (a client stream, a model call, a tool call), and up to `idleLimit` idle ones, most recently
 * used last. The rest are loaded from the store when an input comes.
 */
import type { LLMStream } from "../llm/index.ts";
import { createConversation, type RuntimeState } from "../loop/index.ts";
import type { Store } from "../store/index.ts";
import type { TurnOutput } from "./types.ts";

/** What the runner holds in memory for a conversation. */
export interface Live {
  readonly conversationID: string;
  state: RuntimeState;
  version: number;
  output: TurnOutput | null;
  /** The model call being opened or read (set before its stream exists). */
  calling: string | null;
  /** The model stream being read, if any. */
  stream: { readonly callID: string; readonly stream: LLMStream } | null;
  /**
   * The tool calls running in this process now, by operation id: the output each was asked on,
   * and a promise settled when its run has ended (tool-call.ts).
   */
  readonly tools: Map<string, ToolRun>;
  /** Set when the entry was dropped after a failure the loop never saw: its work stops. */
  retired: boolean;
  /**
   * The branch of this (client's) conversation the client's last start went to (route-start.ts),
   * while this entry is in memory; absent: the conversation itself, or not known.
   */
  branch?: string;
}

/** A tool call running in this process (tool-call.ts). */
export interface ToolRun {
  readonly output: TurnOutput;
  /** Settles (never rejects) when this run has ended, its result applied or dropped. */
  readonly settled: Promise<void>;
}

export interface ConversationCache {
  /** The conversation in memory, or loaded from the store (a new one when the store has none). */
  load(conversationID: string): Promise<Live>;
  /** Reads the committed state and version again (after a lost compare-and-swap or a duplicate). */
  reload(entry: Live): Promise<void>;
  /** The conversation in memory, without a store read. */
  get(conversationID: string): Live | undefined;
  /** Forgets the conversation: the next input loads it again. */
  drop(conversationID: string): void;
  values(): Iterable<Live>;
}

/**
 * Whether the conversation has no work in this process: no client stream, model call or tool
 * call. Only an idle entry is evicted.
 */
export function isIdleHere(entry: Live): boolean {
  return (
    entry.output === null &&
    entry.calling === null &&
    entry.stream === null &&
    entry.tools.size === 0
  );
}

/** Idle conversations kept in memory by default. */
export const IDLE_CACHE_SIZE = 32;

export function createConversationCache(
  store: Pick<Store, "load">,
  idleLimit = IDLE_CACHE_SIZE,
): ConversationCache {
  const live = new Map<string, Live>();

  /** Drops the least recently used idle conversations beyond `idleLimit` (no copies: issue #19). */
  function evictIdle(): void {
    let idle = 0;
    for (const entry of live.values()) if (isIdleHere(entry)) idle += 1;
    for (const entry of live.values()) {
      if (idle <= idleLimit) return;
      if (!isIdleHere(entry)) continue;
      live.delete(entry.conversationID);
      idle -= 1;
    }
  }

  return {
    async load(conversationID) {
      const cached = live.get(conversationID);
      if (cached !== undefined) {
        live.delete(conversationID);
        live.set(conversationID, cached); // most recently used last
        return cached;
      }
      const loaded = await store.load(conversationID);
      const entry: Live = {
        conversationID,
        state:
          loaded === null
            ? createConversation(conversationID)
            : { committed: loaded.state, pending: null },
        version: loaded?.version ?? 0,
        output: null,
        calling: null,
        stream: null,
        tools: new Map(),
        retired: false,
      };
      live.set(conversationID, entry);
      evictIdle();
      return entry;
    },

    async reload(entry) {
      const loaded = await store.load(entry.conversationID);
      entry.state =
        loaded === null
          ? createConversation(entry.conversationID)
          : { committed: loaded.state, pending: null };
      entry.version = loaded?.version ?? 0;
    },

    get: (conversationID) => live.get(conversationID),
    drop(conversationID) {
      live.delete(conversationID);
    },
    values: () => live.values(),
  };
}
