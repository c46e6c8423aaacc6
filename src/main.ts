#!/usr/bin/env node
/**
 * Composition root: wires configuration, store, LLM layer and transport, and runs the command.
 */
import pino from "pino";
import { runServe } from "./cli/serve.ts";

const log = pino({ level: process.env.LOG_LEVEL ?? "info" });

runServe({ models: [], server: {}, log }).catch((error: unknown) => {
  log.error(
    { error: error instanceof Error ? error.message : String(error) },
    "cursor-byok failed",
  );
  process.exitCode = 1;
});
