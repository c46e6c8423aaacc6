/**
 * Making Cursor trust the local CA, per operating system (docs/ide.md), and undoing it:
 *
 * - Linux: the user's NSS database, which Chromium and so Electron read (`certutil`), and
 *   `NODE_EXTRA_CA_CERTS` for Cursor's Node processes through a systemd `environment.d` file.
 * - macOS: the login keychain, trusted for SSL for this user (`security`), and
 *   `NODE_EXTRA_CA_CERTS` through `launchctl setenv`.
 * - Windows: the current user's Root store (`certutil -user`, no elevation), and
 *   `NODE_EXTRA_CA_CERTS` through `setx`.
 *
 * Each step is plain data with the exact commands it runs, so `ide setup` can show them before
 * asking, the journal can record what was done, and tests can check the command lines.
 *
 * Why one file of about 430 lines: the three operating systems' steps as data, their add, remove
 * and verify actions, and the one function that performs an action, side by side, so each system's
 * add and remove can be read against each other.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync } from "node:fs";
import path from "node:path";
import { writeAtomically } from "./ca.ts";

export interface CommandResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a program with arguments (never through a shell). */
export type CommandRunner = (file: string, args: readonly string[]) => Promise<CommandResult>;

export const runCommand: CommandRunner = (file, args) =>
  new Promise((resolve) => {
    execFile(file, [...args], { timeout: 60_000, windowsHide: true }, (error, stdout, stderr) => {
      const code =
        error === null
          ? 0
          : typeof (error as NodeJS.ErrnoException).code === "number"
            ? Number((error as NodeJS.ErrnoException).code)
            : (error as NodeJS.ErrnoException).code === "ENOENT"
              ? 127
              : 1;
      resolve({
        code,
        stdout: String(stdout),
        stderr: error !== null && code === 127 ? `${file}: command not found` : String(stderr),
      });
    });
  });

/** One thing setup does to trust the CA, with what undo needs to reverse it. */
export type TrustStep =
  | {
      readonly type: "nss";
      /** `sql:<dir>`. */
      readonly database: string;
      readonly nickname: string;
      /** The database did not exist: setup created it (empty). */
      readonly createDatabase: boolean;
    }
  | ({ readonly type: "env-file"; readonly file: string } & NodeExtraCa)
  | { readonly type: "macos-keychain"; readonly keychain: string; readonly sha1: string }
  | ({ readonly type: "launchctl-env" } & NodeExtraCa)
  | { readonly type: "windows-root"; readonly serial: string }
  | ({ readonly type: "windows-env" } & NodeExtraCa);

/**
 * `NODE_EXTRA_CA_CERTS` names one file. When the user already has one (a company bundle, say),
 * the variable gets a bundle of theirs plus ours, and undo gives them their own value back.
 */
export interface NodeExtraCa {
  /** The value the variable gets: the CA file, or the bundle. */
  readonly caPath: string;
  /** The user's value before setup, if any. */
  readonly previous?: string;
}

/** The file that holds the user's previous extra certificates followed by our CA. */
export const NODE_EXTRA_BUNDLE_FILE = "node-extra-ca-certs.pem";

export interface TrustInputs {
  readonly platform: string;
  readonly homeDir: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly caPath: string;
  readonly ca: { readonly sha1: string; readonly serial: string; readonly sha256: string };
}

/** What trusting the CA means on this platform. */
export function planTrust(inputs: TrustInputs): TrustStep[] {
  const { platform, homeDir, caPath, ca } = inputs;
  const bundle = path.join(path.dirname(caPath), NODE_EXTRA_BUNDLE_FILE);
  const current = inputs.env.NODE_EXTRA_CA_CERTS;
  const extra: NodeExtraCa =
    current === undefined || current === "" || current === caPath || current === bundle
      ? { caPath }
      : { caPath: bundle, previous: current };
  if (platform === "darwin") {
    return [
      {
        type: "macos-keychain",
        keychain: path.join(homeDir, "Library", "Keychains", "login.keychain-db"),
        sha1: ca.sha1,
      },
      { type: "launchctl-env", ...extra },
    ];
  }
  if (platform === "win32") {
    return [
      { type: "windows-root", serial: ca.serial },
      { type: "windows-env", ...extra },
    ];
  }
  const database = toNssDatabase(homeDir);
  const config =
    inputs.env.XDG_CONFIG_HOME !== undefined && inputs.env.XDG_CONFIG_HOME !== ""
      ? inputs.env.XDG_CONFIG_HOME
      : path.join(homeDir, ".config");
  return [
    {
      type: "nss",
      database: `sql:${database}`,
      nickname: toNickname(ca.sha256),
      createDatabase: !existsSync(path.join(database, "cert9.db")),
    },
    {
      type: "env-file",
      file: path.join(config, "environment.d", "60-cursor-byok.conf"),
      ...extra,
    },
  ];
}

/** The certificate's name in an NSS database: unique per CA, so undo removes only ours. */
export function toNickname(sha256: string): string {
  return `cursor-byok local CA ${sha256.slice(0, 12).toLowerCase()}`;
}

/** `~/.pki/nssdb` (Chromium's), or the XDG location when only that one exists. */
export function toNssDatabase(homeDir: string): string {
  const classic = path.join(homeDir, ".pki", "nssdb");
  const xdg = path.join(homeDir, ".local", "share", "pki", "nssdb");
  if (!existsSync(classic) && existsSync(xdg)) return xdg;
  return classic;
}

/** A command or a file write, as shown to the user and run. */
export type Action =
  | { readonly type: "run"; readonly file: string; readonly args: readonly string[] }
  | { readonly type: "write-file"; readonly file: string; readonly text: string }
  | { readonly type: "remove-file"; readonly file: string }
  | { readonly type: "make-dir"; readonly dir: string }
  /** Writes the files `sources` one after the other into `file` (a certificate bundle). */
  | { readonly type: "write-bundle"; readonly file: string; readonly sources: readonly string[] }
  /** Removes an NSS database setup created, if no certificate is left in it. */
  | { readonly type: "remove-empty-nss-database"; readonly database: string };

export function toAddActions(step: TrustStep, caPath: string): Action[] {
  switch (step.type) {
    case "nss": {
      const dir = step.database.replace(/^sql:/, "");
      const create: Action[] = step.createDatabase
        ? [
            { type: "make-dir", dir },
            {
              type: "run",
              file: "certutil",
              args: ["-d", step.database, "-N", "--empty-password"],
            },
          ]
        : [];
      return [
        ...create,
        {
          type: "run",
          file: "certutil",
          args: ["-d", step.database, "-A", "-t", "C,,", "-n", step.nickname, "-i", caPath],
        },
      ];
    }
    case "env-file":
      return [
        ...toBundleActions(step, caPath),
        {
          type: "write-file",
          file: step.file,
          text: `# Written by \`cursor-byok ide setup\`; \`cursor-byok ide undo\` removes it.\nNODE_EXTRA_CA_CERTS=${step.caPath}\n`,
        },
      ];
    case "macos-keychain":
      return [
        {
          type: "run",
          file: "security",
          args: ["add-trusted-cert", "-r", "trustRoot", "-p", "ssl", "-k", step.keychain, caPath],
        },
      ];
    case "launchctl-env":
      return [
        ...toBundleActions(step, caPath),
        { type: "run", file: "launchctl", args: ["setenv", "NODE_EXTRA_CA_CERTS", step.caPath] },
      ];
    case "windows-root":
      return [{ type: "run", file: "certutil", args: ["-user", "-addstore", "Root", caPath] }];
    case "windows-env":
      return [
        ...toBundleActions(step, caPath),
        { type: "run", file: "setx", args: ["NODE_EXTRA_CA_CERTS", step.caPath] },
      ];
  }
}

function toBundleActions(step: NodeExtraCa, caPath: string): Action[] {
  return step.previous === undefined
    ? []
    : [{ type: "write-bundle", file: step.caPath, sources: [step.previous, caPath] }];
}

export function toRemoveActions(step: TrustStep, caPath: string): Action[] {
  switch (step.type) {
    case "nss": {
      const remove: Action = {
        type: "run",
        file: "certutil",
        args: ["-d", step.database, "-D", "-n", step.nickname],
      };
      return step.createDatabase
        ? [remove, { type: "remove-empty-nss-database", database: step.database }]
        : [remove];
    }
    case "env-file":
      return [{ type: "remove-file", file: step.file }];
    case "macos-keychain":
      return [
        { type: "run", file: "security", args: ["remove-trusted-cert", caPath] },
        {
          type: "run",
          file: "security",
          args: ["delete-certificate", "-Z", step.sha1, step.keychain],
        },
      ];
    case "launchctl-env":
      return [
        step.previous === undefined
          ? { type: "run", file: "launchctl", args: ["unsetenv", "NODE_EXTRA_CA_CERTS"] }
          : {
              type: "run",
              file: "launchctl",
              args: ["setenv", "NODE_EXTRA_CA_CERTS", step.previous],
            },
      ];
    case "windows-root":
      return [{ type: "run", file: "certutil", args: ["-user", "-delstore", "Root", step.serial] }];
    case "windows-env":
      return [
        step.previous === undefined
          ? {
              type: "run",
              file: "reg",
              args: ["delete", "HKCU\\Environment", "/v", "NODE_EXTRA_CA_CERTS", "/f"],
            }
          : { type: "run", file: "setx", args: ["NODE_EXTRA_CA_CERTS", step.previous] },
      ];
  }
}

/** The command that tells whether the step is in place (exit 0), if the platform has one. */
export function toVerifyAction(step: TrustStep): Action | undefined {
  switch (step.type) {
    case "nss":
      return {
        type: "run",
        file: "certutil",
        args: ["-d", step.database, "-L", "-n", step.nickname],
      };
    case "macos-keychain":
      return {
        type: "run",
        file: "security",
        args: ["find-certificate", "-Z", "-a", "-c", "cursor-byok", step.keychain],
      };
    case "windows-root":
      return {
        type: "run",
        file: "certutil",
        args: ["-user", "-verifystore", "Root", step.serial],
      };
    case "launchctl-env":
      return { type: "run", file: "launchctl", args: ["getenv", "NODE_EXTRA_CA_CERTS"] };
    case "windows-env":
      return {
        type: "run",
        file: "reg",
        args: ["query", "HKCU\\Environment", "/v", "NODE_EXTRA_CA_CERTS"],
      };
    case "env-file":
      return undefined;
  }
}

/** Whether a step is in place now: `undefined` when it cannot be checked here. */
export async function isStepInPlace(
  step: TrustStep,
  run: CommandRunner,
): Promise<boolean | undefined> {
  if (step.type === "env-file") {
    try {
      return readFileSync(step.file, "utf8").includes(`NODE_EXTRA_CA_CERTS=${step.caPath}`);
    } catch {
      return false;
    }
  }
  const verify = toVerifyAction(step);
  if (verify === undefined || verify.type !== "run") return undefined;
  const result = await run(verify.file, verify.args);
  if (result.code === 127) return undefined;
  if (step.type === "macos-keychain") return result.code === 0 && result.stdout.includes(step.sha1);
  if (step.type === "launchctl-env")
    return result.code === 0 && result.stdout.trim() === step.caPath;
  if (step.type === "windows-env") return result.code === 0 && result.stdout.includes(step.caPath);
  return result.code === 0;
}

/**
 * The programs `actions` run that are not installed (a `--help` run that cannot start), so that
 * setup can refuse before it changes anything rather than stop half-way.
 */
export async function findMissingPrograms(
  actions: readonly Action[],
  run: CommandRunner,
): Promise<string[]> {
  const programs = [
    ...new Set(actions.flatMap((action) => (action.type === "run" ? [action.file] : []))),
  ];
  const missing: string[] = [];
  for (const program of programs) {
    if ((await run(program, ["--help"])).code === 127) missing.push(program);
  }
  return missing;
}

/** What to install for the missing programs, in words. */
export function toInstallHint(missing: readonly string[]): string {
  const hints = missing.map((program) =>
    program === "certutil"
      ? "certutil is not installed (Debian/Ubuntu: sudo apt install libnss3-tools; Fedora: sudo dnf install nss-tools; Arch: sudo pacman -S nss)"
      : `${program} was not found on PATH`,
  );
  return `${hints.join("; ")}.`;
}

/** One line a person can read (and paste) for an action. */
export function describeAction(action: Action): string {
  switch (action.type) {
    case "run":
      return [action.file, ...action.args].map(quoteArg).join(" ");
    case "write-file":
      return `write ${action.file}: ${action.text.trim().split("\n").at(-1)}`;
    case "remove-file":
      return `remove ${action.file}`;
    case "make-dir":
      return `mkdir -p ${quoteArg(action.dir)}`;
    case "write-bundle":
      return `write ${action.file}: ${action.sources.join(" + ")}`;
    case "remove-empty-nss-database":
      return `remove ${action.database.replace(/^sql:/, "")} if no certificate is left in it (setup created it)`;
  }
}

/** Carries out an action; the error message says what failed and what the program said. */
export async function performAction(action: Action, run: CommandRunner): Promise<void> {
  switch (action.type) {
    case "run": {
      const result = await run(action.file, action.args);
      if (result.code !== 0) {
        const said = (result.stderr || result.stdout).trim().split("\n").slice(0, 3).join(" / ");
        throw new Error(`\`${describeAction(action)}\` failed (exit ${result.code}): ${said}`);
      }
      return;
    }
    case "write-file":
      if (existsSync(action.file) && !readFileSync(action.file, "utf8").includes("cursor-byok")) {
        throw new Error(
          `${action.file} exists and was not written by cursor-byok; not replacing it`,
        );
      }
      mkdirSync(path.dirname(action.file), { recursive: true });
      writeAtomically(action.file, action.text, 0o644);
      return;
    case "write-bundle": {
      const parts = action.sources.map((source) => {
        try {
          return readFileSync(source, "utf8").trim();
        } catch (error) {
          throw new Error(
            `cannot read ${source} to combine it with our CA (${(error as NodeJS.ErrnoException).code})`,
          );
        }
      });
      writeAtomically(action.file, `${parts.join("\n")}\n`, 0o644);
      return;
    }
    case "remove-file":
      rmSync(action.file, { force: true });
      removeIfEmpty(path.dirname(action.file));
      return;
    case "remove-empty-nss-database": {
      const listed = await run("certutil", ["-d", action.database, "-L"]);
      // The listing is a two-line header, then one line per certificate.
      const certificates = listed.stdout
        .split("\n")
        .slice(3)
        .filter((line) => line.trim() !== "");
      if (listed.code !== 0 || certificates.length > 0) return;
      const dir = action.database.replace(/^sql:/, "");
      for (const name of ["cert9.db", "key4.db", "pkcs11.txt"])
        rmSync(path.join(dir, name), { force: true });
      removeIfEmpty(dir);
      removeIfEmpty(path.dirname(dir));
      return;
    }
    case "make-dir":
      mkdirSync(action.dir, { recursive: true, mode: 0o700 });
      return;
  }
}

function removeIfEmpty(dir: string): void {
  try {
    if (readdirSync(dir).length === 0) rmdirSync(dir);
  } catch {
    // Gone already, or not ours to remove.
  }
}

function quoteArg(arg: string): string {
  return /^[\w@%+=:,./\\-]+$/.test(arg) ? arg : `"${arg.replaceAll('"', '\\"')}"`;
}
