/** The statuses of model calls and client operations (types.ts, records.ts). */

/**
 * `planned → streaming → committed | failed | canceled`. A status only moves forward; the three
 * terminal statuses are final. `committed` means the call's assistant message is in history.
 */
export type LLMCallStatus = "planned" | "streaming" | "committed" | "failed" | "canceled";

/**
 * `planned → sent → completed | canceled`. A status only moves forward; `completed` and
 * `canceled` are final. An operation left `sent` by a process that died may or may not have
 * reached the client: recovery re-runs it (run-once.ts), so towards the client it is
 * at-least-once, while its result is recorded — and appended to history — exactly once.
 */
export type ClientOperationStatus = "planned" | "sent" | "completed" | "canceled";
