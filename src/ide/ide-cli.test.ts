/**
 * `cursor-byok ide setup | status | undo` in-process: the settings file round trip (byte for byte
 * when untouched, the user's later edits kept otherwise), consent, refusals that change nothing,
 * and the macOS and Windows trust commands through a stateful stand-in of `security`/`certutil`.
 */
import assert from "node:assert/strict";
import { createHash, X509Certificate } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { type AddressInfo, connect, createServer } from "node:net";
import { join } from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";
import { DOCTOR_COMMAND } from "../cli/doctor.ts";
import { createIdeCommand } from "../cli/ide.ts";
import { createTempHome, createTestIO, type TempHome, type TestIO } from "../cli/testing.ts";
import type { CommandRunner } from "./trust.ts";

const SETTINGS = `// Cursor settings, with comments
{
\t"editor.fontSize": 13, // small
\t"http.proxySupport": "off",
\t"workbench.colorTheme": "Default Dark+",
}
`;

/** What the OS keeps, played by a stand-in that understands the commands setup runs. */
function createFakeOs(): {
  run: CommandRunner;
  calls: string[];
  trusted: Set<string>;
  env: Map<string, string>;
} {
  const calls: string[] = [];
  const trusted = new Set<string>();
  const env = new Map<string, string>();
  const fingerprint = (file: string) =>
    createHash("sha1")
      .update(new X509Certificate(readFileSync(file)).raw)
      .digest("hex")
      .toUpperCase();
  const run: CommandRunner = async (file, args) => {
    calls.push([file, ...args].join(" "));
    const ok = (stdout = "") => ({ code: 0, stdout, stderr: "" });
    const [first] = args;
    if (first === "--help") return ok(`usage: ${file} …`);
    if (file === "security" && first === "add-trusted-cert")
      trusted.add(fingerprint(args.at(-1) ?? ""));
    if (file === "security" && first === "find-certificate") {
      return ok([...trusted].map((sha1) => `SHA-1 hash: ${sha1}\n`).join(""));
    }
    if (file === "security" && first === "delete-certificate") trusted.delete(args[2] ?? "");
    if (file === "launchctl" && first === "setenv") env.set(args[1] ?? "", args[2] ?? "");
    if (file === "launchctl" && first === "getenv") return ok(env.get(args[1] ?? "") ?? "");
    if (file === "launchctl" && first === "unsetenv") env.delete(args[1] ?? "");
    if (file === "certutil" && args.includes("-addstore")) {
      trusted.add(new X509Certificate(readFileSync(args.at(-1) ?? "")).serialNumber);
    }
    if (file === "certutil" && args.includes("-verifystore")) {
      return trusted.has(args.at(-1) ?? "") ? ok() : { code: 1, stdout: "", stderr: "not found" };
    }
    if (file === "certutil" && args.includes("-delstore")) trusted.delete(args.at(-1) ?? "");
    if (file === "setx") env.set(args[0] ?? "", args[1] ?? "");
    if (file === "reg" && first === "query") {
      const value = env.get(args[3] ?? "");
      return value === undefined
        ? {
            code: 1,
            stdout: "",
            stderr: "ERROR: The system was unable to find the specified registry key or value.",
          }
        : ok(`    NODE_EXTRA_CA_CERTS    REG_SZ    ${value}\n`);
    }
    if (file === "reg" && first === "delete") {
      if (!env.has(args[3] ?? "")) return { code: 1, stdout: "", stderr: "ERROR: unable to find" };
      env.delete(args[3] ?? "");
    }
    return ok();
  };
  return { run, calls, trusted, env };
}

/** A port nothing listens on (one the system just handed out and took back). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function assertClosed(port: number): Promise<void> {
  const open = await new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
  assert.equal(open, false, `something listens on 127.0.0.1:${port}; this test needs it closed`);
}

describe("cursor-byok ide", () => {
  let home: TempHome;
  let settingsFile: string;
  let dataDir: string;

  beforeEach(() => {
    home = createTempHome();
    settingsFile = join(home.dir, "Cursor", "User", "settings.json");
    mkdirSync(join(home.dir, "Cursor", "User"), { recursive: true });
    writeFileSync(settingsFile, SETTINGS);
    dataDir = join(home.dir, "data");
  });
  afterEach(() => home.cleanup());

  // The platform decides the trust steps; paths still resolve on this machine.
  let platform = "darwin";
  const io = (forPlatform = "darwin", ask?: (q: string) => Promise<string>): TestIO => {
    platform = forPlatform;
    return {
      ...createTestIO({ env: home.env, home: home.dir }),
      ...(ask === undefined ? {} : { ask }),
    };
  };
  const run = (os: ReturnType<typeof createFakeOs>, args: string[], testIo: TestIO) =>
    createIdeCommand(os.run, platform).run(
      [...args, "--settings", settingsFile, "--data-dir", dataDir, "--proxy-port", "18799"],
      testIo,
    );

  for (const platform of ["darwin", "win32"]) {
    test(`${platform}: setup then undo leaves the settings byte for byte and the trust store as it was`, async () => {
      const os = createFakeOs();
      const setupIo = io(platform);
      assert.equal(await run(os, ["setup", "--yes"], setupIo), 0, setupIo.err());
      const written = readFileSync(settingsFile, "utf8");
      assert.match(written, /"http\.proxy": "http:\/\/127\.0\.0\.1:18799"/);
      assert.match(written, /\/\/ small/);
      assert.equal(os.trusted.size, 1);
      assert.equal(os.env.get("NODE_EXTRA_CA_CERTS"), join(dataDir, "ide", "ca.pem"));
      const key = statSync(join(dataDir, "ide", "ca-key.pem"));
      assert.equal(key.mode & 0o777, 0o600, "the CA key is readable by the user only");

      const statusIo = io(platform);
      await run(os, ["status"], statusIo);
      assert.match(statusIo.out(), /IDE mode: set up/);
      assert.match(statusIo.out(), /trust: {4}in place/);

      const undoIo = io(platform);
      assert.equal(await run(os, ["undo", "--yes"], undoIo), 0, undoIo.err());
      assert.equal(readFileSync(settingsFile, "utf8"), SETTINGS);
      assert.equal(os.trusted.size, 0);
      assert.equal(os.env.size, 0);
      assert.equal(existsSync(join(dataDir, "ide", "ca-key.pem")), false);
      assert.equal(existsSync(join(dataDir, "ide", "setup.json")), false);
    });
  }

  for (const platform of ["darwin", "win32"]) {
    test(`${platform}: a NODE_EXTRA_CA_CERTS the user had is kept in a bundle and given back by undo`, async () => {
      const os = createFakeOs();
      const corporate = join(home.dir, "corporate.pem");
      writeFileSync(
        corporate,
        "-----BEGIN CERTIFICATE-----\ncorporate\n-----END CERTIFICATE-----\n",
      );
      os.env.set("NODE_EXTRA_CA_CERTS", corporate);
      const withVariable = {
        ...createTestIO({ env: { ...home.env, NODE_EXTRA_CA_CERTS: corporate }, home: home.dir }),
      };
      const code = await createIdeCommand(os.run, platform).run(
        ["setup", "--yes", "--settings", settingsFile, "--data-dir", dataDir],
        withVariable,
      );
      assert.equal(code, 0, withVariable.err());
      const bundle = join(dataDir, "ide", "node-extra-ca-certs.pem");
      assert.equal(os.env.get("NODE_EXTRA_CA_CERTS"), bundle);
      const bundled = readFileSync(bundle, "utf8");
      assert.ok(bundled.includes("corporate"), "the user's certificates stay trusted");
      assert.ok(bundled.includes(readFileSync(join(dataDir, "ide", "ca.pem"), "utf8").trim()));
      const undoIo = io(platform);
      assert.equal(await run(os, ["undo", "--yes"], undoIo), 0, undoIo.err());
      assert.equal(os.env.get("NODE_EXTRA_CA_CERTS"), corporate, "the user's own value is back");
      assert.equal(existsSync(bundle), false);
    });
  }

  test("the setup plan is shown before anything changes", async () => {
    const os = createFakeOs();
    writeFileSync(
      settingsFile,
      SETTINGS.replace(
        '"http.proxySupport": "off",',
        '"http.proxySupport": "off",\n\t"http.proxy": "http://corp.example:3128",',
      ),
    );
    const testIo = io("darwin");
    await run(os, ["setup", "--yes"], testIo);
    const out = testIo.out();
    const plan = out.indexOf("will make these changes");
    const firstChange = out.indexOf("created the CA");
    assert.ok(plan >= 0 && firstChange > plan);
    assert.match(out, /http\.proxySupport: "off" → "on"/);
    assert.match(
      out,
      /security add-trusted-cert -r trustRoot -p ssl -k .*login\.keychain-db .*ca\.pem/,
    );
  });

  test("a file the user changed after setup keeps the user's changes; only our keys go", async () => {
    const os = createFakeOs();
    assert.equal(await run(os, ["setup", "--yes"], io("darwin")), 0);
    const edited = readFileSync(settingsFile, "utf8").replace(
      '"editor.fontSize": 13',
      '"editor.fontSize": 16',
    );
    writeFileSync(settingsFile, edited);
    const undoIo = io("darwin");
    assert.equal(await run(os, ["undo", "--yes"], undoIo), 0, undoIo.err());
    const after = readFileSync(settingsFile, "utf8");
    assert.match(after, /"editor\.fontSize": 16/);
    assert.match(after, /"http\.proxySupport": "off"/);
    assert.doesNotMatch(after, /http\.proxy"|disableHttp2|systemCertificatesV2/);
    assert.match(after, /\/\/ Cursor settings, with comments/);
  });

  test("without a terminal and without --yes nothing is changed", async () => {
    const os = createFakeOs();
    const testIo = io("darwin");
    assert.equal(await run(os, ["setup"], testIo), 1);
    assert.match(testIo.err(), /need your consent.*--yes/);
    assert.equal(readFileSync(settingsFile, "utf8"), SETTINGS);
    assert.equal(existsSync(join(dataDir, "ide")), false);
    assert.deepEqual(
      os.calls.filter((call) => !call.endsWith(" --help")),
      [],
      "only the programs' presence was checked",
    );
  });

  test("answering no changes nothing; answering yes sets up", async () => {
    const os = createFakeOs();
    const no = io("darwin", async () => "n");
    assert.equal(await run(os, ["setup"], no), 1);
    assert.match(no.out(), /Nothing was changed/);
    assert.equal(readFileSync(settingsFile, "utf8"), SETTINGS);
    const questions: string[] = [];
    const yes = io("darwin", async (question) => {
      questions.push(question);
      return "yes";
    });
    assert.equal(await run(os, ["setup"], yes), 0);
    assert.deepEqual(questions, ["Make these changes? [y/N] "]);
    assert.notEqual(readFileSync(settingsFile, "utf8"), SETTINGS);
  });

  test("a settings file with a syntax error: a clear message, no change at all", async () => {
    const os = createFakeOs();
    writeFileSync(settingsFile, '{ "a": 1 "b": 2 }');
    const testIo = io("darwin");
    assert.equal(await run(os, ["setup", "--yes"], testIo), 1);
    assert.match(testIo.err(), /settings\.json: 1:10: Comma expected.*Nothing was changed/);
    assert.equal(readFileSync(settingsFile, "utf8"), '{ "a": 1 "b": 2 }');
    assert.equal(existsSync(join(dataDir, "ide")), false);
  });

  test("Cursor's folder missing: a clear message, no change", async () => {
    const os = createFakeOs();
    const testIo = io("darwin");
    const code = await createIdeCommand(os.run, "darwin").run(
      [
        "setup",
        "--yes",
        "--settings",
        join(home.dir, "nowhere", "settings.json"),
        "--data-dir",
        dataDir,
      ],
      testIo,
    );
    assert.equal(code, 1);
    assert.match(testIo.err(), /not found, and neither is its folder.*Is Cursor installed/);
  });

  test("setup twice says it is set up already; undo twice says nothing to undo", async () => {
    const os = createFakeOs();
    assert.equal(await run(os, ["setup", "--yes"], io("darwin")), 0);
    const again = io("darwin");
    assert.equal(await run(os, ["setup", "--yes"], again), 0);
    assert.match(again.out(), /already set up/);
    assert.equal(await run(os, ["undo", "--yes"], io("darwin")), 0);
    const undoAgain = io("darwin");
    assert.equal(await run(os, ["undo", "--yes"], undoAgain), 0);
    assert.match(undoAgain.out(), /nothing to undo/);
  });

  test("a trust step that fails stops setup; undo then reverses what was done", async () => {
    const os = createFakeOs();
    const failing: CommandRunner = async (file, args) =>
      file === "launchctl" && args[0] === "setenv"
        ? { code: 1, stdout: "", stderr: "launchctl: not allowed" }
        : os.run(file, args);
    const testIo = io("darwin");
    const code = await createIdeCommand(failing, "darwin").run(
      ["setup", "--yes", "--settings", settingsFile, "--data-dir", dataDir],
      testIo,
    );
    assert.equal(code, 1);
    assert.match(testIo.err(), /launchctl setenv .* failed \(exit 1\): launchctl: not allowed/);
    assert.match(testIo.err(), /ide undo/);
    assert.equal(os.trusted.size, 1, "the keychain step was done before the failure");
    const undoIo = io("darwin");
    assert.equal(await run(os, ["undo", "--yes"], undoIo), 0, undoIo.err());
    assert.equal(readFileSync(settingsFile, "utf8"), SETTINGS);
    assert.equal(os.trusted.size, 0);
  });

  test("status without setup says so; with settings pointing at a dead proxy it says how to fix it", async () => {
    const os = createFakeOs();
    const plain = io("darwin");
    assert.equal(await run(os, ["status"], plain), 0);
    assert.match(plain.out(), /not set up/);
    // The run() helper names port 18799; make sure nothing listens there for this check.
    await assertClosed(18799);
    writeFileSync(settingsFile, '{ "http.proxy": "http://127.0.0.1:18799" }');
    const stale = io("darwin");
    assert.equal(await run(os, ["status"], stale), 1);
    assert.match(stale.out(), /nothing listens there.*remove `http\.proxy`/s);
  });

  test("doctor fails on settings that point at a proxy nobody runs, and says how to fix it", async () => {
    const configFile = join(home.dir, "doctor.yaml");
    const port = await closedPort();
    writeFileSync(configFile, `ide:\n  proxyPort: ${port}\n`);
    writeFileSync(settingsFile, `{ "http.proxy": "http://127.0.0.1:${port}" }`);
    const testIo = {
      ...createTestIO({
        env: { ...home.env, CURSOR_BYOK_IDE_SETTINGS: settingsFile },
        home: home.dir,
      }),
    };
    const code = await DOCTOR_COMMAND.run(["--config", configFile, "--data-dir", dataDir], testIo);
    assert.equal(code, 1);
    assert.match(testIo.out(), /FAIL {2}ide +Cursor's settings .* nothing listens there/);
  });

  test("a program the trust steps need is missing: refused before anything changes", async () => {
    const os = createFakeOs();
    const noCertutil: CommandRunner = async (file, args) =>
      file === "certutil"
        ? { code: 127, stdout: "", stderr: "certutil: command not found" }
        : os.run(file, args);
    const testIo = io("linux");
    const code = await createIdeCommand(noCertutil, "linux").run(
      ["setup", "--yes", "--settings", settingsFile, "--data-dir", dataDir],
      testIo,
    );
    assert.equal(code, 1);
    assert.match(
      testIo.err(),
      /certutil is not installed \(Debian\/Ubuntu: sudo apt install libnss3-tools.*Nothing was changed/,
    );
    assert.equal(readFileSync(settingsFile, "utf8"), SETTINGS);
    assert.equal(existsSync(join(dataDir, "ide")), false);
  });

  test("a settings file that changes while setup or undo asks is not overwritten", async () => {
    const os = createFakeOs();
    const editing = (text: string) =>
      io("darwin", async () => {
        writeFileSync(settingsFile, text);
        return "y";
      });
    const duringSetup = editing('{ "edited": "during setup" }');
    assert.equal(await run(os, ["setup"], duringSetup), 1);
    assert.match(duringSetup.err(), /changed while setup was asking; nothing was changed/);
    assert.equal(readFileSync(settingsFile, "utf8"), '{ "edited": "during setup" }');
    assert.equal(existsSync(join(dataDir, "ide", "setup.json")), false);

    writeFileSync(settingsFile, SETTINGS);
    assert.equal(await run(os, ["setup", "--yes"], io("darwin")), 0);
    const duringUndo = editing('{ "edited": "during undo" }');
    assert.equal(await run(os, ["undo"], duringUndo), 1);
    assert.match(duringUndo.err(), /changed while undo was asking/);
    assert.equal(readFileSync(settingsFile, "utf8"), '{ "edited": "during undo" }');
    const again = io("darwin");
    assert.equal(await run(os, ["undo", "--yes"], again), 0, again.err());
    assert.equal(readFileSync(settingsFile, "utf8"), '{ "edited": "during undo" }');
    assert.equal(os.trusted.size, 0);
  });
});
