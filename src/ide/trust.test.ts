/**
 * Trusting the CA: macOS and Windows command lines through the command-runner seam; Linux for
 * real against a temporary NSS database with Debian's `certutil` (libnss3-tools).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { createCertificateAuthority } from "./ca.ts";
import {
  type CommandRunner,
  describeAction,
  isStepInPlace,
  performAction,
  planTrust,
  runCommand,
  toAddActions,
  toRemoveActions,
} from "./trust.ts";

const CA = { sha1: "AB12", serial: "7f01", sha256: "0123456789ABCDEF0123" };

function recorder(): { run: CommandRunner; lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    run: async (file, args) => {
      lines.push([file, ...args].join(" "));
      return { code: 0, stdout: "", stderr: "" };
    },
  };
}

const hasCertutil = (() => {
  try {
    execFileSync("certutil", ["-H"], { stdio: "ignore" });
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ENOENT";
  }
})();

describe("trusting the CA", () => {
  const platforms = [
    {
      name: "macOS: the login keychain for SSL, then NODE_EXTRA_CA_CERTS via launchctl",
      platform: "darwin",
      homeDir: "/Users/u",
      caPath: "/d/ca.pem",
      lines: [
        "security add-trusted-cert -r trustRoot -p ssl -k /Users/u/Library/Keychains/login.keychain-db /d/ca.pem",
        "launchctl setenv NODE_EXTRA_CA_CERTS /d/ca.pem",
        "launchctl unsetenv NODE_EXTRA_CA_CERTS",
        "security remove-trusted-cert /d/ca.pem",
        "security delete-certificate -Z AB12 /Users/u/Library/Keychains/login.keychain-db",
      ],
    },
    {
      name: "Windows: the current user's Root store (no elevation), then setx",
      platform: "win32",
      homeDir: "C:\\Users\\u",
      caPath: "C:\\d\\ca.pem",
      lines: [
        "certutil -user -addstore Root C:\\d\\ca.pem",
        "setx NODE_EXTRA_CA_CERTS C:\\d\\ca.pem",
        "reg delete HKCU\\Environment /v NODE_EXTRA_CA_CERTS /f",
        "certutil -user -delstore Root 7f01",
      ],
    },
  ];
  for (const { name, platform, homeDir, caPath, lines: expected } of platforms) {
    test(`${name}; undo reverses each, last first`, async () => {
      const steps = planTrust({ platform, homeDir, env: {}, caPath, ca: CA });
      const { run, lines } = recorder();
      for (const step of steps) {
        for (const action of toAddActions(step, caPath)) await performAction(action, run);
      }
      for (const step of [...steps].reverse()) {
        for (const action of toRemoveActions(step, caPath)) await performAction(action, run);
      }
      assert.deepEqual(lines, expected);
    });
  }

  test("a failing command says which, with what it printed", async () => {
    const failing: CommandRunner = async () => ({
      code: 3,
      stdout: "",
      stderr: "SEC_ERROR_BAD_DATABASE: bad\nmore",
    });
    await assert.rejects(
      performAction({ type: "run", file: "certutil", args: ["-d", "sql:/x", "-L"] }, failing),
      /`certutil -d sql:\/x -L` failed \(exit 3\): SEC_ERROR_BAD_DATABASE: bad \/ more/,
    );
  });

  test("a missing program is reported as such", async () => {
    const result = await runCommand("cursor-byok-no-such-program", []);
    assert.equal(result.code, 127);
    assert.match(result.stderr, /command not found/);
  });

  test("Linux, for real: add to a new NSS database, verify, remove, and the database is gone again", {
    skip: !hasCertutil && "certutil is not installed (Debian: apt-get install libnss3-tools)",
  }, async () => {
    const home = mkdtempSync(join(tmpdir(), "cursor-byok-nss-"));
    try {
      const authority = await createCertificateAuthority();
      const caPath = join(home, "ca.pem");
      writeFileSync(caPath, authority.certPem);
      const steps = planTrust({ platform: "linux", homeDir: home, env: {}, caPath, ca: authority });
      assert.deepEqual(
        steps.map((step) => step.type),
        ["nss", "env-file"],
      );
      const [nss, envFile] = steps;
      assert.ok(nss?.type === "nss" && nss.createDatabase);
      for (const step of steps) {
        for (const action of toAddActions(step, caPath)) await performAction(action, runCommand);
      }
      assert.equal(await isStepInPlace(nss, runCommand), true);
      assert.equal(await isStepInPlace(envFile as NonNullable<typeof envFile>, runCommand), true);
      const listed = execFileSync("certutil", ["-d", nss.database, "-L"], { encoding: "utf8" });
      assert.match(listed, new RegExp(`${nss.nickname}\\s+C,,`));
      assert.match(
        readFileSync(join(home, ".config", "environment.d", "60-cursor-byok.conf"), "utf8"),
        new RegExp(`NODE_EXTRA_CA_CERTS=${caPath}`),
      );
      for (const step of [...steps].reverse()) {
        for (const action of toRemoveActions(step, caPath)) {
          await performAction(action, runCommand);
          assert.ok(describeAction(action).length > 0);
        }
      }
      assert.equal(await isStepInPlace(nss, runCommand), false);
      assert.equal(existsSync(join(home, ".pki")), false, "the database setup created is removed");
      assert.equal(existsSync(join(home, ".config", "environment.d")), false);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("Linux: an existing NSS database keeps its other certificates", {
    skip: !hasCertutil && "certutil is not installed (Debian: apt-get install libnss3-tools)",
  }, async () => {
    const home = mkdtempSync(join(tmpdir(), "cursor-byok-nss-"));
    try {
      const database = `sql:${join(home, ".pki", "nssdb")}`;
      await performAction({ type: "make-dir", dir: join(home, ".pki", "nssdb") }, runCommand);
      await performAction(
        { type: "run", file: "certutil", args: ["-d", database, "-N", "--empty-password"] },
        runCommand,
      );
      const other = await createCertificateAuthority({
        permittedDomains: [],
        commonName: "someone else",
      });
      writeFileSync(join(home, "other.pem"), other.certPem);
      await performAction(
        {
          type: "run",
          file: "certutil",
          args: ["-d", database, "-A", "-t", "C,,", "-n", "other", "-i", join(home, "other.pem")],
        },
        runCommand,
      );
      const authority = await createCertificateAuthority();
      const caPath = join(home, "ca.pem");
      writeFileSync(caPath, authority.certPem);
      const [nss] = planTrust({ platform: "linux", homeDir: home, env: {}, caPath, ca: authority });
      assert.ok(nss?.type === "nss" && !nss.createDatabase);
      for (const action of toAddActions(nss, caPath)) await performAction(action, runCommand);
      for (const action of toRemoveActions(nss, caPath)) await performAction(action, runCommand);
      const listed = execFileSync("certutil", ["-d", database, "-L"], { encoding: "utf8" });
      assert.match(listed, /\nother\s+C,,/);
      assert.doesNotMatch(listed, /cursor-byok/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
