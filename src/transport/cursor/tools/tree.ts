/**
 * Renders a directory tree the client reported (`LsDirectoryTreeNode`) as compact indented text,
 * directories first with a trailing "/", within a budget of lines; a cut is stated.
 */
import type { LsDirectoryTreeNode } from "../gen/agent/v1/common_pb.js";

export function renderTree(root: LsDirectoryTreeNode, maxLines: number): string {
  const lines: string[] = [root.absPath === "" ? "." : `${root.absPath}/`];
  let omitted = 0;
  const visit = (node: LsDirectoryTreeNode, depth: number): void => {
    const indent = "  ".repeat(depth);
    const dirs = [...node.childrenDirs].sort((a, b) =>
      compare(baseName(a.absPath), baseName(b.absPath)),
    );
    const files = [...node.childrenFiles].sort((a, b) => compare(a.name, b.name));
    for (const dir of dirs) {
      if (lines.length >= maxLines) {
        omitted += 1 + countEntries(dir);
        continue;
      }
      const note = dir.childrenWereProcessed ? "" : ` (${describeUnexpanded(dir)})`;
      lines.push(`${indent}${baseName(dir.absPath)}/${note}`);
      if (dir.childrenWereProcessed) visit(dir, depth + 1);
    }
    for (const file of files) {
      if (lines.length >= maxLines) {
        omitted += 1;
        continue;
      }
      lines.push(`${indent}${file.name}`);
    }
  };
  visit(root, 1);
  if (omitted > 0) lines.push(`[… ${omitted} more entries not shown]`);
  return lines.join("\n");
}

function describeUnexpanded(node: LsDirectoryTreeNode): string {
  const counts = Object.entries(node.fullSubtreeExtensionCounts)
    .sort(([a], [b]) => compare(a, b))
    .map(([ext, count]) => `${count} ${ext === "" ? "no ext" : ext}`);
  const files = node.numFiles > 0 ? `${node.numFiles} files` : "not expanded";
  return counts.length > 0 ? `${files}: ${counts.slice(0, 5).join(", ")}` : files;
}

function countEntries(node: LsDirectoryTreeNode): number {
  let count = node.childrenFiles.length;
  for (const dir of node.childrenDirs) count += 1 + countEntries(dir);
  return count;
}

function baseName(path: string): string {
  const trimmed = path.replace(/[\\/]+$/, "");
  const index = Math.max(trimmed.lastIndexOf("/"), trimmed.lastIndexOf("\\"));
  return index === -1 ? trimmed : trimmed.slice(index + 1);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
