/**
 * Resolves a path the model gave against the workspace root the client reported. Windows roots
 * (`C:\…`, `\\server\…`) resolve with Windows rules, everything else with POSIX rules; the
 * client runs on the user's machine, not ours, so Node's host platform is irrelevant.
 */
import { posix, win32 } from "node:path";

export function resolvePath(root: string, path: string): string {
  const trimmed = path.trim();
  if (root === "") return trimmed;
  const flavour = isWindowsPath(root) ? win32 : posix;
  if (trimmed === "" || trimmed === ".") return root;
  if (flavour.isAbsolute(trimmed)) return trimmed;
  return flavour.join(root, trimmed);
}

export function isWindowsPath(path: string): boolean {
  return /^[a-zA-Z]:[\\/]/.test(path) || path.startsWith("\\\\");
}
