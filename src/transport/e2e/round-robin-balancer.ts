/**
 * A plain round-robin HTTP balancer on 127.0.0.1 for tests and benchmarks of several instances
 * (docs/team.md): every request goes to the next backend in turn, with no stickiness, so the
 * RunSSE and the BidiAppends of one stream land on different instances. A backend that refuses
 * the connection (a killed instance) is skipped, as a balancer's health check would.
 */
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";

export interface BalancerHit {
  readonly path: string;
  readonly requestID: string | undefined;
  /** Index into the backends. */
  readonly backend: number;
}

export interface Balancer {
  readonly url: string;
  readonly hits: readonly BalancerHit[];
  close(): Promise<void>;
}

export async function startRoundRobinBalancer(backends: readonly string[]): Promise<Balancer> {
  const hits: BalancerHit[] = [];
  let next = 0;

  const attempt = (request: IncomingMessage, response: ServerResponse, tries: number): void => {
    const backend = next % backends.length;
    next += 1;
    const target = new URL(request.url ?? "/", backends[backend]);
    const outgoing = httpRequest(target, {
      method: request.method,
      headers: { ...request.headers, host: target.host },
    });
    let connected = false;
    outgoing.on("socket", (socket) => {
      const onConnect = () => {
        connected = true;
        request.pipe(outgoing);
      };
      if (socket.connecting) socket.once("connect", onConnect);
      else onConnect();
    });
    outgoing.on("response", (answer) => {
      const header = request.headers["x-request-id"];
      hits.push({
        path: (request.url ?? "/").split("?")[0] ?? "/",
        requestID: Array.isArray(header) ? header[0] : header,
        backend,
      });
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
      // The upstream died mid-answer: end the client's connection the same way, so it sees a
      // lost stream (and reconnects) instead of waiting on a relay that will never finish.
      answer.on("error", () => response.destroy());
      answer.on("close", () => {
        if (!answer.complete) response.destroy();
      });
    });
    outgoing.on("error", () => {
      if (!connected && tries < backends.length) {
        attempt(request, response, tries + 1);
        return;
      }
      // The backend died while serving: drop the client's connection as the backend's was.
      response.destroy();
    });
    response.on("close", () => outgoing.destroy());
  };

  const server = createServer((request, response) => attempt(request, response, 1));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
