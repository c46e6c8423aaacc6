/**
 * Ids that start with a prefix, as a range of the primary key (tables.ts
 * `readNewestConversationID`): every id that starts with `prefix` sorts in [`prefix`,
 * `toPrefixEnd(prefix)`) in byte order (SQLite's BINARY, PostgreSQL's `collate "C"`) and in
 * JavaScript's code-unit order alike, because the prefix's last character is ASCII.
 */

/** The least string greater than every string that starts with `prefix`. */
export function toPrefixEnd(prefix: string): string {
  const last = prefix.charCodeAt(prefix.length - 1);
  // Not past 0x7e: in UTF-8 a character up to U+007F is one byte, so bytes and code units agree.
  if (!(last >= 0x20 && last < 0x7f)) {
    throw new RangeError("an id prefix must end with a printable ASCII character");
  }
  return prefix.slice(0, -1) + String.fromCharCode(last + 1);
}
