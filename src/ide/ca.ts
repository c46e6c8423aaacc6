/**
 * The local certificate authority of IDE mode (docs/ide.md): one per install, ECDSA P-256,
 * path length 0, name-constrained to `cursor.sh`, so that even a stolen key cannot vouch for any
 * other domain in a client that honours name constraints (Chromium, OpenSSL and so Node do).
 * Its private key is written readable by the user only; leaf certificates are issued in memory,
 * on demand, for one host each, valid for a few days.
 *
 * X.509 is built with `@peculiar/x509` over WebCrypto; the one extension it has no class for
 * (name constraints) is encoded with the schema classes of `@peculiar/asn1-x509`.
 */
import "reflect-metadata";
import { createHash, createPrivateKey, X509Certificate as NodeX509, webcrypto } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { AsnConvert } from "@peculiar/asn1-schema";
import {
  GeneralName,
  GeneralSubtree,
  GeneralSubtrees,
  id_ce_nameConstraints,
  NameConstraints,
} from "@peculiar/asn1-x509";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
const DAY_MS = 24 * 60 * 60 * 1000;
/** Ten years: the CA is replaced by `ide undo` + `ide setup`, never silently. */
const CA_VALIDITY_MS = 3650 * DAY_MS;
/** Leaves are short-lived and re-issued in memory when they near their end. */
const LEAF_VALIDITY_MS = 7 * DAY_MS;
const LEAF_RENEW_BEFORE_MS = DAY_MS;
/** Clocks of client and server may disagree a little. */
const BACKDATE_MS = 60 * 60 * 1000;

export const CA_CERT_FILE = "ca.pem";
export const CA_KEY_FILE = "ca-key.pem";

/** The domain the CA may vouch for (and its subdomains). */
export const CA_PERMITTED_DOMAIN = "cursor.sh";

export interface CertificateAuthority {
  /** PEM of the CA certificate (public; what is trusted). */
  readonly certPem: string;
  /** PEM (PKCS#8) of the CA key. */
  readonly keyPem: string;
  /** SHA-1 of the DER, upper-case hex: what macOS `security -Z` names a certificate by. */
  readonly sha1: string;
  /** SHA-256 of the DER, upper-case hex. */
  readonly sha256: string;
  /** The serial number, hex. */
  readonly serial: string;
  readonly notAfter: Date;
}

export interface IssuedCertificate {
  /** The leaf followed by the CA: the chain a TLS server presents. */
  readonly certPem: string;
  readonly keyPem: string;
  readonly notAfter: Date;
}

export interface CaOptions {
  /** The domains the CA may vouch for; `[]` means unconstrained (test CAs only). */
  readonly permittedDomains?: readonly string[];
  readonly commonName?: string;
  readonly now?: () => number;
}

/** A new CA, in memory. */
export async function createCertificateAuthority(
  options: CaOptions = {},
): Promise<CertificateAuthority> {
  const now = options.now?.() ?? Date.now();
  const keys = await webcrypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]);
  const permitted = options.permittedDomains ?? [CA_PERMITTED_DOMAIN];
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(true, 0, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
  ];
  if (permitted.length > 0) {
    extensions.push(toNameConstraints(permitted));
    // Server certificates only: a trust store that honours EKU on a CA (Windows does) then
    // never trusts it for code signing, e-mail or client authentication.
    extensions.push(new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false));
  }
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: `CN=${options.commonName ?? "cursor-byok local CA (cursor.sh only)"}, O=cursor-byok`,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + CA_VALIDITY_MS),
    keys,
    signingAlgorithm: ALGORITHM,
    extensions,
  });
  const pkcs8 = await webcrypto.subtle.exportKey("pkcs8", keys.privateKey);
  return toAuthority(cert.toString("pem"), toPem("PRIVATE KEY", pkcs8));
}

/** Reads a CA from its two PEM texts. @throws Error when they do not form a CA. */
export function toAuthority(certPem: string, keyPem: string): CertificateAuthority {
  const cert = new NodeX509(certPem);
  if (!cert.ca) throw new Error("the certificate is not a CA certificate");
  const der = cert.raw;
  return {
    certPem: normalisePem(certPem),
    keyPem: normalisePem(keyPem),
    sha1: createHash("sha1").update(der).digest("hex").toUpperCase(),
    sha256: createHash("sha256").update(der).digest("hex").toUpperCase(),
    serial: cert.serialNumber,
    notAfter: new Date(cert.validTo),
  };
}

export type CaFiles =
  | { readonly type: "missing" }
  | { readonly type: "ok"; readonly authority: CertificateAuthority }
  | { readonly type: "bad"; readonly problem: string };

/** The CA kept in `directory`, if any. Never throws. */
export function readCertificateAuthority(directory: string, now = Date.now()): CaFiles {
  const certPath = path.join(directory, CA_CERT_FILE);
  const keyPath = path.join(directory, CA_KEY_FILE);
  if (!existsSync(certPath) && !existsSync(keyPath)) return { type: "missing" };
  let authority: CertificateAuthority;
  try {
    authority = toAuthority(readFileSync(certPath, "utf8"), readFileSync(keyPath, "utf8"));
  } catch (error) {
    return { type: "bad", problem: `${certPath}: ${(error as Error).message}` };
  }
  if (authority.notAfter.getTime() <= now) {
    return { type: "bad", problem: `${certPath} expired on ${authority.notAfter.toISOString()}` };
  }
  try {
    const cert = new NodeX509(authority.certPem);
    if (!cert.checkPrivateKey(createPrivateKey(authority.keyPem))) {
      return { type: "bad", problem: `${keyPath} is not the key of ${certPath}` };
    }
  } catch (error) {
    return { type: "bad", problem: `${keyPath}: ${(error as Error).message}` };
  }
  return { type: "ok", authority };
}

/**
 * Writes the CA into `directory` (created 0700): the certificate 0644, the key 0600, each by
 * a temporary file and a rename so a crash leaves either nothing or a whole file.
 */
export function writeCertificateAuthority(
  directory: string,
  authority: CertificateAuthority,
): void {
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  chmodSync(directory, 0o700);
  writeAtomically(path.join(directory, CA_KEY_FILE), authority.keyPem, 0o600);
  writeAtomically(path.join(directory, CA_CERT_FILE), authority.certPem, 0o644);
}

export interface LeafIssuer {
  /**
   * A certificate for `host`, issued on first use and cached until it nears its end.
   * @throws Error when `host` is outside the CA's domain.
   */
  certificateFor(host: string): Promise<IssuedCertificate>;
}

export function createLeafIssuer(
  authority: CertificateAuthority,
  options: { readonly now?: () => number; readonly permittedDomains?: readonly string[] } = {},
): LeafIssuer {
  const now = options.now ?? Date.now;
  const permitted = options.permittedDomains ?? [CA_PERMITTED_DOMAIN];
  const cache = new Map<string, Promise<IssuedCertificate>>();
  let caKeys: Promise<{ cert: x509.X509Certificate; key: webcrypto.CryptoKey }> | undefined;
  const loadCa = () => {
    caKeys ??= (async () => ({
      cert: new x509.X509Certificate(authority.certPem),
      key: await webcrypto.subtle.importKey("pkcs8", fromPem(authority.keyPem), ALGORITHM, false, [
        "sign",
      ]),
    }))();
    return caKeys;
  };

  const issue = async (host: string): Promise<IssuedCertificate> => {
    const ca = await loadCa();
    const keys = await webcrypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]);
    const start = now();
    const notAfter = new Date(Math.min(start + LEAF_VALIDITY_MS, authority.notAfter.getTime()));
    const leaf = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerial(),
      subject: `CN=${host}`,
      issuer: ca.cert.subject,
      notBefore: new Date(start - BACKDATE_MS),
      notAfter,
      publicKey: keys.publicKey,
      signingKey: ca.key,
      signingAlgorithm: ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
        new x509.SubjectAlternativeNameExtension([{ type: "dns", value: host }], false),
        await x509.AuthorityKeyIdentifierExtension.create(ca.cert, false),
      ],
    });
    const pkcs8 = await webcrypto.subtle.exportKey("pkcs8", keys.privateKey);
    return {
      certPem: `${leaf.toString("pem")}\n${authority.certPem}`,
      keyPem: toPem("PRIVATE KEY", pkcs8),
      notAfter,
    };
  };

  return {
    async certificateFor(rawHost) {
      const host = rawHost.toLowerCase();
      if (!isValidHostName(host)) throw new Error(`"${rawHost}" is not a host name`);
      if (permitted.length > 0 && !permitted.some((domain) => isWithinDomain(host, domain))) {
        throw new Error(
          `${host} is outside ${permitted.join(", ")}: no certificate is issued for it`,
        );
      }
      const cached = cache.get(host);
      if (cached !== undefined) {
        const issued = await cached.catch(() => undefined);
        if (issued !== undefined && issued.notAfter.getTime() - now() > LEAF_RENEW_BEFORE_MS) {
          return issued;
        }
      }
      const fresh = issue(host);
      cache.set(host, fresh);
      fresh.catch(() => cache.delete(host));
      return fresh;
    },
  };
}

/** `host` is `domain` or one of its subdomains. */
export function isWithinDomain(host: string, domain: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, "");
  const d = domain.toLowerCase();
  return h === d || h.endsWith(`.${d}`);
}

function isValidHostName(host: string): boolean {
  return (
    host.length > 0 &&
    host.length <= 253 &&
    host.split(".").every((label) => /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(label))
  );
}

/**
 * Permitted: the domains. Excluded: every IPv4 and IPv6 address, because a permitted DNS subtree
 * alone leaves IP-address names unconstrained (RFC 5280 §4.2.1.10 constrains only name forms
 * that are listed).
 */
function toNameConstraints(domains: readonly string[]): x509.Extension {
  const value = new NameConstraints({
    permittedSubtrees: new GeneralSubtrees(
      domains.map((domain) => new GeneralSubtree({ base: new GeneralName({ dNSName: domain }) })),
    ),
    excludedSubtrees: new GeneralSubtrees(
      ["0.0.0.0/0", "::/0"].map(
        (range) => new GeneralSubtree({ base: new GeneralName({ iPAddress: range }) }),
      ),
    ),
  });
  return new x509.Extension(id_ce_nameConstraints, true, AsnConvert.serialize(value));
}

/** 16 random bytes with the top bit clear: a positive serial, as RFC 5280 asks. */
function randomSerial(): string {
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return Buffer.from(bytes).toString("hex");
}

function toPem(label: string, der: ArrayBuffer): string {
  const base64 = Buffer.from(der).toString("base64");
  const lines = base64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

function fromPem(pem: string): ArrayBuffer {
  const body = pem.replace(/-----(BEGIN|END) [A-Z ]+-----/g, "").replace(/\s+/g, "");
  const bytes = Buffer.from(body, "base64");
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

function normalisePem(pem: string): string {
  return `${pem.replace(/\r\n/g, "\n").trim()}\n`;
}

export function writeAtomically(file: string, text: string, mode: number): void {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode });
  chmodSync(temporary, mode);
  renameSync(temporary, file);
}
