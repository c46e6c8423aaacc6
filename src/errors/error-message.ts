/**
 * The text of a thrown value, for log lines and error messages: an `Error`'s own message (nothing
 * added: no name, no cause, no code), otherwise the value's string form. Every module uses this
 * one; `llm/abort.ts`'s `describeError` is a different function (it adds a system error code).
 */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
