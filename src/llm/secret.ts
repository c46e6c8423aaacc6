/**
 * API keys as values that cannot leak by accident.
 *
 * A `Secret` holds its text behind `reveal()`. Serialising or printing it (`JSON.stringify`,
 * `String()`, template literals, `util.inspect`, pino) yields `[redacted]`, so a config object that
 * ends up in a log or an error never shows the key. `redactSecret` scrubs a known key out of text
 * that came from elsewhere (a provider's error body may echo the key it rejected).
 */
import { inspect } from "node:util";

const REDACTED = "[redacted]";

export interface Secret {
  /** The secret text. Call only where the key is handed to the provider client. */
  reveal(): string;
  toJSON(): string;
  toString(): string;
}

export function createSecret(value: string): Secret {
  const secret: Secret = {
    reveal: () => value,
    toJSON: () => REDACTED,
    toString: () => REDACTED,
  };
  Object.defineProperty(secret, inspect.custom, { value: () => REDACTED });
  return Object.freeze(secret);
}

/** `text` with every occurrence of `secret` replaced. Secrets shorter than 4 characters are left alone. */
export function redactSecret(text: string, secret: string | undefined): string {
  if (secret === undefined || secret.length < 4) return text;
  return text.split(secret).join(REDACTED);
}
