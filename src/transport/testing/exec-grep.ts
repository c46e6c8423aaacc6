/**
 * The test client's `grep_args` exec in plain Node, standing in for the ripgrep the IDE runs.
 * Behaves like `rg` started in the workspace directory: hidden entries, `.git` and binary files
 * are skipped; `glob` filters paths (ripgrep's rules, see glob-match.ts); an empty pattern
 * matches every line (how glob searches list files). Output modes: `content` (default, with
 * context lines), `files_with_matches`, `count`. `offset` then `head_limit` cut the entries
 * (lines in content mode, files otherwise); totals count everything before the cut.
 * Paths are shown as given: absolute under an absolute `path`, else relative to the workspace.
 */
import { readdir, readFile, stat } from "node:fs/promises";
import { extname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { create } from "@bufbuild/protobuf";
import { errorMessage } from "../../errors/error-message.ts";
import {
  type GrepArgs,
  type GrepContentMatch,
  GrepContentMatchSchema,
  type GrepFileMatch,
  GrepFileMatchSchema,
  type GrepResult,
  GrepResultSchema,
  type GrepUnionResult,
  GrepUnionResultSchema,
} from "../cursor/gen/agent/v1/exec_files_pb.js";
import { resolveInWorkspace, toLines } from "./exec-files.ts";
import { createGlobMatcher, type GlobMatcher } from "./glob-match.ts";

/** Longer lines are cut (`content_truncated`). */
export const MAX_GREP_LINE_CHARS = 2000;
/** Files visited at most per search. */
export const MAX_GREP_FILES = 20_000;

const FILE_TYPES: Readonly<Record<string, readonly string[]>> = {
  ts: [".ts", ".tsx", ".mts", ".cts"],
  js: [".js", ".jsx", ".mjs", ".cjs"],
  py: [".py", ".pyi"],
  rust: [".rs"],
  go: [".go"],
  java: [".java"],
  c: [".c", ".h"],
  cpp: [".cpp", ".cc", ".cxx", ".hpp", ".hh", ".h"],
  json: [".json"],
  md: [".md", ".markdown"],
  markdown: [".md", ".markdown"],
  yaml: [".yaml", ".yml"],
  toml: [".toml"],
  html: [".html", ".htm"],
  css: [".css"],
  sh: [".sh", ".bash", ".zsh"],
  txt: [".txt"],
};

const OUTPUT_MODES = ["content", "files_with_matches", "count"] as const;
type OutputMode = (typeof OUTPUT_MODES)[number];

interface Candidate {
  readonly path: string;
  readonly shown: string;
  readonly mtimeMs: number;
}

interface FileHits {
  readonly shown: string;
  /** Output entries in content mode (matches and context lines), in line order. */
  readonly lines: GrepContentMatch[];
  readonly matchedLines: number;
  readonly matches: number;
}

export async function runGrep(args: GrepArgs, workspace: string): Promise<GrepResult> {
  const mode = (args.outputMode ?? "content") as OutputMode;
  if (!OUTPUT_MODES.includes(mode)) return toError(`unknown output mode "${args.outputMode}"`);
  let regex: RegExp;
  try {
    const flags = `${args.caseInsensitive ? "i" : ""}${args.multiline ? "gms" : ""}`;
    regex = new RegExp(args.pattern, flags);
  } catch (error) {
    return toError(`regex parse error: ${errorMessage(error)}`);
  }
  const extensions = args.type === undefined || args.type === "" ? null : FILE_TYPES[args.type];
  if (extensions === undefined) return toError(`unrecognized file type: ${args.type}`);

  const root = resolveInWorkspace(workspace, args.path);
  const absoluteOutput = args.path !== undefined && isAbsolute(args.path);
  const show = (path: string): string =>
    absoluteOutput ? path : relative(resolve(workspace), path).split(sep).join("/");
  const glob = args.glob === undefined || args.glob === "" ? null : createGlobMatcher(args.glob);

  let candidates: Candidate[];
  try {
    candidates = await findFiles(root, glob, extensions, show);
  } catch (error) {
    return toError(`${args.path ?? root}: ${errorMessage(error)}`);
  }
  sortCandidates(candidates, args.sort, args.sortAscending);

  const before = Math.max(0, args.contextBefore ?? args.context ?? 0);
  const after = Math.max(0, args.contextAfter ?? args.context ?? 0);
  const hits: FileHits[] = [];
  for (const candidate of candidates) {
    const bytes = await readFile(candidate.path).catch(() => null);
    if (bytes === null || bytes.includes(0)) continue;
    const found = searchFile(bytes.toString("utf8"), regex, args.multiline === true, before, after);
    if (found.matchedLines > 0) hits.push({ shown: candidate.shown, ...found });
  }

  const offset = Math.max(0, args.offset ?? 0);
  const limit = args.headLimit !== undefined && args.headLimit > 0 ? args.headLimit : undefined;
  const union = toUnion(mode, hits, offset, limit);
  return create(GrepResultSchema, {
    result: {
      case: "success",
      value: {
        pattern: args.pattern,
        path: args.path ?? "",
        outputMode: mode,
        workspaceResults: { [resolve(workspace)]: union },
      },
    },
  });
}

function toUnion(
  mode: OutputMode,
  hits: readonly FileHits[],
  offset: number,
  limit: number | undefined,
): GrepUnionResult {
  const cut = <T>(items: readonly T[]): { items: T[]; truncated: boolean } => {
    const rest = items.slice(offset);
    const kept = limit === undefined ? rest : rest.slice(0, limit);
    return { items: kept, truncated: kept.length < rest.length };
  };
  const applied = {
    headLimitApplied: limit,
    offsetApplied: offset > 0 ? offset : undefined,
  };
  if (mode === "files_with_matches") {
    const { items, truncated } = cut(hits.map((hit) => hit.shown));
    return create(GrepUnionResultSchema, {
      result: {
        case: "files",
        value: { files: items, totalFiles: hits.length, clientTruncated: truncated, ...applied },
      },
    });
  }
  if (mode === "count") {
    const { items, truncated } = cut(hits);
    return create(GrepUnionResultSchema, {
      result: {
        case: "count",
        value: {
          counts: items.map((hit) => ({ file: hit.shown, count: hit.matches })),
          totalFiles: hits.length,
          totalMatches: hits.reduce((sum, hit) => sum + hit.matches, 0),
          clientTruncated: truncated,
          ...applied,
        },
      },
    });
  }
  const entries = hits.flatMap((hit) => hit.lines.map((line) => ({ file: hit.shown, line })));
  const { items, truncated } = cut(entries);
  const files: GrepFileMatch[] = [];
  for (const entry of items) {
    const last = files[files.length - 1];
    if (last !== undefined && last.file === entry.file) last.matches.push(entry.line);
    else files.push(create(GrepFileMatchSchema, { file: entry.file, matches: [entry.line] }));
  }
  return create(GrepUnionResultSchema, {
    result: {
      case: "content",
      value: {
        matches: files,
        totalLines: entries.length,
        totalMatchedLines: hits.reduce((sum, hit) => sum + hit.matchedLines, 0),
        clientTruncated: truncated,
        ...applied,
      },
    },
  });
}

function searchFile(
  text: string,
  regex: RegExp,
  multiline: boolean,
  before: number,
  after: number,
): Omit<FileHits, "shown"> {
  const lines = toLines(text);
  const matched = new Set<number>();
  let matches = 0;
  if (multiline) {
    const starts = lineStarts(text);
    regex.lastIndex = 0;
    for (const match of text.matchAll(regex)) {
      matches += 1;
      const first = lineAt(starts, match.index);
      const last = lineAt(starts, match.index + Math.max(0, match[0].length - 1));
      for (let line = first; line <= last && line < lines.length; line += 1) matched.add(line);
    }
  } else {
    lines.forEach((line, index) => {
      if (regex.test(line)) {
        matched.add(index);
        matches += 1;
      }
    });
  }
  const shown = new Set<number>();
  for (const index of matched) {
    for (let line = index - before; line <= index + after; line += 1) {
      if (line >= 0 && line < lines.length) shown.add(line);
    }
  }
  const output = [...shown]
    .sort((a, b) => a - b)
    .map((index) => {
      const content = lines[index] ?? "";
      const cut = content.length > MAX_GREP_LINE_CHARS;
      return create(GrepContentMatchSchema, {
        lineNumber: index + 1,
        content: cut ? content.slice(0, MAX_GREP_LINE_CHARS) : content,
        contentTruncated: cut,
        isContextLine: !matched.has(index),
      });
    });
  return { lines: output, matchedLines: matched.size, matches };
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i += 1) if (text[i] === "\n") starts.push(i + 1);
  return starts;
}

function lineAt(starts: readonly number[], offset: number): number {
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if ((starts[mid] ?? 0) <= offset) low = mid;
    else high = mid - 1;
  }
  return low;
}

async function findFiles(
  root: string,
  glob: GlobMatcher | null,
  extensions: readonly string[] | null,
  show: (path: string) => string,
): Promise<Candidate[]> {
  const info = await stat(root);
  const found: Candidate[] = [];
  const accept = (path: string, rel: string, mtimeMs: number): void => {
    if (glob !== null && !glob.matches(rel)) return;
    if (extensions !== null && !extensions.includes(extname(path))) return;
    found.push({ path, shown: show(path), mtimeMs });
  };
  if (info.isFile()) {
    accept(root, root.slice(root.lastIndexOf(sep) + 1), info.mtimeMs);
    return found;
  }
  const visit = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (found.length >= MAX_GREP_FILES) return;
      if (entry.name.startsWith(".")) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await visit(path);
      else if (entry.isFile()) {
        const mtimeMs = (await stat(path).catch(() => null))?.mtimeMs ?? 0;
        accept(path, relative(root, path).split(sep).join("/"), mtimeMs);
      }
    }
  };
  await visit(root);
  return found;
}

function sortCandidates(
  candidates: Candidate[],
  sort: string | undefined,
  ascending: boolean | undefined,
): void {
  const byPath = (a: Candidate, b: Candidate) =>
    a.shown < b.shown ? -1 : a.shown > b.shown ? 1 : 0;
  if (sort === "modified") candidates.sort((a, b) => a.mtimeMs - b.mtimeMs || byPath(a, b));
  else candidates.sort(byPath);
  if (ascending === false) candidates.reverse();
}

function toError(error: string): GrepResult {
  return create(GrepResultSchema, { result: { case: "error", value: { error } } });
}
