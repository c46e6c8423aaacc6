/**
 * The test client's file-system execs, run for real on the workspace directory: read, write,
 * delete, ls and diagnostics (docs/protocol.md §2.7). Each takes the exec's args and returns
 * the result message the IDE would send; failures are result variants, never exceptions.
 */
import { mkdir, readdir, readFile, stat, unlink, writeFile } from "node:fs/promises";
import { dirname, extname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { create } from "@bufbuild/protobuf";
import { errorMessage } from "../../errors/error-message.ts";
import {
  type LsDirectoryTreeNode,
  LsDirectoryTreeNode_FileSchema,
  LsDirectoryTreeNodeSchema,
} from "../cursor/gen/agent/v1/common_pb.js";
import {
  type DeleteArgs,
  type DeleteResult,
  DeleteResultSchema,
  type DiagnosticsArgs,
  type DiagnosticsResult,
  DiagnosticsResultSchema,
  type LsArgs,
  type LsResult,
  LsResultSchema,
  type ReadArgs,
  type ReadResult,
  ReadResultSchema,
  type WriteArgs,
  type WriteResult,
  WriteResultSchema,
} from "../cursor/gen/agent/v1/exec_files_pb.js";
import { createGlobMatcher, type GlobMatcher } from "./glob-match.ts";

/** `path` as the client resolves it: absolute as is, relative to the workspace, empty = root. */
export function resolveInWorkspace(workspace: string, path: string | undefined): string {
  if (path === undefined || path === "") return resolve(workspace);
  return isAbsolute(path) ? resolve(path) : resolve(workspace, path);
}

/**
 * Reads a text file whole (`content`), or a file with NUL bytes as `data`. `offset` (1-based
 * first line) and `limit` (line count) are applied when set, with `range_applied`.
 */
export async function runRead(args: ReadArgs, workspace: string): Promise<ReadResult> {
  const path = resolveInWorkspace(workspace, args.path);
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    const code = errorCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") {
      return create(ReadResultSchema, {
        result: { case: "fileNotFound", value: { path: args.path } },
      });
    }
    if (code === "EACCES" || code === "EPERM") {
      return create(ReadResultSchema, {
        result: { case: "permissionDenied", value: { path: args.path } },
      });
    }
    if (code === "EISDIR") {
      return create(ReadResultSchema, {
        result: { case: "invalidFile", value: { path: args.path, reason: "is a directory" } },
      });
    }
    return create(ReadResultSchema, {
      result: { case: "error", value: { path: args.path, error: errorMessage(error) } },
    });
  }
  if (bytes.includes(0)) {
    return create(ReadResultSchema, {
      result: {
        case: "success",
        value: {
          path: args.path,
          output: { case: "data", value: new Uint8Array(bytes) },
          fileSize: BigInt(bytes.length),
        },
      },
    });
  }
  const text = bytes.toString("utf8");
  const lines = toLines(text);
  const ranged = args.offset !== undefined || args.limit !== undefined;
  const first = Math.max(1, args.offset ?? 1);
  const content = ranged
    ? lines
        .slice(first - 1, args.limit === undefined ? undefined : first - 1 + args.limit)
        .join("\n")
    : text;
  return create(ReadResultSchema, {
    result: {
      case: "success",
      value: {
        path: args.path,
        output: { case: "content", value: content },
        totalLines: lines.length,
        fileSize: BigInt(bytes.length),
        rangeApplied: ranged,
      },
    },
  });
}

/** Writes `file_bytes` when non-empty, else `file_text`, creating parent directories. */
export async function runWrite(args: WriteArgs, workspace: string): Promise<WriteResult> {
  const path = resolveInWorkspace(workspace, args.path);
  const bytes =
    args.fileBytes.length > 0 ? Buffer.from(args.fileBytes) : Buffer.from(args.fileText);
  try {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, bytes);
  } catch (error) {
    const code = errorCode(error);
    if (code === "EACCES" || code === "EPERM" || code === "EROFS") {
      return create(WriteResultSchema, {
        result: {
          case: "permissionDenied",
          value: {
            path: args.path,
            directory: dirname(path),
            operation: "write",
            error: errorMessage(error),
            isReadonly: code === "EROFS",
          },
        },
      });
    }
    if (code === "ENOSPC") {
      return create(WriteResultSchema, { result: { case: "noSpace", value: { path: args.path } } });
    }
    return create(WriteResultSchema, {
      result: { case: "error", value: { path: args.path, error: errorMessage(error) } },
    });
  }
  const text = bytes.toString("utf8");
  return create(WriteResultSchema, {
    result: {
      case: "success",
      value: {
        path: args.path,
        linesCreated: toLines(text).length,
        fileSize: bytes.length,
        fileContentAfterWrite: args.returnFileContentAfterWrite ? text : undefined,
      },
    },
  });
}

export async function runDelete(args: DeleteArgs, workspace: string): Promise<DeleteResult> {
  const path = resolveInWorkspace(workspace, args.path);
  try {
    const info = await stat(path);
    if (!info.isFile()) {
      return create(DeleteResultSchema, {
        result: {
          case: "notFile",
          value: { path: args.path, actualType: info.isDirectory() ? "directory" : "other" },
        },
      });
    }
    const previous = await readFile(path);
    await unlink(path);
    return create(DeleteResultSchema, {
      result: {
        case: "success",
        value: {
          path: args.path,
          deletedFile: path,
          fileSize: BigInt(previous.length),
          prevContent: previous.includes(0) ? "" : previous.toString("utf8"),
        },
      },
    });
  } catch (error) {
    const code = errorCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") {
      return create(DeleteResultSchema, {
        result: { case: "fileNotFound", value: { path: args.path } },
      });
    }
    if (code === "EACCES" || code === "EPERM") {
      return create(DeleteResultSchema, {
        result: {
          case: "permissionDenied",
          value: { path: args.path, clientVisibleError: errorMessage(error) },
        },
      });
    }
    if (code === "EBUSY") {
      return create(DeleteResultSchema, {
        result: { case: "fileBusy", value: { path: args.path } },
      });
    }
    return create(DeleteResultSchema, {
      result: { case: "error", value: { path: args.path, error: errorMessage(error) } },
    });
  }
}

/** Directories are expanded until this many entries are listed; deeper ones are summarised. */
export const MAX_LS_ENTRIES = 2000;

/**
 * The directory tree under `path`: children sorted by name, every directory with its subtree's
 * file count and extension counts. `.git` is never listed; `ignore` globs drop entries.
 * Directories past `MAX_LS_ENTRIES` are reported with `children_were_processed = false`.
 */
export async function runLs(args: LsArgs, workspace: string): Promise<LsResult> {
  const root = resolveInWorkspace(workspace, args.path);
  try {
    const info = await stat(root);
    if (!info.isDirectory()) {
      return create(LsResultSchema, {
        result: { case: "error", value: { path: args.path, error: "not a directory" } },
      });
    }
  } catch (error) {
    return create(LsResultSchema, {
      result: { case: "error", value: { path: args.path, error: errorMessage(error) } },
    });
  }
  const ignore = args.ignore.map(createGlobMatcher);
  const budget = { left: MAX_LS_ENTRIES };
  const tree = await toTreeNode(root, root, ignore, budget, true);
  return create(LsResultSchema, {
    result: { case: "success", value: { directoryTreeRoot: tree } },
  });
}

async function toTreeNode(
  root: string,
  path: string,
  ignore: readonly GlobMatcher[],
  budget: { left: number },
  expand: boolean,
): Promise<LsDirectoryTreeNode> {
  const entries = await readdir(path, { withFileTypes: true }).catch(() => []);
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const node = create(LsDirectoryTreeNodeSchema, { absPath: path, childrenWereProcessed: expand });
  const counts: Record<string, number> = {};
  let numFiles = 0;
  for (const entry of entries) {
    const full = join(path, entry.name);
    const rel = relative(root, full).split(sep).join("/");
    if (entry.name === ".git" || ignore.some((glob) => glob.matches(rel))) continue;
    if (entry.isDirectory()) {
      const show = expand && budget.left > 0;
      if (show) budget.left -= 1;
      const child = await toTreeNode(root, full, ignore, budget, show);
      numFiles += child.numFiles;
      for (const [ext, count] of Object.entries(child.fullSubtreeExtensionCounts)) {
        counts[ext] = (counts[ext] ?? 0) + count;
      }
      if (show) node.childrenDirs.push(child);
    } else {
      numFiles += 1;
      const ext = extname(entry.name);
      counts[ext] = (counts[ext] ?? 0) + 1;
      if (expand && budget.left > 0) {
        budget.left -= 1;
        node.childrenFiles.push(create(LsDirectoryTreeNode_FileSchema, { name: entry.name }));
      }
    }
  }
  node.numFiles = numFiles;
  node.fullSubtreeExtensionCounts = counts;
  return node;
}

/** No language server here: an existing file has no diagnostics. */
export async function runDiagnostics(
  args: DiagnosticsArgs,
  workspace: string,
): Promise<DiagnosticsResult> {
  const path = resolveInWorkspace(workspace, args.path);
  try {
    await stat(path);
  } catch {
    return create(DiagnosticsResultSchema, {
      result: { case: "fileNotFound", value: { path: args.path } },
    });
  }
  return create(DiagnosticsResultSchema, {
    result: { case: "success", value: { path: args.path, diagnostics: [], totalDiagnostics: 0 } },
  });
}

/** Lines of a text; a final newline does not start another line; "" has none. */
export function toLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split(/\r?\n/);
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}
