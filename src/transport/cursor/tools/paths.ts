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

/** An optional search root: `undefined` when absent or blank (the client's default), else resolved. */
export function resolveOptionalPath(root: string, path: string | undefined): string | undefined {
  return path === undefined || path.trim() === "" ? undefined : resolvePath(root, path);
}

export function isWindowsPath(path: string): boolean {
  return /^[a-zA-Z]:[\\/]/.test(path) || path.startsWith("\\\\");
}
