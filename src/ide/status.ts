/**
 * What IDE mode looks like right now (docs/ide.md): the journal, the CA, Cursor's settings, the
 * proxy (listening, and answering a real request through it with our CA), each trust step and
 * the last request the IDE sent. Shared by `ide status`, `doctor` and `serve`'s start-up check.
 */
import { readFileSync } from "node:fs";
import https from "node:https";
import { createConnection } from "node:net";
import path from "node:path";
import { createProxyAgent } from "../transport/proxy/connect-through.ts";
import { PROBE_HEADER } from "../transport/proxy/proxy.ts";
import { type CaFiles, readCertificateAuthority } from "./ca.ts";
import { LAST_SEEN_FILE } from "./ide-proxy.ts";
import { type JournalRead, readJournal } from "./journal.ts";
import { readKeys, readSettingsText } from "./settings-file.ts";
import { type CommandRunner, isStepInPlace, type TrustStep } from "./trust.ts";

export const SELF_TEST_HOST = "api2.cursor.sh";
export const SELF_TEST_PATH = "/aiserver.v1.ServerConfigService/GetServerConfig";

export type SettingsState =
  | { readonly type: "ours"; readonly proxy: string }
  | { readonly type: "other"; readonly proxy: string | undefined }
  | { readonly type: "unreadable"; readonly problem: string };

export type SelfTest =
  | { readonly ok: true; readonly detail: string }
  | { readonly ok: false; readonly problem: string };

export interface IdeStatus {
  readonly journal: JournalRead;
  readonly ca: CaFiles;
  readonly settingsFile: string;
  readonly settings: SettingsState;
  readonly proxyUrl: string | undefined;
  readonly listening: boolean;
  readonly selfTest: SelfTest | undefined;
  readonly trust: readonly { readonly step: TrustStep; readonly inPlace: boolean | undefined }[];
  readonly lastSeen:
    | { readonly at: string; readonly host: string; readonly path: string }
    | undefined;
}

export async function readIdeStatus(inputs: {
  readonly ideDirectory: string;
  readonly settingsFile: string;
  /** The proxy URL to check when IDE mode is not set up (from the configuration). */
  readonly configuredProxyUrl: string;
  readonly run: CommandRunner;
}): Promise<IdeStatus> {
  const journal = readJournal(inputs.ideDirectory);
  const ca = readCertificateAuthority(inputs.ideDirectory);
  const proxyUrl = journal.type === "ok" ? journal.journal.proxyUrl : inputs.configuredProxyUrl;
  const settings = readSettingsState(inputs.settingsFile, proxyUrl);
  const listening = await isListening(proxyUrl);
  const selfTest =
    listening && ca.type === "ok" ? await runSelfTest(proxyUrl, ca.authority.certPem) : undefined;
  const trust =
    journal.type === "ok"
      ? await Promise.all(
          journal.journal.trust.map(async (step) => ({
            step,
            inPlace: await isStepInPlace(step, inputs.run),
          })),
        )
      : [];
  return {
    journal,
    ca,
    settingsFile: inputs.settingsFile,
    settings,
    proxyUrl,
    listening,
    selfTest,
    trust,
    lastSeen: readLastSeen(inputs.ideDirectory),
  };
}

/**
 * Cursor's settings point at our proxy while nothing listens there: Cursor cannot reach any
 * Cursor service until the server runs or the settings are undone. The fix, in words.
 */
export function toStaleProblem(status: IdeStatus): string | undefined {
  if (status.settings.type !== "ours" || status.listening) return undefined;
  const setUp = status.journal.type === "ok";
  return (
    `Cursor's settings (${status.settingsFile}) send its traffic to the cursor-byok proxy at ` +
    `${status.settings.proxy}, but nothing listens there, so Cursor cannot reach its servers. ` +
    (setUp
      ? "Start the server (`npm start` or `cursor-byok serve`), or run `cursor-byok ide undo` and restart Cursor."
      : "IDE mode is not set up in this data directory: remove `http.proxy` from that file (or run `cursor-byok ide setup`) and restart Cursor.")
  );
}

function readSettingsState(file: string, proxyUrl: string): SettingsState {
  try {
    const text = readSettingsText(file);
    if (text === undefined) return { type: "other", proxy: undefined };
    const value = readKeys(file, text, ["http.proxy"]).get("http.proxy");
    const proxy =
      value?.present === true && typeof value.value === "string" ? value.value : undefined;
    return proxy !== undefined && sameProxy(proxy, proxyUrl)
      ? { type: "ours", proxy }
      : { type: "other", proxy };
  } catch (error) {
    return { type: "unreadable", problem: (error as Error).message };
  }
}

function sameProxy(a: string, b: string): boolean {
  return a.replace(/\/+$/, "").toLowerCase() === b.replace(/\/+$/, "").toLowerCase();
}

function isListening(proxyUrl: string): Promise<boolean> {
  const url = new URL(proxyUrl);
  return new Promise((resolve) => {
    const socket = createConnection({
      host: url.hostname.replace(/^\[|\]$/g, ""),
      port: Number(url.port),
    });
    socket.setTimeout(2_000);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(false));
  });
}

/** A real request through the proxy, trusting only our CA, that our server must answer. */
export function runSelfTest(proxyUrl: string, caPem: string, timeoutMs = 5_000): Promise<SelfTest> {
  const agent = createProxyAgent({ proxyUrl, ca: [caPem] });
  return new Promise((resolve) => {
    const done = (result: SelfTest) => {
      agent.destroy();
      resolve(result);
    };
    const request = https.request(
      {
        host: SELF_TEST_HOST,
        path: SELF_TEST_PATH,
        method: "POST",
        agent,
        headers: { "content-type": "application/json", [PROBE_HEADER]: "1" },
        timeout: timeoutMs,
      },
      (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          if (body.length < 65_536) body += chunk;
        });
        response.on("end", () => {
          const ours = response.statusCode === 200 && /"configVersion":"cursor-byok/.test(body);
          done(
            ours
              ? {
                  ok: true,
                  detail: `https://${SELF_TEST_HOST}${SELF_TEST_PATH} answered by cursor-byok`,
                }
              : {
                  ok: false,
                  problem: `https://${SELF_TEST_HOST} through the proxy answered HTTP ${response.statusCode}, not cursor-byok`,
                },
          );
        });
      },
    );
    request.on("timeout", () => request.destroy(new Error(`no answer in ${timeoutMs} ms`)));
    request.on("error", (error) => done({ ok: false, problem: error.message }));
    request.end("{}");
  });
}

function readLastSeen(ideDirectory: string): IdeStatus["lastSeen"] {
  try {
    const note = JSON.parse(readFileSync(path.join(ideDirectory, LAST_SEEN_FILE), "utf8")) as {
      at?: unknown;
      host?: unknown;
      path?: unknown;
    };
    if (
      typeof note.at !== "string" ||
      typeof note.host !== "string" ||
      typeof note.path !== "string"
    ) {
      return undefined;
    }
    return { at: note.at, host: note.host, path: note.path };
  } catch {
    return undefined;
  }
}
