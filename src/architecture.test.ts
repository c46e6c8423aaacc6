/**
 * The module boundaries of docs/design.md §3, checked on the import graph of `src/`:
 *
 *   transport → runner, loop, llm, store, web
 *   runner    → loop, llm, store (it knows nothing of Cursor, protobuf or Connect)
 *   store     → loop (types; at run time only the pure hashing files)
 *   loop      → llm (types only)
 *   llm       → nothing of ours
 *   web       → nothing of ours (search providers and the guarded fetch; transport runs it)
 *   errors    → nothing of ours; every module may import it (the text of a thrown value)
 *
 * plus: only `llm/` imports pi-ai; only `transport/` (and the composition root) imports protobuf
 * and Connect, so the runner cannot; the loop's production code uses no I/O module, clock or randomness; no import
 * cycles between files. Files outside these modules form the composition root, which may
 * import anything and which none of the modules may import.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, test } from "node:test";

const SRC = resolve(import.meta.dirname);
const MODULES = ["loop", "llm", "transport", "runner", "store", "web", "errors"] as const;
type Module = (typeof MODULES)[number] | "root";

interface Import {
  readonly from: string;
  readonly specifier: string;
  readonly typeOnly: boolean;
}

/** Imports of one source file. `import type`/`export type` and all-`type` named lists are type-only. */
export function toImports(file: string, source: string): Import[] {
  const imports: Import[] = [];
  const statement =
    /(?:^|\n)\s*(import|export)\s+(type\s+)?([^;]*?)\s*from\s*["']([^"']+)["']|(?:^|\n)\s*import\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;
  for (const match of source.matchAll(statement)) {
    const specifier = match[4] ?? match[5] ?? match[6];
    if (specifier === undefined) continue;
    const clause = match[3] ?? "";
    const named = /^\{([\s\S]*)\}$/.exec(clause.trim());
    const names =
      named?.[1]
        ?.split(",")
        .map((part) => part.trim())
        .filter((part) => part !== "") ?? [];
    const allTypeNames = names.length > 0 && names.every((part) => part.startsWith("type "));
    imports.push({ from: file, specifier, typeOnly: match[2] !== undefined || allTypeNames });
  }
  return imports;
}

function moduleOf(path: string): Module {
  const first = path.split("/")[0];
  return (MODULES as readonly string[]).includes(first ?? "") ? (first as Module) : "root";
}

function isTestFile(path: string): boolean {
  return (
    path.endsWith(".test.ts") ||
    path.split("/").includes("fixtures") ||
    path.split("/").includes("testing") ||
    /(^|\/)testing\.ts$/.test(path) ||
    /(^|\/)test-[^/]*\.ts$/.test(path)
  );
}

/** Paths are relative to `src/`, with `/` separators. */
export function findViolations(files: ReadonlyMap<string, string>): string[] {
  const violations: string[] = [];
  const edges = new Map<string, string[]>();
  for (const [file, source] of files) {
    const from = moduleOf(file);
    const production = !isTestFile(file);
    const fileEdges: string[] = [];
    edges.set(file, fileEdges);
    for (const imp of toImports(file, source)) {
      const where = `${file} imports ${imp.specifier}`;
      if (!imp.specifier.startsWith(".")) {
        if (imp.specifier.startsWith("@earendil-works/pi-ai") && from !== "llm") {
          violations.push(`${where}: only src/llm may import pi-ai`);
        }
        if (
          /^@(bufbuild|connectrpc)\//.test(imp.specifier) &&
          from !== "transport" &&
          from !== "root"
        ) {
          violations.push(`${where}: only src/transport may import protobuf or Connect`);
        }
        if (
          from === "loop" &&
          production &&
          imp.specifier.startsWith("node:") &&
          imp.specifier !== "node:crypto"
        ) {
          violations.push(`${where}: the loop does no I/O (only node:crypto is allowed)`);
        }
        continue;
      }
      const target = join(dirname(file), imp.specifier).split(sep).join("/");
      const to = moduleOf(target);
      if (production) fileEdges.push(target);
      if (!production || from === to || from === "root") continue;
      if (to === "root") {
        violations.push(`${where}: modules may not import the composition root`);
      } else if (to === "errors") {
        // the leaf every module may use
      } else if (from === "transport") {
        // transport may import runner, loop, llm, store and web
      } else if (from === "runner" && (to === "loop" || to === "llm" || to === "store")) {
        // the runner drives the loop over the store and the LLM layer
      } else if (from === "store" && to === "loop") {
        const pureHashing = ["loop/history-hash.ts", "loop/canonical-json.ts"].includes(target);
        if (!imp.typeOnly && !pureHashing) {
          violations.push(`${where}: store may import loop types only (and its hashing files)`);
        }
      } else if (from === "loop" && to === "llm") {
        if (!imp.typeOnly) violations.push(`${where}: loop may import llm types only`);
      } else {
        violations.push(`${where}: ${from} may not import ${to}`);
      }
    }
    if (from === "loop" && production) {
      for (const forbidden of [
        /Date\.now\(/,
        /new Date\(/,
        /Math\.random\(/,
        /performance\.now\(/,
        /randomUUID\(/,
        /\bprocess\./,
        /setTimeout\(/,
      ]) {
        if (forbidden.test(source))
          violations.push(`${file}: the loop is pure, but uses ${forbidden.source}`);
      }
    }
  }
  violations.push(...findCycles(edges));
  return violations;
}

function findCycles(edges: ReadonlyMap<string, string[]>): string[] {
  const cycles: string[] = [];
  const state = new Map<string, "visiting" | "done">();
  const stack: string[] = [];
  const visit = (file: string): void => {
    state.set(file, "visiting");
    stack.push(file);
    for (const next of edges.get(file) ?? []) {
      if (!edges.has(next)) continue;
      const seen = state.get(next);
      if (seen === "visiting")
        cycles.push(`import cycle: ${[...stack.slice(stack.indexOf(next)), next].join(" → ")}`);
      else if (seen === undefined) visit(next);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of [...edges.keys()].sort()) if (!state.has(file)) visit(file);
  return cycles;
}

function readSources(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".ts") || entry.name.endsWith(".d.ts")) continue;
    const path = join(entry.parentPath, entry.name);
    if (path.split(sep).includes("gen")) continue;
    files.set(relative(dir, path).split(sep).join("/"), readFileSync(path, "utf8"));
  }
  return files;
}

describe("architecture", () => {
  test("src/ follows the module boundaries of docs/design.md §3", () => {
    const files = readSources(SRC);
    assert.ok(files.has("loop/transition.ts"), "the source tree was not found");
    assert.deepEqual(findViolations(files), []);
  });

  test("the checker reports each kind of violation", () => {
    const files = new Map([
      [
        "loop/a.ts",
        'import { x } from "../store/s.ts";\nimport { y } from "../llm/types.ts";\nimport { readFileSync } from "node:fs";\nconst t = Date.now();',
      ],
      ["llm/b.ts", 'import type { Input } from "../loop/types.ts";'],
      [
        "store/s.ts",
        'import { transition } from "../loop/transition.ts";\nimport { hashMessage } from "../loop/history-hash.ts";',
      ],
      ["store/t.ts", 'import { type A, type B } from "../loop/types.ts";'],
      ["web/w.ts", 'import type { Tool } from "../llm/types.ts";'],
      ["web/x.ts", 'import { errorMessage } from "../errors/error-message.ts";'],
      ["errors/f.ts", 'import type { Tool } from "../llm/types.ts";'],
      ["transport/c.ts", 'import { stream } from "@earendil-works/pi-ai";\nimport "../main.ts";'],
      [
        "runner/r.ts",
        'import { transition } from "../loop/transition.ts";\nimport { ConnectError } from "@connectrpc/connect";\nimport { create } from "@bufbuild/protobuf";\nimport type { Log } from "../transport/log.ts";\nimport { fetchPage } from "../web/fetch.ts";',
      ],
      ["store/u.ts", 'import type { Runner } from "../runner/types.ts";'],
      ["loop/d.ts", 'import { e } from "./e.ts";'],
      ["loop/e.ts", 'export { d } from "./d.ts";'],
      [
        "loop/d.test.ts",
        'import { readFileSync } from "node:fs";\nimport { s } from "../store/s.ts";',
      ],
    ]);
    assert.deepEqual(findViolations(files), [
      "loop/a.ts imports ../store/s.ts: loop may not import store",
      "loop/a.ts imports ../llm/types.ts: loop may import llm types only",
      "loop/a.ts imports node:fs: the loop does no I/O (only node:crypto is allowed)",
      "loop/a.ts: the loop is pure, but uses Date\\.now\\(",
      "llm/b.ts imports ../loop/types.ts: llm may not import loop",
      "store/s.ts imports ../loop/transition.ts: store may import loop types only (and its hashing files)",
      "web/w.ts imports ../llm/types.ts: web may not import llm",
      "errors/f.ts imports ../llm/types.ts: errors may not import llm",
      "transport/c.ts imports @earendil-works/pi-ai: only src/llm may import pi-ai",
      "transport/c.ts imports ../main.ts: modules may not import the composition root",
      "runner/r.ts imports @connectrpc/connect: only src/transport may import protobuf or Connect",
      "runner/r.ts imports @bufbuild/protobuf: only src/transport may import protobuf or Connect",
      "runner/r.ts imports ../transport/log.ts: runner may not import transport",
      "runner/r.ts imports ../web/fetch.ts: runner may not import web",
      "store/u.ts imports ../runner/types.ts: store may not import runner",
      "import cycle: loop/d.ts → loop/e.ts → loop/d.ts",
    ]);
  });
});
