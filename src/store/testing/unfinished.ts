/**
 * Work a dead process left behind, for tests: the crash driver looks up the model call it must
 * retry, and the contract suite checks what is left unfinished. Production code does not list
 * unfinished work (the runner resumes one conversation at a time from its committed state), so
 * this is not part of the `Store` interface; it reads the store's tables directly.
 */
import { readTablesForTesting } from "../create-store.ts";
import { toClientOperationRecord, toLLMCallRecord } from "../records.ts";
import type { ClientOperationRecord, LLMCallRecord, Store } from "../types.ts";

export interface Unfinished {
  /** Status `planned` or `streaming`, oldest first. */
  readonly llmCalls: readonly LLMCallRecord[];
  /** Status `planned` or `sent`, oldest first. */
  readonly clientOperations: readonly ClientOperationRecord[];
}

/** Unfinished model calls and client operations, of one conversation or of all. */
export async function listUnfinished(store: Store, conversationID?: string): Promise<Unfinished> {
  return readTablesForTesting(store, async (tables) => ({
    llmCalls: (await tables.listUnfinishedLLMCalls(conversationID ?? null)).map(toLLMCallRecord),
    clientOperations: (await tables.listUnfinishedClientOperations(conversationID ?? null)).map(
      toClientOperationRecord,
    ),
  }));
}
