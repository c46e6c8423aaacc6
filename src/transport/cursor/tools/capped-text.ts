/**
 * Bounded accumulation of streamed output: keeps the first `head` and the last `tail`
 * characters and counts what fell in between, so a chatty command cannot exhaust memory while
 * the model still sees how its output started and ended.
 */

export interface CappedText {
  readonly head: string;
  readonly tail: string;
  /** Characters received in total. */
  readonly total: number;
}

export const EMPTY_CAPPED_TEXT: CappedText = { head: "", tail: "", total: 0 };

export const CAPPED_HEAD = 20_000;
export const CAPPED_TAIL = 40_000;

export function appendCapped(text: CappedText, chunk: string): CappedText {
  if (chunk === "") return text;
  const total = text.total + chunk.length;
  if (text.head.length < CAPPED_HEAD) {
    const room = CAPPED_HEAD - text.head.length;
    const head = text.head + chunk.slice(0, room);
    const rest = chunk.slice(room);
    return { head, tail: rest.slice(-CAPPED_TAIL), total };
  }
  return { head: text.head, tail: (text.tail + chunk).slice(-CAPPED_TAIL), total };
}

/** Characters received but not kept. */
export function omittedOf(text: CappedText): number {
  return text.total - text.head.length - text.tail.length;
}

/** The kept text; a cut in the middle is stated. */
export function renderCapped(text: CappedText): string {
  const omitted = omittedOf(text);
  if (omitted === 0) return text.head + text.tail;
  return `${text.head}\n[… ${omitted} characters omitted …]\n${text.tail}`;
}
