/**
 * A conversation's detail sends each tool operation's result shortened: the page shows at most
 * `SHOWN_RESULT_CHARACTERS` characters of it (docs/dashboard.md), and a tool's output (a file, a
 * command's log) can be megabytes. The full result is `/operations/{id}/result`.
 */
import type { OperationView } from "../../store/index.ts";

export const SHOWN_RESULT_CHARACTERS = 2_000;

/** An operation as the detail sends it; `resultShortened` is set when text was cut. */
export type ShortOperationView = OperationView & { readonly resultShortened?: true };

/**
 * Cuts the result's text blocks to `limit` characters in all and leaves only the type and
 * media type of other blocks (an image's data); an operation whose result fits is returned as is.
 */
export function toShortOperation(
  operation: OperationView,
  limit = SHOWN_RESULT_CHARACTERS,
): ShortOperationView {
  const result = operation.result as { content?: unknown } | null;
  if (result === null || typeof result !== "object" || !Array.isArray(result.content)) {
    return operation;
  }
  let left = limit;
  let shortened = false;
  const content = result.content.map((block: unknown) => {
    const value = block as { type?: unknown; text?: unknown; mimeType?: unknown } | null;
    if (value?.type === "text" && typeof value.text === "string") {
      const text = value.text.slice(0, left);
      left -= text.length;
      if (text.length < value.text.length) shortened = true;
      return { ...value, text };
    }
    if (value?.type === "image") {
      shortened = true;
      return { type: "image", mimeType: value.mimeType };
    }
    return block;
  });
  return shortened
    ? { ...operation, result: { ...result, content }, resultShortened: true }
    : operation;
}
