#!/usr/bin/env node
/**
 * Composition root. The transport (HTTP server, Cursor dialect, runner) is not built yet, so
 * there is no server to start: say so plainly instead of pretending.
 */
process.stderr.write(
  "cursor-byok: the server is not built yet. The agent loop exists (src/loop); the LLM layer, " +
    "store and Cursor transport are still to come. `npm test` runs what exists.\n",
);
process.exitCode = 1;
