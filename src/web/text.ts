/** Small text helpers shared by the search adapters and the fetcher. */

/** Collapses whitespace (newlines included) to single spaces. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** `text` with every occurrence of each non-empty secret replaced. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (secret !== "") out = out.replaceAll(secret, "[redacted]");
  return out;
}

/** `text` with the user name and password of every URL in it removed (`//user:pw@host` → `//host`). */
export function stripCredentials(text: string): string {
  return text.replace(/\/\/[^\s/?#@]*@/g, "//");
}

/** Plain text of a snippet some providers mark up (`<strong>`, entities). */
export function stripTags(text: string): string {
  return oneLine(
    text
      .replace(/<[^>]*>/g, "")
      .replace(/&quot;/g, '"')
      .replace(/&#39;|&#x27;/g, "'")
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&nbsp;/g, " ")
      .replace(/&amp;/g, "&"),
  );
}

/** The string at `key` of an object, or undefined. */
export function stringAt(value: unknown, key: string): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const field = (value as Record<string, unknown>)[key];
  return typeof field === "string" ? field : undefined;
}

/** The array at `key` of an object, or undefined. */
export function arrayAt(value: unknown, key: string): readonly unknown[] | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const field = (value as Record<string, unknown>)[key];
  return Array.isArray(field) ? field : undefined;
}
