/**
 * A parsed YAML configuration file that remembers where each value came from, so a problem
 * found after parsing (an unknown field, a wrong type, a bad model entry) can name the line and
 * column it is on.
 */
import { type Document, isMap, isScalar, isSeq, LineCounter, type Node, parseDocument } from "yaml";
import { ConfigFileError } from "./config-file-error.ts";

/** A field path: object keys and list indexes, e.g. `["models", 2, "baseUrl"]`. */
export type FieldPath = readonly (string | number)[];

export interface YamlSource {
  readonly file: string;
  /** The file's value as plain data (`null` for an empty file). */
  readonly value: unknown;
  /** An error for `path`, located at the value there (at its key when `atKey`), or as close as exists. */
  errorAt(
    path: FieldPath,
    problem: string,
    options?: { readonly atKey?: boolean },
  ): ConfigFileError;
}

/**
 * Parses `text` (the content of `file`).
 * @throws ConfigFileError for a syntax error, with the line and column the parser reports.
 */
export function parseYamlSource(file: string, text: string): YamlSource {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const [syntax] = doc.errors;
  if (syntax !== undefined) {
    const { line, col } = lines.linePos(syntax.pos[0]);
    throw new ConfigFileError({
      file,
      line,
      column: col,
      problem: `YAML syntax error: ${syntax.message}`,
    });
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch {
    // The library's message quotes the offending alias, which may be a secret: say what is
    // wrong without echoing the text.
    throw new ConfigFileError({
      file,
      problem:
        "YAML error: an alias (*name) refers to no anchor defined before it, or aliases " +
        "expand too much",
    });
  }
  return {
    file,
    value,
    errorAt(path, problem, options = {}) {
      const offset = findOffset(doc, path, options.atKey ?? false);
      const { line, col } = lines.linePos(offset);
      return new ConfigFileError({
        file,
        line,
        column: col,
        ...(path.length === 0 ? {} : { field: toFieldText(path) }),
        problem,
      });
    },
  };
}

/** `["models", 2, "baseUrl"]` → `models[2].baseUrl`. */
export function toFieldText(path: FieldPath): string {
  let text = "";
  for (const segment of path) {
    text += typeof segment === "number" ? `[${segment}]` : text === "" ? segment : `.${segment}`;
  }
  return text;
}

/** `models[2].baseUrl` → `["models", 2, "baseUrl"]` (the inverse of `toFieldText`). */
export function fromFieldText(text: string): FieldPath {
  const path: (string | number)[] = [];
  for (const match of text.matchAll(/\[(\d+)\]|([^.[\]]+)/g)) {
    path.push(match[1] === undefined ? (match[2] ?? "") : Number(match[1]));
  }
  return path;
}

/** The source offset of the value at `path`, or of the deepest node on the way to it. */
function findOffset(doc: Document, path: FieldPath, atKey: boolean): number {
  let node: Node | null = doc.contents;
  let offset = node?.range?.[0] ?? 0;
  for (const [index, segment] of path.entries()) {
    const last = index === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find(
        (item) => isScalar(item.key) && String(item.key.value) === String(segment),
      );
      if (pair === undefined) break;
      const key = isScalar(pair.key) ? pair.key : null;
      const value = pair.value as Node | null;
      if ((last && atKey) || value === null || value.range == null) {
        return key?.range?.[0] ?? offset;
      }
      node = value;
    } else if (isSeq(node) && typeof segment === "number") {
      const item = node.items[segment] as Node | null | undefined;
      if (item == null) break;
      node = item;
    } else {
      break;
    }
    offset = node.range?.[0] ?? offset;
  }
  return offset;
}
