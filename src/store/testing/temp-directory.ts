/** Temporary directories for tests and the benchmark, always under the system temp directory. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TempDirectory {
  readonly path: string;
  remove(): void;
}

/** A fresh directory under the system's temp directory, removed by `remove()`. */
export function createTempDirectory(prefix = "cursor-byok-store-"): TempDirectory {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return {
    path,
    remove() {
      rmSync(path, { recursive: true, force: true });
    },
  };
}
