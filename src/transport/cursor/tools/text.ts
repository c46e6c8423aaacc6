/**
 * Text helpers for results shown to the model: every cut is stated in the text itself, so the
 * model never mistakes a truncated output for a complete one.
 */

/** Keeps the head and the tail of `text` within `limit` characters and says what was cut. */
export function truncateMiddle(text: string, limit: number, unit = "characters"): string {
  if (text.length <= limit) return text;
  const head = Math.floor(limit * 0.4);
  const tail = limit - head;
  const cut = text.length - head - tail;
  return `${text.slice(0, head)}\n[… ${cut} ${unit} omitted …]\n${text.slice(text.length - tail)}`;
}

/** Keeps the first `limit` characters of `text` and says what was cut. */
export function truncateEnd(text: string, limit: number): { text: string; cut: number } {
  if (text.length <= limit) return { text, cut: 0 };
  return { text: text.slice(0, limit), cut: text.length - limit };
}

/** Splits file content into lines; a final newline does not start another line. */
export function toLines(content: string): string[] {
  if (content === "") return [];
  const lines = content.split(/\r?\n/);
  if (lines.at(-1) === "") lines.pop();
  return lines;
}

/** "1 file", "2 files". */
export function plural(count: number, noun: string, nounPlural = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : nounPlural}`;
}
