/**
 * Which tool calls of an assistant message go to the client together (README.md, "Tool calls").
 *
 * Calls run in batches, in content order. A batch is either a maximal run of consecutive calls to
 * read-only tools (`TurnSettings.readOnlyTools`), sent at once because none can change what
 * another sees, or a single call to any other tool, sent alone once every call before it has its
 * result (a read after a write must see the write; two writes must not race). Results still
 * enter history in content order, whatever order they arrive in, so the next request is the same
 * bytes for any arrival order.
 *
 * The batch in flight is not stored: it is a function of the calls, the number already answered
 * and the read-only set, so a state written before batches existed reads the same way.
 */
import type {
  CallClientCommand,
  CallClientsCommand,
  ToolCall,
  TurnSettings,
  WaitingClient,
} from "./types.ts";

/** The names of the tools whose calls may run together. */
export function toReadOnlyTools(settings: TurnSettings | null): ReadonlySet<string> {
  return new Set(settings?.readOnlyTools ?? []);
}

/**
 * The names of the tools whose consecutive calls run together although they have effects
 * (`TurnSettings.concurrentTools`: subagents). A run of them is a batch of its own, never mixed
 * with reads.
 */
export function toConcurrentTools(settings: TurnSettings | null): ReadonlySet<string> {
  return new Set(settings?.concurrentTools ?? []);
}

/**
 * The index after the last call of the batch that starts at `from` (`from` itself when no call
 * is left): a maximal run of read-only calls, a maximal run of calls to `concurrent` tools, or a
 * single call.
 */
export function toBatchEnd(
  calls: readonly ToolCall[],
  from: number,
  readOnly: ReadonlySet<string>,
  concurrent: ReadonlySet<string> = new Set(),
): number {
  const first = calls[from];
  if (first === undefined) return from;
  const group = readOnly.has(first.name)
    ? readOnly
    : concurrent.has(first.name)
      ? concurrent
      : null;
  if (group === null) return from + 1;
  let end = from + 1;
  while (end < calls.length && group.has((calls[end] as ToolCall).name)) end += 1;
  return end;
}

/**
 * The command that asks the client for the calls in `[from, end)` that have no result yet:
 * `call_client` for one, `call_clients` for several, null for none.
 */
export function toClientCommand(
  waiting: WaitingClient,
  from: number,
  end: number,
): CallClientCommand | CallClientsCommand | null {
  const calls: CallClientCommand[] = [];
  for (let i = from; i < end; i += 1) {
    const toolCall = waiting.calls[i];
    const operationID = waiting.operationIDs[i];
    if (toolCall === undefined || operationID === undefined) break;
    if (i >= waiting.answered && (waiting.early[i] ?? null) !== null) continue;
    calls.push({ type: "call_client", operationID, toolCall });
  }
  if (calls.length === 0) return null;
  if (calls.length === 1) return calls[0] as CallClientCommand;
  return { type: "call_clients", calls };
}
