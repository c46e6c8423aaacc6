/**
 * `cursor-byok ide setup | status | undo`: connects the Cursor IDE through the local HTTPS proxy
 * (docs/ide.md). Setup and undo show every change first and make it only after the user agrees
 * (or `--yes`).
 */
import path from "node:path";
import type { Config } from "../config/index.ts";
import { toIdeDirectory } from "../ide/journal.ts";
import { toSettingsPath } from "../ide/settings-file.ts";
import { describeSetupPlan, type IdeContext, performSetup, planSetup } from "../ide/setup.ts";
import { readIdeStatus, toStaleProblem } from "../ide/status.ts";
import { type CommandRunner, describeAction, runCommand, toAddActions } from "../ide/trust.ts";
import { describeUndoPlan, performUndo, planUndo } from "../ide/undo.ts";
import { CONFIG_OPTION, HELP_OPTION, parseFlags, toStringFlag } from "./args.ts";
import type { Command } from "./command.ts";
import type { CliIO } from "./io.ts";
import { loadSettings } from "./settings.ts";
import { UsageError } from "./usage-error.ts";

const OPTIONS = {
  ...HELP_OPTION,
  ...CONFIG_OPTION,
  "data-dir": { type: "string" },
  settings: { type: "string" },
  "proxy-port": { type: "string" },
  yes: { type: "boolean", short: "y" },
} as const;

/**
 * `run` carries out the trust commands; tests pass a stand-in, and may name the `platform` whose
 * trust steps and settings path are used (the configuration still resolves on this machine).
 */
export function createIdeCommand(run: CommandRunner = runCommand, platform?: string): Command {
  return {
    name: "ide",
    summary: "connect the Cursor IDE: ide setup | ide status | ide undo",
    help: () =>
      [
        "Usage: cursor-byok ide <setup|status|undo> [options]",
        "",
        "Connects the Cursor IDE to this server through a local HTTPS proxy that decrypts only",
        "*.cursor.sh traffic, with a certificate authority created for this install alone.",
        "",
        "  setup    shows every change it will make, asks, then makes them:",
        "           a local CA (name-constrained to cursor.sh), the proxy keys in Cursor's",
        "           settings.json (backed up), and trust for the CA where Cursor reads it",
        "  status   what is set up, whether the proxy is live, when Cursor last reached it",
        "  undo     puts everything back (settings byte for byte when unchanged since)",
        "",
        "Restart Cursor after setup and after undo. While IDE mode is set up, `cursor-byok",
        "serve` (and `npm start`) also runs the proxy.",
        "",
        "Options:",
        "  -y, --yes             make the changes without asking",
        "  --settings <file>     Cursor's settings.json (default: Cursor's usual place for this OS)",
        "  --proxy-port <n>      the proxy's port (setup; ide.proxyPort, default 8766)",
        "  --data-dir <dir>      where the CA and the record of changes live (data.directory)",
        "  --config <file>       the configuration file",
        "  -h, --help            show this help",
        "",
      ].join("\n"),
    async run(args, io) {
      const { values, positionals } = parseFlags(args, OPTIONS, true);
      const [action, ...extra] = positionals;
      if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
      const proxyPort = toStringFlag(values, "proxy-port");
      if (
        proxyPort !== undefined &&
        (!/^\d{1,5}$/.test(proxyPort) || Number(proxyPort) < 1 || Number(proxyPort) > 65_535)
      ) {
        throw new UsageError("--proxy-port must be a port from 1 to 65535");
      }
      const dataDirectory = toStringFlag(values, "data-dir");
      const config = loadSettings(
        toStringFlag(values, "config"),
        {
          ...(dataDirectory === undefined ? {} : { dataDirectory }),
          ...(proxyPort === undefined ? {} : { proxyPort: Number(proxyPort) }),
        },
        io,
      );
      const settingsFlag = toStringFlag(values, "settings");
      const context: IdeContext = {
        platform: platform ?? io.platform,
        homeDir: io.homeDir,
        env: io.env,
        ideDirectory: toIdeDirectory(config.dataDirectory),
        settingsFile:
          settingsFlag === undefined ? toSettingsPath(io) : path.resolve(io.cwd, settingsFlag),
        run,
      };
      const yes = values.yes === true;
      switch (action) {
        case "setup":
          return runSetup(context, config, io, yes);
        case "undo":
          return runUndo(context, io, yes);
        case "status":
          return runStatus(context, config, io);
        case undefined:
          throw new UsageError("say what to do: cursor-byok ide setup, ide status or ide undo");
        default:
          throw new UsageError(`unknown action "${action}" (setup, status or undo)`);
      }
    },
  };
}

export const IDE_COMMAND = createIdeCommand();

export function toProxyUrl(config: Config): string {
  return `http://127.0.0.1:${config.ide.proxyPort}`;
}

async function runSetup(
  context: IdeContext,
  config: Config,
  io: CliIO,
  yes: boolean,
): Promise<number> {
  const checked = await planSetup(context, toProxyUrl(config));
  if (checked.type === "refused") {
    io.stderr.write(`cursor-byok: ide setup: ${checked.problem}\n`);
    return 1;
  }
  if (checked.type === "already") {
    const wanted = toProxyUrl(config);
    if (checked.journal.proxyUrl !== wanted) {
      io.stderr.write(
        `cursor-byok: IDE mode is already set up with the proxy at ${checked.journal.proxyUrl}, not ${wanted}. ` +
          "To change the port: `cursor-byok ide undo`, then `cursor-byok ide setup --proxy-port <port>`.\n",
      );
      return 1;
    }
    io.stdout.write(
      `IDE mode is already set up (since ${checked.journal.createdAt}; proxy ${checked.journal.proxyUrl}).\n` +
        "`cursor-byok ide status` shows it; `cursor-byok ide undo` removes it.\n",
    );
    return 0;
  }
  const plan = checked.plan;
  io.stdout.write(
    `cursor-byok ide setup will make these changes:\n\n${describeSetupPlan(plan, context.ideDirectory).join("\n")}\n\n`,
  );
  if (!(await agree(io, yes, "Make these changes? [y/N] "))) return 1;
  try {
    await performSetup(plan, context, (line) => io.stdout.write(`  ${line}\n`));
  } catch (error) {
    io.stderr.write(
      `cursor-byok: ide setup stopped: ${(error as Error).message}\n` +
        "What was done so far is recorded; `cursor-byok ide undo` puts it back.\n",
    );
    return 1;
  }
  const lines = [
    "",
    "IDE mode is set up. Next:",
    `  1. start the server: npm start, or restart it if it runs (it also runs the proxy on ${plan.proxyUrl})`,
    "  2. restart Cursor (it reads its settings and certificates at start)",
  ];
  if (context.platform === "linux") {
    lines.push(
      "  Cursor's Node processes read NODE_EXTRA_CA_CERTS from ~/.config/environment.d at your next",
      `  login; until then start Cursor from a terminal: NODE_EXTRA_CA_CERTS=${plan.caPath} cursor`,
    );
  }
  lines.push("Check with `cursor-byok ide status`; undo with `cursor-byok ide undo`.", "");
  io.stdout.write(lines.join("\n"));
  return 0;
}

async function runUndo(context: IdeContext, io: CliIO, yes: boolean): Promise<number> {
  const checked = await planUndo(context);
  if (checked.type === "not-set-up") {
    io.stdout.write(
      `IDE mode is not set up (no record in ${context.ideDirectory}); nothing to undo.\n`,
    );
    return 0;
  }
  if (checked.type === "refused") {
    io.stderr.write(`cursor-byok: ide undo: ${checked.problem}\n`);
    return 1;
  }
  io.stdout.write(
    `cursor-byok ide undo will:\n\n${describeUndoPlan(checked.plan)
      .map((line) => `  ${line}`)
      .join("\n")}\n\n`,
  );
  if (!(await agree(io, yes, "Undo these changes? [y/N] "))) return 1;
  const failures = await performUndo(checked.plan, context, (line) =>
    io.stdout.write(`  ${line}\n`),
  );
  if (failures.length > 0) {
    io.stderr.write(
      `cursor-byok: ide undo could not finish:\n${failures.map((f) => `  ${f}\n`).join("")}` +
        "Fix what is named above and run `cursor-byok ide undo` again.\n",
    );
    return 1;
  }
  io.stdout.write("\nIDE mode is undone. Restart Cursor.\n");
  return 0;
}

async function runStatus(context: IdeContext, config: Config, io: CliIO): Promise<number> {
  const status = await readIdeStatus({
    ideDirectory: context.ideDirectory,
    settingsFile: context.settingsFile,
    configuredProxyUrl: toProxyUrl(config),
    run: context.run,
  });
  const lines: string[] = [];
  const setUp = status.journal.type === "ok";
  lines.push(
    status.journal.type === "ok"
      ? `IDE mode: set up since ${status.journal.journal.createdAt}`
      : status.journal.type === "bad"
        ? `IDE mode: unclear (${status.journal.problem})`
        : "IDE mode: not set up (cursor-byok ide setup)",
  );
  lines.push(
    status.ca.type === "ok"
      ? `CA:       ${path.join(context.ideDirectory, "ca.pem")} valid until ${status.ca.authority.notAfter.toISOString().slice(0, 10)}`
      : status.ca.type === "bad"
        ? `CA:       unusable: ${status.ca.problem}`
        : "CA:       none",
  );
  lines.push(
    status.settings.type === "ours"
      ? `settings: ${status.settingsFile} sends Cursor through ${status.settings.proxy}`
      : status.settings.type === "unreadable"
        ? `settings: ${status.settings.problem}`
        : `settings: ${status.settingsFile} does not use our proxy${status.settings.proxy === undefined ? "" : ` (http.proxy is ${status.settings.proxy})`}`,
  );
  lines.push(
    `proxy:    ${status.proxyUrl ?? "?"} ${status.listening ? "is listening" : "is not listening (start the server)"}`,
  );
  if (status.selfTest !== undefined) {
    lines.push(
      status.selfTest.ok
        ? `test:     ${status.selfTest.detail}`
        : `test:     FAILED: ${status.selfTest.problem}`,
    );
  }
  for (const { step, inPlace } of status.trust) {
    const action = toAddActions(
      step,
      status.journal.type === "ok" ? status.journal.journal.ca.certFile : "",
    )
      .map(describeAction)
      .at(-1);
    lines.push(
      `trust:    ${inPlace === true ? "in place" : inPlace === false ? "MISSING" : "cannot check here"}: ${action}`,
    );
  }
  lines.push(
    status.lastSeen === undefined
      ? "last seen: Cursor has not reached the proxy yet"
      : `last seen: ${status.lastSeen.at} (${status.lastSeen.host}${status.lastSeen.path})`,
  );
  const stale = toStaleProblem(status);
  if (stale !== undefined) lines.push("", `PROBLEM: ${stale}`);
  io.stdout.write(`${lines.join("\n")}\n`);
  const healthy =
    stale === undefined &&
    (!setUp ||
      (status.ca.type === "ok" &&
        status.settings.type === "ours" &&
        status.trust.every((entry) => entry.inPlace !== false)));
  return healthy ? 0 : 1;
}

async function agree(io: CliIO, yes: boolean, question: string): Promise<boolean> {
  if (yes) return true;
  if (io.ask === undefined) {
    io.stderr.write(
      "cursor-byok: these changes need your consent: run this in a terminal to be asked, or pass --yes.\n",
    );
    return false;
  }
  const answer = (await io.ask(question)).trim().toLowerCase();
  if (answer === "y" || answer === "yes") return true;
  io.stdout.write("Nothing was changed.\n");
  return false;
}
