#!/usr/bin/env node
/**
 * The `cursor-byok` command (package `bin`, and what `npm start` runs): the composition root.
 * The commands in `cli/` wire configuration, store, LLM layer and transport together.
 */
import packageJson from "../package.json" with { type: "json" };
import { createProcessIO } from "./cli/io.ts";
import { runCli } from "./cli/run-cli.ts";

// Output piped into a reader that stops early (`| head`) is not an error of ours.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  });
}

try {
  process.exitCode = await runCli(process.argv.slice(2), createProcessIO(), {
    version: packageJson.version,
  });
} catch (error) {
  process.stderr.write(
    `cursor-byok: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
}
