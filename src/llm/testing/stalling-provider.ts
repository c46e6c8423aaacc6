/**
 * A provider on 127.0.0.1 that reads each request to its end without keeping it, then answers
 * 200 with the first `events` events of an SSE transcript and nothing more, until the client goes
 * away: a model that started its reply and went silent. For memory measurements, where the fake
 * provider (fake-provider.ts), which records every request, would count each request's body.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { splitSseEvents } from "./fake-provider.ts";

export interface StallingProvider {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  close(): Promise<void>;
}

export async function startStallingProvider(
  transcript: string,
  events: number,
): Promise<StallingProvider> {
  const head = splitSseEvents(transcript).slice(0, events).join("");
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write(head);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
