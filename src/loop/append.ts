/**
 * `list` followed by `items`, in a new array of exactly their length. A spread literal
 * (`[...list, item]`) leaves room for about 16 more entries (≈130 B, more for long lists), and
 * the loop's state keeps its lists — history, context, turn records — for as long as the
 * conversation is live (issue #19, heap per open stream). Pure: neither input is changed; the
 * entries are the same values (only `items` is spread, never its entries).
 */
export function append<T>(list: readonly T[], items: readonly T[]): T[] {
  return list.concat(items);
}
