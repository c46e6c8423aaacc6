/**
 * A compact unified diff of two texts for the client's edit view. The differing region is the
 * span between the longest common prefix and suffix of lines, shown as one hunk with a few
 * lines of context: exact for the single-region edits edit_file makes, and still a correct
 * (if coarse) description of any change.
 */
import { toLines } from "./text.ts";

export interface LineDiff {
  readonly diff: string;
  readonly added: number;
  readonly removed: number;
}

const CONTEXT = 3;

export function diffLines(path: string, before: string, after: string): LineDiff {
  const a = toLines(before);
  const b = toLines(after);
  let prefix = 0;
  while (prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix += 1;
  let suffix = 0;
  while (
    suffix < a.length - prefix &&
    suffix < b.length - prefix &&
    a[a.length - 1 - suffix] === b[b.length - 1 - suffix]
  ) {
    suffix += 1;
  }
  const removed = a.slice(prefix, a.length - suffix);
  const added = b.slice(prefix, b.length - suffix);
  if (removed.length === 0 && added.length === 0) return { diff: "", added: 0, removed: 0 };
  const start = Math.max(0, prefix - CONTEXT);
  const lead = a.slice(start, prefix);
  const trail = a.slice(a.length - suffix, Math.min(a.length, a.length - suffix + CONTEXT));
  const oldCount = lead.length + removed.length + trail.length;
  const newCount = lead.length + added.length + trail.length;
  const lines = [
    `--- ${path}`,
    `+++ ${path}`,
    `@@ -${oldCount === 0 ? start : start + 1},${oldCount} +${newCount === 0 ? start : start + 1},${newCount} @@`,
    ...lead.map((line) => ` ${line}`),
    ...removed.map((line) => `-${line}`),
    ...added.map((line) => `+${line}`),
    ...trail.map((line) => ` ${line}`),
  ];
  return { diff: `${lines.join("\n")}\n`, added: added.length, removed: removed.length };
}
