/**
 * One guarded GET, following redirects: only http and https; every hop's host is resolved and
 * each address checked against the address policy *in the lookup the connection itself uses*,
 * so a name that resolves to a private address (DNS rebinding included) or a redirect to one is
 * refused before a byte is sent. The policy's allow-list applies to the URL asked for and to a
 * redirect from an allowed host, not to a redirect from a public page (which could otherwise
 * send the fetcher into the allowed private network). At most `maxRedirects` redirects,
 * `maxBytes` of (decoded) body and `timeoutMs` for the whole exchange. Never throws: failures are
 * `error` results.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { errorMessage } from "../../errors/error-message.ts";
import type { AddressPolicy } from "./address-policy.ts";

export interface HttpGetLimits {
  readonly maxBytes: number;
  readonly timeoutMs: number;
  readonly maxRedirects: number;
}

/** `dns.lookup` with `{ all: true }`: every address of `host`. */
export type Resolve = (host: string) => Promise<readonly LookupAddress[]>;

export interface HttpGetOptions extends HttpGetLimits {
  readonly policy: AddressPolicy;
  /** Name resolution; the system resolver unless a test injects another. */
  readonly resolve?: Resolve;
  readonly userAgent: string;
  readonly signal?: AbortSignal;
}

export type HttpGetResult =
  | {
      readonly type: "body";
      readonly finalUrl: string;
      /** The `content-type` header as sent ("" when absent). */
      readonly contentType: string;
      readonly body: Buffer;
      /** The body was longer than `maxBytes` and was cut there. */
      readonly cut: boolean;
    }
  | { readonly type: "error"; readonly message: string };

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export const systemResolve: Resolve = (host) =>
  new Promise((resolve, reject) => {
    dnsLookup(host, { all: true }, (error, addresses) =>
      error === null ? resolve(addresses) : reject(error),
    );
  });

class RefusedError extends Error {}

export async function httpGet(target: string, options: HttpGetOptions): Promise<HttpGetResult> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal =
    options.signal === undefined ? timeout : AbortSignal.any([options.signal, timeout]);
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return { type: "error", message: `"${target}" is not a valid URL` };
  }
  // Whether this hop may use the allow-list: the first one, and one redirected to by an allowed host.
  let useAllowList = true;
  for (let hop = 0; ; hop += 1) {
    const checked = checkUrl(url);
    if (checked !== null) return { type: "error", message: checked };
    let response: IncomingMessage;
    const connected = { allowListed: false };
    try {
      response = await request(url, options, signal, useAllowList, connected);
    } catch (error) {
      return { type: "error", message: describe(error, url, options, timeout, signal) };
    }
    const status = response.statusCode ?? 0;
    if (REDIRECTS.has(status)) {
      response.destroy();
      const location = response.headers.location;
      if (location === undefined) {
        return { type: "error", message: `HTTP ${status} redirect without a Location header` };
      }
      if (hop >= options.maxRedirects) {
        return { type: "error", message: `more than ${options.maxRedirects} redirects` };
      }
      useAllowList = connected.allowListed;
      try {
        url = new URL(location, url);
      } catch {
        return { type: "error", message: `redirect to an invalid URL "${location}"` };
      }
      continue;
    }
    if (status >= 400 || status < 200) {
      response.destroy();
      const text = response.statusMessage ? ` ${response.statusMessage}` : "";
      return { type: "error", message: `HTTP ${status}${text} from ${url.href}` };
    }
    try {
      const { body, cut } = await readBody(response, options.maxBytes);
      return {
        type: "body",
        finalUrl: url.href,
        contentType: String(response.headers["content-type"] ?? ""),
        body,
        cut,
      };
    } catch (error) {
      return { type: "error", message: describe(error, url, options, timeout, signal) };
    }
  }
}

function checkUrl(url: URL): string | null {
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return `only http and https URLs are fetched, not ${url.protocol.replace(/:$/, "")}`;
  }
  if (url.username !== "" || url.password !== "") return "URLs with credentials are not fetched";
  return null;
}

/** `connected.allowListed` is set when the allow-list names the host or holds an address of it. */
function request(
  url: URL,
  options: HttpGetOptions,
  signal: AbortSignal,
  useAllowList: boolean,
  connected: { allowListed: boolean },
): Promise<IncomingMessage> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host) !== 0) {
    const refusal = options.policy.refusal(host, host, useAllowList);
    if (refusal !== null) return Promise.reject(new RefusedError(refusal));
    connected.allowListed = useAllowList && options.policy.allows(host, host);
  }
  const resolve = options.resolve ?? systemResolve;
  const lookup = (
    hostname: string,
    lookupOptions: { all?: boolean },
    callback: (error: Error | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    resolve(hostname).then(
      (addresses) => {
        if (addresses.length === 0) return callback(new Error(`${hostname} has no address`), "");
        for (const { address } of addresses) {
          const refusal = options.policy.refusal(hostname, address, useAllowList);
          if (refusal !== null) return callback(new RefusedError(refusal), "");
        }
        connected.allowListed =
          useAllowList && addresses.some(({ address }) => options.policy.allows(hostname, address));
        const [first] = addresses;
        if (lookupOptions.all === true) return callback(null, [...addresses]);
        return callback(null, first?.address ?? "", first?.family);
      },
      (error: unknown) => callback(error instanceof Error ? error : new Error(String(error)), ""),
    );
  };
  const client = url.protocol === "https:" ? https : http;
  return new Promise((resolvePromise, reject) => {
    const outgoing = client.request(url, {
      method: "GET",
      headers: {
        "user-agent": options.userAgent,
        accept:
          "text/html,application/xhtml+xml,text/plain;q=0.9,text/markdown;q=0.9,application/json;q=0.9,*/*;q=0.5",
        "accept-encoding": "gzip, deflate, br",
      },
      lookup: lookup as never,
      agent: false,
      signal,
    });
    outgoing.once("response", resolvePromise);
    outgoing.once("error", reject);
    outgoing.end();
  });
}

/** The body, decoded per `content-encoding`, up to `limit` bytes. */
async function readBody(
  response: IncomingMessage,
  limit: number,
): Promise<{ body: Buffer; cut: boolean }> {
  const encoding = String(response.headers["content-encoding"] ?? "")
    .toLowerCase()
    .trim();
  const decoder =
    encoding === "gzip" || encoding === "x-gzip"
      ? createGunzip()
      : encoding === "deflate"
        ? createInflate()
        : encoding === "br"
          ? createBrotliDecompress()
          : null;
  const source = decoder === null ? response : response.pipe(decoder);
  if (decoder !== null) response.once("error", (error) => decoder.destroy(error));
  const chunks: Buffer[] = [];
  let size = 0;
  let cut = false;
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      const room = limit - size;
      if (chunk.length > room) {
        chunks.push(chunk.subarray(0, room));
        size = limit;
        cut = true;
        break;
      }
      chunks.push(chunk);
      size += chunk.length;
    }
  } finally {
    if (cut) {
      response.destroy();
      decoder?.destroy();
    }
  }
  return { body: Buffer.concat(chunks), cut };
}

function describe(
  error: unknown,
  url: URL,
  options: HttpGetLimits,
  timeout: AbortSignal,
  signal: AbortSignal,
): string {
  if (error instanceof RefusedError) return `refused: ${error.message}`;
  if (timeout.aborted) return `timed out after ${Number((options.timeoutMs / 1000).toFixed(1))} s`;
  if (signal.aborted) return "the fetch was canceled";
  const code = (error as NodeJS.ErrnoException | null)?.code;
  switch (code) {
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `${url.hostname} could not be resolved (${code})`;
    case "ECONNREFUSED":
      return `${url.host} refused the connection`;
    case "ECONNRESET":
      return `${url.host} closed the connection (ECONNRESET)`;
    case "Z_DATA_ERROR":
    case "Z_BUF_ERROR":
    case "ERR_PADDING_1":
      return "the compressed body could not be decoded";
    default:
      return `${url.host}: ${errorMessage(error)}`;
  }
}
