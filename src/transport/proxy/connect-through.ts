/**
 * The client side of an HTTP proxy: `CONNECT host:port` through it, then TLS to `host` over the
 * tunnel. What the IDE does through our proxy; used by `doctor`'s self-test and by tests.
 */
import type http from "node:http";
import https from "node:https";
import net, { type Socket } from "node:net";
import tls, { type TLSSocket } from "node:tls";

const MAX_RESPONSE_HEAD = 16 * 1024;

/** A socket tunnelled through the proxy at `proxyUrl` to `host:port`. */
export function connectThroughProxy(
  proxyUrl: string,
  host: string,
  port: number,
  timeoutMs = 10_000,
): Promise<Socket> {
  const proxy = new URL(proxyUrl);
  return new Promise((resolve, reject) => {
    // Small writes (a request head, then its body) must not wait for the peer's delayed ACK.
    const socket = net.connect({
      noDelay: true,
      host: proxy.hostname.replace(/^\[|\]$/g, ""),
      port: Number(proxy.port),
    });
    let head = Buffer.alloc(0);
    const fail = (error: Error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(error);
    };
    const timer = setTimeout(
      () => fail(new Error(`the proxy at ${proxyUrl} did not answer CONNECT in ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.once("error", fail);
    const onClose = () =>
      fail(new Error(`the proxy at ${proxyUrl} closed the connection without answering`));
    socket.once("close", onClose);
    socket.once("connect", () => {
      socket.write(`CONNECT ${host}:${port} HTTP/1.1\r\nhost: ${host}:${port}\r\n\r\n`);
    });
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) {
        if (head.length > MAX_RESPONSE_HEAD) fail(new Error("the proxy's answer is too long"));
        return;
      }
      socket.off("data", onData);
      socket.off("error", fail);
      socket.off("close", onClose);
      clearTimeout(timer);
      const statusLine = head.subarray(0, head.indexOf("\r\n")).toString("latin1");
      if (!/^HTTP\/1\.[01] 200\b/.test(statusLine)) {
        socket.destroy();
        reject(new Error(`the proxy refused CONNECT ${host}:${port}: ${statusLine}`));
        return;
      }
      const rest = head.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      socket.pause();
      resolve(socket);
    };
    socket.on("data", onData);
  });
}

export interface TlsThroughProxyOptions {
  readonly proxyUrl: string;
  readonly host: string;
  readonly port?: number;
  /** Trusted roots (PEM); default Node's. */
  readonly ca?: readonly string[];
  readonly alpn?: readonly string[];
  readonly timeoutMs?: number;
}

/** TLS to `host` through the proxy, verifying the certificate for `host`. */
export async function connectTlsThroughProxy(options: TlsThroughProxyOptions): Promise<TLSSocket> {
  const port = options.port ?? 443;
  const raw = await connectThroughProxy(options.proxyUrl, options.host, port, options.timeoutMs);
  return new Promise((resolve, reject) => {
    const secure = tls.connect({
      socket: raw,
      servername: options.host,
      ...(options.ca === undefined ? {} : { ca: [...options.ca] }),
      ALPNProtocols: [...(options.alpn ?? ["http/1.1"])],
    });
    secure.once("secureConnect", () => {
      secure.off("error", reject);
      resolve(secure);
    });
    secure.once("error", reject);
  });
}

/** An `https.Agent` whose connections go through the proxy (HTTP/1.1 over TLS). */
export function createProxyAgent(options: {
  readonly proxyUrl: string;
  readonly ca?: readonly string[];
}): https.Agent {
  const agent = new https.Agent({ keepAlive: true });
  const create = (
    connection: http.ClientRequestArgs,
    callback: (error: Error | null, socket?: Socket) => void,
  ): undefined => {
    connectTlsThroughProxy({
      proxyUrl: options.proxyUrl,
      host: connection.host ?? connection.hostname ?? "localhost",
      port: Number(connection.port ?? 443),
      ...(options.ca === undefined ? {} : { ca: options.ca }),
    }).then(
      (socket) => callback(null, socket),
      (error: Error) => callback(error),
    );
    return undefined;
  };
  (agent as unknown as { createConnection: typeof create }).createConnection = create;
  return agent;
}
