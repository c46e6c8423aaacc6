/**
 * A fake model provider on 127.0.0.1 for tests: it answers each request with the next scripted
 * reply (usually a recorded SSE transcript from `../fixtures`) and records every request.
 *
 * Replies can fail the way real providers do: an HTTP error status (with `Retry-After`), a
 * connection reset before or dropped after some events, a stream that stalls after some events or never sends
 * headers (for abort tests). SSE events are written one `write()` each, so the client sees them
 * arrive separately, in the fixture's order. No timers: a stalled reply waits for the client.
 *
 * Strict by default: a request whose history the real provider would refuse (a tool call without
 * its result, an id it does not accept, …: `provider-rules.ts`) gets that provider's 400.
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { findRuleBreak } from "./provider-rules.ts";

export type FakeReply =
  /** A 200 SSE response with the whole transcript. */
  | { readonly type: "sse"; readonly body: string }
  /** The first `events` events of the transcript, then the connection is destroyed. */
  | { readonly type: "drop"; readonly body: string; readonly events: number }
  /** The first `events` events, then nothing until the client goes away. */
  | { readonly type: "stall"; readonly body: string; readonly events: number }
  /** No response at all until the client goes away. */
  | { readonly type: "hang" }
  /** The connection is destroyed before any response: a connection failure for the client. */
  | { readonly type: "reset" }
  /** A non-streaming response, e.g. an error status. */
  | {
      readonly type: "status";
      readonly status: number;
      readonly headers?: Readonly<Record<string, string>>;
      readonly body?: string;
    };

export interface RecordedRequest {
  readonly method: string;
  /** Path and query. */
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The raw body, decoded as UTF-8. */
  readonly body: string;
  /** Resolves when the client closed this request's connection. */
  readonly closed: Promise<void>;
}

export interface FakeProvider {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly requests: readonly RecordedRequest[];
  /** Queues replies, answered in order; a request with no reply left gets a 599. */
  reply(...replies: FakeReply[]): void;
  /**
   * Answers requests when no queued reply is left, from the request itself (for tests where a
   * model call may be repeated, e.g. after a server restart, so a queue would go out of step).
   */
  answer(respond: (request: RecordedRequest) => FakeReply): void;
  /** Resolves with request number `index` (0-based) once it has arrived. */
  request(index: number): Promise<RecordedRequest>;
  close(): Promise<void>;
}

const FIXTURES = join(import.meta.dirname, "..", "fixtures");

/** A recorded SSE transcript, `fixtures/<provider>/<name>.sse`. */
export function readFixture(provider: string, name: string): string {
  return readFileSync(join(FIXTURES, provider, `${name}.sse`), "utf8");
}

/** The events of an SSE transcript, each with its trailing blank line (LF or CRLF). */
export function splitSseEvents(body: string): string[] {
  const events: string[] = [];
  const boundary = /\r?\n\r?\n/g;
  let start = 0;
  for (const match of body.matchAll(boundary)) {
    const end = (match.index ?? 0) + match[0].length;
    events.push(body.slice(start, end));
    start = end;
  }
  if (start < body.length) events.push(body.slice(start));
  return events;
}

export interface FakeProviderOptions {
  /**
   * Whether a request whose history the real provider refuses gets that provider's 400 instead of
   * its scripted reply (`provider-rules.ts`). Default true: a fake that accepts anything proves
   * nothing. The queued reply is then left for the next request.
   */
  readonly strict?: boolean;
}

export async function startFakeProvider(options: FakeProviderOptions = {}): Promise<FakeProvider> {
  const strict = options.strict ?? true;
  const replies: FakeReply[] = [];
  const requests: RecordedRequest[] = [];
  const arrivals: ((request: RecordedRequest) => void)[][] = [];
  let answer: ((request: RecordedRequest) => FakeReply) | null = null;

  const arrived = (index: number, request: RecordedRequest) => {
    for (const resolve of arrivals[index] ?? []) resolve(request);
  };

  const handle = async (incoming: IncomingMessage, response: ServerResponse) => {
    const closed = new Promise<void>((resolve) => response.once("close", () => resolve()));
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const request: RecordedRequest = {
      method: incoming.method ?? "",
      url: incoming.url ?? "",
      headers: { ...incoming.headers },
      body: Buffer.concat(chunks).toString("utf8"),
      closed,
    };
    const index = requests.push(request) - 1;
    arrived(index, request);
    const refused = strict ? findRuleBreak(request.url, request.body) : null;
    const reply = refused ?? replies.shift() ?? answer?.(request);
    await respond(reply, response, closed);
  };

  const server = createServer((incoming, response) => {
    handle(incoming, response).catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    reply: (...more) => {
      replies.push(...more);
    },
    answer: (respond) => {
      answer = respond;
    },
    request: (index) => {
      const request = requests[index];
      if (request !== undefined) return Promise.resolve(request);
      return new Promise((resolve) => {
        const waiting = arrivals[index] ?? [];
        waiting.push(resolve);
        arrivals[index] = waiting;
      });
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error === undefined ? resolve() : reject(error)));
      }),
  };
}

async function respond(
  reply: FakeReply | undefined,
  response: ServerResponse,
  closed: Promise<void>,
): Promise<void> {
  if (reply === undefined) {
    response.writeHead(599, { "content-type": "application/json" });
    response.end('{"error":{"message":"fake provider: no reply queued"}}');
    return;
  }
  switch (reply.type) {
    case "status":
      response.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
      response.end(reply.body ?? "");
      return;
    case "hang":
      await closed;
      return;
    case "reset":
      response.socket?.destroy();
      return;
    case "sse":
      startSse(response);
      for (const event of splitSseEvents(reply.body)) await write(response, event);
      response.end();
      return;
    case "drop":
      startSse(response);
      for (const event of splitSseEvents(reply.body).slice(0, reply.events)) {
        await write(response, event);
      }
      response.socket?.destroy();
      return;
    case "stall":
      startSse(response);
      for (const event of splitSseEvents(reply.body).slice(0, reply.events)) {
        await write(response, event);
      }
      await closed;
      return;
  }
}

function startSse(response: ServerResponse): void {
  response.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
  });
  response.flushHeaders();
}

function write(response: ServerResponse, chunk: string): Promise<void> {
  return new Promise((resolve, reject) => {
    response.write(chunk, (error) =>
      error === undefined || error === null ? resolve() : reject(error),
    );
  });
}
