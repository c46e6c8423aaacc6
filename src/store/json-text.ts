/**
 * JSON values in and out of the store. Values are written as canonical JSON (the loop's one
 * serialisation, which rejects anything that is not plain JSON) and read back with `JSON.parse`,
 * so each read is a fresh copy that re-serialises to the stored bytes.
 */

import { errorMessage } from "../errors/error-message.ts";
import { toCanonicalJSON } from "../loop/canonical-json.ts";
import { StoreError } from "./errors.ts";

/** The canonical JSON text of `value`; `StoreError("invalid_argument")` if it is not plain JSON. */
export function toJSONText(value: unknown, what: string, location: string): string {
  if (value === undefined) {
    throw new StoreError(
      "invalid_argument",
      location,
      `Cannot write to ${location}: ${what} is missing (undefined). Nothing was written.`,
    );
  }
  try {
    return toCanonicalJSON(value);
  } catch (error) {
    const reason = errorMessage(error);
    throw new StoreError(
      "invalid_argument",
      location,
      `Cannot write to ${location}: ${what} is not plain JSON (${reason}). Nothing was written.`,
      error,
    );
  }
}

export function fromJSONText(text: string): unknown {
  return JSON.parse(text);
}
