/**
 * `cursor-byok doctor --e2e`: one complete agent turn against the running server, through the
 * real protocol path (RunSSE + BidiAppend over HTTP/1.1, as `cursor-agent` uses it), played by
 * the protocol-faithful client in `transport/testing`. The server's default model is asked to
 * read a file in a temporary directory; the check passes when the turn ends without error after
 * a completed `read_file` call that the client really executed.
 *
 * Only read-only tools run: a write, delete or shell request is refused (the client reports
 * an error for it to the server), so a real model cannot change anything on this machine.
 * The turn is stored by the server like any other conversation.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { DEMO_MODEL_NAME } from "../llm/index.ts";
import {
  createCursorClient,
  type ExecOverride,
  TurnTimeoutError,
} from "../transport/testing/index.ts";
import type { CheckResult } from "./doctor-checks.ts";

export interface E2EOptions {
  /** The server, e.g. `http://127.0.0.1:8765`. */
  readonly url: string;
  /** Sent as the bearer token when the server requires one. */
  readonly accessToken?: string;
  readonly timeoutMs: number;
}

const READ_ONLY_EXECS = new Set([
  "readArgs",
  "redactedReadArgs",
  "lsArgs",
  "grepArgs",
  "diagnosticsArgs",
]);

/** Runs read-only execs for real and refuses every other one (the client reports an error). */
const readOnly: ExecOverride = (exec) => {
  if (READ_ONLY_EXECS.has(exec.message.case ?? "")) return undefined;
  throw new Error(`cursor-byok doctor runs read-only tools only; ${exec.message.case} refused`);
};

export async function checkEndToEnd(options: E2EOptions): Promise<CheckResult> {
  const workspace = await realpath(await mkdtemp(path.join(tmpdir(), "cursor-byok-doctor-")));
  const client = createCursorClient({
    baseUrl: options.url,
    httpVersion: "1.1",
    workspace,
    ...(options.accessToken === undefined
      ? {}
      : { headers: { authorization: `Bearer ${options.accessToken}` } }),
    onExec: readOnly,
    timeoutMs: options.timeoutMs,
  });
  try {
    return await runTurn(client, workspace, options);
  } catch (error) {
    return toFailure(error, options);
  } finally {
    await client.close();
    await rm(workspace, { recursive: true, force: true });
  }
}

async function runTurn(
  client: ReturnType<typeof createCursorClient>,
  workspace: string,
  options: E2EOptions,
): Promise<CheckResult> {
  const started = performance.now();
  const answer = await client.ai.getDefaultModelForCli({}, { timeoutMs: 10_000 });
  const model = answer.model?.modelId ?? "";
  if (model === "") {
    return { status: "fail", name: "e2e", detail: `${options.url} offers no default model` };
  }
  const word = `check-${randomBytes(6).toString("hex")}`;
  const file = path.join(workspace, "doctor-check.txt");
  await writeFile(file, `cursor-byok doctor ${word}\n`);
  const text =
    model === DEMO_MODEL_NAME
      ? `/demo tool read_file ${JSON.stringify({ path: file })}`
      : `Use the read_file tool to read ${file}, then reply with its exact content. Use no other tool.`;

  const turn = client.startTurn({ conversationId: `doctor-${randomUUID()}`, text, modelId: model });
  const result = await turn.done;
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const where = `${options.url}, model ${model}`;
  if (result.error !== undefined) {
    return {
      status: "fail",
      name: "e2e",
      detail: `${where}: the turn ended with an error: ${result.error.rawMessage}`,
      hint: "the server log says more; `cursor-byok doctor --live` checks the provider alone",
    };
  }
  const [appendError] = result.appendErrors;
  if (appendError !== undefined) {
    return {
      status: "fail",
      name: "e2e",
      detail: `${where}: the server refused a BidiAppend (${appendError.kind}): ${appendError.error.rawMessage}`,
    };
  }
  const read = result.view.toolCallsCompleted.some((call) => call.variant === "readToolCall");
  const executed = result.view.execs.some((exec) => exec.message.case === "readArgs");
  if (!read || !executed) {
    return {
      status: "fail",
      name: "e2e",
      detail: `${where}: the turn ended without a completed read_file call (answer: ${JSON.stringify(result.view.text.slice(0, 200))})`,
      hint:
        model === DEMO_MODEL_NAME
          ? "the demo model should always call read_file; this is a bug worth reporting"
          : "the model did not use the tool; try again, or make another model the default",
    };
  }
  const quoted = result.view.text.includes(word) ? ", and the answer quotes the file" : "";
  return {
    status: "ok",
    name: "e2e",
    detail: `one agent turn over RunSSE + BidiAppend at ${where}: read_file ran in the client${quoted} (${seconds} s)`,
  };
}

function toFailure(error: unknown, options: E2EOptions): CheckResult {
  if (error instanceof TurnTimeoutError) {
    return {
      status: "fail",
      name: "e2e",
      detail: `${options.url}: the turn did not finish within ${options.timeoutMs / 1000} s`,
      hint: "a slow model may need more time (--timeout <seconds>); the server log says what it waits for",
    };
  }
  const connectError = ConnectError.from(error);
  if (connectError.code === Code.Unauthenticated) {
    return {
      status: "fail",
      name: "e2e",
      detail: `${options.url} refused the access token`,
      hint: "use the configuration the server runs with (--config), so doctor sends the same token",
    };
  }
  if (connectError.code === Code.Unavailable || connectError.code === Code.Unknown) {
    return {
      status: "fail",
      name: "e2e",
      detail: `no cursor-byok server answers at ${options.url} (${connectError.rawMessage})`,
      hint: "start it first (cursor-byok serve, or npm start), or give --url with its address",
    };
  }
  return {
    status: "fail",
    name: "e2e",
    detail: `${options.url}: ${connectError.rawMessage}`,
  };
}
