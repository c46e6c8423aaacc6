/**
 * The local CA: its shape, its files, and — with real TLS — that it cannot vouch for anything
 * outside cursor.sh, not even with its own key (a leaf for another domain or for an IP address).
 */
import "reflect-metadata";
import assert from "node:assert/strict";
import { webcrypto, X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import tls from "node:tls";
import * as x509 from "@peculiar/x509";
import {
  createCertificateAuthority,
  createLeafIssuer,
  readCertificateAuthority,
  writeCertificateAuthority,
} from "./ca.ts";

const ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;

/** Does a TLS client trusting only `caPem` accept `certPem` for `host`? */
async function accepts(
  caPem: string,
  certPem: string,
  keyPem: string,
  host: string,
): Promise<boolean> {
  const server = tls.createServer({ cert: certPem, key: keyPem }, (socket) => socket.end());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  try {
    return await new Promise<boolean>((resolve) => {
      const isIp = /^[\d.]+$/.test(host);
      const socket = tls.connect({
        host: "127.0.0.1",
        port,
        ca: [caPem],
        ...(isIp ? {} : { servername: host }),
        checkServerIdentity: (_name, cert) => tls.checkServerIdentity(host, cert),
      });
      socket.once("secureConnect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
  } finally {
    server.close();
  }
}

/** A leaf signed with the CA's own key, bypassing our issuer's checks: what a thief could make. */
async function forgeLeaf(
  ca: { certPem: string; keyPem: string },
  names: { type: "dns" | "ip"; value: string }[],
): Promise<{ certPem: string; keyPem: string }> {
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const body = ca.keyPem.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, "");
  const caKey = await webcrypto.subtle.importKey(
    "pkcs8",
    Buffer.from(body, "base64"),
    ALGORITHM,
    false,
    ["sign"],
  );
  const keys = await webcrypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]);
  const caCert = new x509.X509Certificate(ca.certPem);
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: "0badc0de",
    subject: "CN=forged",
    issuer: caCert.subject,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    publicKey: keys.publicKey,
    signingKey: caKey,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(names),
    ],
  });
  const pkcs8 = await webcrypto.subtle.exportKey("pkcs8", keys.privateKey);
  return {
    certPem: `${leaf.toString("pem")}\n${ca.certPem}`,
    keyPem: `-----BEGIN PRIVATE KEY-----\n${Buffer.from(pkcs8).toString("base64")}\n-----END PRIVATE KEY-----\n`,
  };
}

describe("the local CA", () => {
  test("is a CA with path length 0, constrained to cursor.sh and to server certificates", async () => {
    const ca = await createCertificateAuthority();
    const cert = new X509Certificate(ca.certPem);
    assert.equal(cert.ca, true);
    const parsed = new x509.X509Certificate(ca.certPem);
    const basic = parsed.getExtension(x509.BasicConstraintsExtension);
    assert.equal(basic?.pathLength, 0);
    const usage = parsed.getExtension(x509.ExtendedKeyUsageExtension);
    assert.deepEqual([...(usage?.usages ?? [])], [x509.ExtendedKeyUsage.serverAuth]);
    const constraints = parsed.extensions.find((extension) => extension.type === "2.5.29.30");
    assert.equal(constraints?.critical, true);
    assert.match(ca.sha1, /^[0-9A-F]{40}$/);
  });

  test("its leaves verify for their cursor.sh host; no leaf is issued for another domain", async () => {
    const ca = await createCertificateAuthority();
    const issuer = createLeafIssuer(ca);
    const leaf = await issuer.certificateFor("api2.cursor.sh");
    assert.equal(await accepts(ca.certPem, leaf.certPem, leaf.keyPem, "api2.cursor.sh"), true);
    assert.equal(await issuer.certificateFor("API2.cursor.sh"), leaf, "cached, case-insensitively");
    await assert.rejects(issuer.certificateFor("example.com"), /outside cursor\.sh/);
    await assert.rejects(issuer.certificateFor("cursor.sh.evil.example"), /outside cursor\.sh/);
    await assert.rejects(issuer.certificateFor("bad host"), /not a host name/);
  });

  test("even its own key cannot vouch for another domain or an IP address", async () => {
    const ca = await createCertificateAuthority();
    const otherDomain = await forgeLeaf(ca, [{ type: "dns", value: "bank.example" }]);
    assert.equal(
      await accepts(ca.certPem, otherDomain.certPem, otherDomain.keyPem, "bank.example"),
      false,
    );
    const ip = await forgeLeaf(ca, [{ type: "ip", value: "127.0.0.1" }]);
    assert.equal(await accepts(ca.certPem, ip.certPem, ip.keyPem, "127.0.0.1"), false);
    // The control: the same forging works within cursor.sh, so the refusals above are the constraint's.
    const inside = await forgeLeaf(ca, [{ type: "dns", value: "x.cursor.sh" }]);
    assert.equal(await accepts(ca.certPem, inside.certPem, inside.keyPem, "x.cursor.sh"), true);
  });

  test("is written with its key readable by the user only, and read back", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cursor-byok-ca-"));
    try {
      const ca = await createCertificateAuthority();
      const ideDir = join(dir, "ide");
      writeCertificateAuthority(ideDir, ca);
      assert.equal(statSync(join(ideDir, "ca-key.pem")).mode & 0o777, 0o600);
      assert.equal(statSync(ideDir).mode & 0o777, 0o700);
      const read = readCertificateAuthority(ideDir);
      assert.equal(read.type, "ok");
      assert.equal(read.type === "ok" && read.authority.sha256, ca.sha256);
      assert.deepEqual(readCertificateAuthority(join(dir, "none")), { type: "missing" });
      const other = await createCertificateAuthority();
      writeCertificateAuthority(join(dir, "mixed"), { ...ca, keyPem: other.keyPem });
      const mixed = readCertificateAuthority(join(dir, "mixed"));
      assert.equal(mixed.type, "bad");
      assert.match(mixed.type === "bad" ? mixed.problem : "", /is not the key of/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
