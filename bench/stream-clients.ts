/**
 * Load clients for `bench:stream`'s server-process sections, in a process of their own so that
 * opening and reading thousands of conversations does not starve the process that times them
 * (the provider's) or the server. Started by stream.bench.ts with its settings as JSON in argv[2]:
 *
 * - opens `streams` conversations against `url`, at most `maxOpening` of them opening at once (a
 *   conversation is open once its first message arrived): as fast as the server opens them, and
 *   never a burst of thousands of connections that overflows its listen backlog;
 * - prints `PROGRESS <open> <failed>` every 200 ms while it runs;
 * - on a `mark` line on stdin, starts counting this process's own pauses (pauses.ts) afresh;
 * - on any other line (or stdin closing) aborts every conversation and prints `RESULT <json>`:
 *   chunk delays (provider write → this client, from the `t<epoch ms>` stamps) and when they
 *   arrived, gaps between messages on a stream, when the last one opened, failures, and its
 *   pauses since the mark;
 * - exits by itself after `maxMs` whatever happens.
 */
import { performance } from "node:perf_hooks";
import { type PauseReport, watchPauses } from "../src/transport/e2e/pauses.ts";
import { runLeanTurn } from "./lean-turn.ts";
import { runTurn, stampsOf } from "./turn-kit.ts";

export interface ClientSettings {
  readonly url: string;
  readonly streams: number;
  readonly maxOpening: number;
  readonly maxMs: number;
  /** `lean`: lean-turn.ts; `connect`: connect-es (turn-kit.ts `runTurn`). */
  readonly client: "lean" | "connect";
}

export interface ClientResult {
  readonly open: number;
  /** Epoch milliseconds when the last of this process's streams opened (NaN: not all did). */
  readonly allOpenAt: number;
  readonly chunkDelays: number[];
  /** When each of `chunkDelays` arrived (epoch milliseconds). */
  readonly chunkTimes: number[];
  readonly gaps: number[];
  readonly failures: number;
  readonly firstFailure: string | undefined;
  /** This process's own pauses since the `mark` line (or since it started). */
  readonly pauses: PauseReport;
}

/** Milliseconds since the epoch, sub-millisecond: comparable between processes on one machine. */
const epochNow = () => performance.timeOrigin + performance.now();

const settings = JSON.parse(process.argv[2] ?? "{}") as ClientSettings;
setTimeout(() => process.exit(2), settings.maxMs).unref();

const controller = new AbortController();
const chunkDelays: number[] = [];
const chunkTimes: number[] = [];
const gaps: number[] = [];
const failures: string[] = [];
const opened: Promise<unknown>[] = [];
let open = 0;
let allOpenAt = Number.NaN;

const progress = setInterval(() => {
  process.stdout.write(`PROGRESS ${open} ${failures.length}\n`);
}, 200);

const pauses = watchPauses();

const stop = async () => {
  const ownPauses = pauses.take();
  pauses.stop();
  controller.abort();
  for (const wake of slotFreed.splice(0)) wake();
  await Promise.all(opened);
  clearInterval(progress);
  const result: ClientResult = {
    open,
    allOpenAt,
    chunkDelays,
    chunkTimes,
    gaps,
    failures: failures.length,
    firstFailure: failures[0],
    pauses: ownPauses,
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`, () => process.exit(0));
};
let stopping = false;
const stopOnce = () => {
  if (stopping) return;
  stopping = true;
  void stop();
};
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (text: string) => {
  input += text;
  for (let newline = input.indexOf("\n"); newline >= 0; newline = input.indexOf("\n")) {
    const line = input.slice(0, newline);
    input = input.slice(newline + 1);
    if (line === "mark") pauses.take();
    else stopOnce();
  }
});
process.stdin.once("end", stopOnce);

let opening = 0;
const slotFreed: (() => void)[] = [];
for (let i = 0; i < settings.streams && !controller.signal.aborted; i += 1) {
  while (opening >= settings.maxOpening && !controller.signal.aborted) {
    await new Promise<void>((resolve) => slotFreed.push(resolve));
  }
  opening += 1;
  let settled = false;
  const openedOrFailed = () => {
    if (settled) return;
    settled = true;
    opening -= 1;
    slotFreed.shift()?.();
  };
  let last = Number.NaN;
  const turn = settings.client === "lean" ? runLeanTurn : runTurn;
  opened.push(
    turn(
      settings.url,
      (text) => {
        const at = epochNow();
        for (const stamp of stampsOf(text)) {
          chunkDelays.push(at - stamp);
          chunkTimes.push(at);
        }
      },
      () => {
        const at = epochNow();
        if (Number.isNaN(last)) {
          openedOrFailed();
          open += 1;
          if (open === settings.streams) allOpenAt = at;
        } else {
          gaps.push(at - last);
        }
        last = at;
      },
      controller.signal,
    )
      .catch((error: unknown) => {
        if (!controller.signal.aborted) failures.push(String(error));
      })
      .finally(openedOrFailed),
  );
}
