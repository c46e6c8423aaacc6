/**
 * The dashboard's files: a fixed table, so no request path ever reaches the file system. The page
 * is plain HTML, CSS and JavaScript modules in `ui/` (no build step: what is in the repository is
 * what is served); the chart library is uPlot, served from its npm package (docs/dashboard.md).
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface StaticFile {
  readonly path: string;
  readonly contentType: string;
}

const UI_DIRECTORY = join(dirname(fileURLToPath(import.meta.url)), "ui");
const UPLOT_DIRECTORY = dirname(createRequire(import.meta.url).resolve("uplot"));

const TYPES: Readonly<Record<string, string>> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
};

/** The page's own files, by name in `ui/`. */
export const UI_FILES = [
  "index.html",
  "app.js",
  "api.js",
  "dom.js",
  "format.js",
  "route.js",
  "conversations.js",
  "conversation.js",
  "usage.js",
  "setup.js",
  "style.css",
] as const;

const FILES = new Map<string, StaticFile>([
  ["/", file(UI_DIRECTORY, "index.html")],
  ...UI_FILES.map((name): [string, StaticFile] => [`/${name}`, file(UI_DIRECTORY, name)]),
  ["/vendor/uPlot.esm.js", file(UPLOT_DIRECTORY, "uPlot.esm.js")],
  ["/vendor/uPlot.min.css", file(UPLOT_DIRECTORY, "uPlot.min.css")],
]);

function file(directory: string, name: string): StaticFile {
  const extension = name.slice(name.lastIndexOf(".") + 1);
  return {
    path: join(directory, name),
    contentType: TYPES[extension] ?? "application/octet-stream",
  };
}

/** The file served at `path` (relative to `/ui`), or `null`. */
export function findStaticFile(path: string): StaticFile | null {
  return FILES.get(path) ?? null;
}

export function readStaticFile(file: StaticFile): Promise<Buffer> {
  return readFile(file.path);
}
