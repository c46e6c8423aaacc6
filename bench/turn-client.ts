/**
 * A turn client in a process of its own, for `bench:stream`'s ttft and latency sections: a real
 * Cursor client is another process, so its own work (reading the response head, decoding each
 * message) runs beside the server's instead of on the server's event loop, where it would both
 * add to the figure and hide the moment the server wrote.
 *
 * For every line `<url>` on stdin it runs one turn (turn-kit.ts `runTurn`) and prints
 * `TURN <json>`: when the turn started and when each text delta's chunk indexes arrived, in epoch
 * milliseconds (`performance.timeOrigin + now`, comparable with the provider's process on one
 * machine). It exits when stdin closes.
 */
import { createInterface } from "node:readline";
import { indexesOf, runTurn } from "./turn-kit.ts";

export interface TurnTimes {
  readonly sentAt: number;
  /** By chunk index: when the client had that chunk's text. */
  readonly received: (number | null)[];
}

const epoch = (at: number) => performance.timeOrigin + at;

for await (const url of createInterface({ input: process.stdin })) {
  const texts: string[] = [];
  const times: number[] = [];
  const { sentAt } = await runTurn(url, (text, at) => {
    texts.push(text);
    times.push(at);
  });
  const received: (number | null)[] = [];
  texts.forEach((text, i) => {
    for (const index of indexesOf(text)) received[index] = epoch(times[i] as number);
  });
  const result: TurnTimes = {
    sentAt: epoch(sentAt),
    received: Array.from(received, (at) => at ?? null),
  };
  process.stdout.write(`TURN ${JSON.stringify(result)}\n`);
}
