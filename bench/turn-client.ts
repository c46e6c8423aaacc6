/**
 * A turn client in a process of its own, for `bench:stream`'s ttft and latency sections: a real
 * Cursor client is another process, so its own work (reading the response head, decoding each
 * message) runs beside the server's instead of on the server's event loop, where it would both
 * add to the figure and hide the moment the server wrote.
 *
 * For every line `<url>` on stdin it runs one turn (turn-kit.ts `runTurn`) and prints
 * `TURN <json>`: when the turn started and when each text delta's chunk indexes arrived, in epoch
 * milliseconds (`performance.timeOrigin + now`, comparable with the provider's process on one
 * machine). A line `IDE <url>` runs a later turn of a conversation, whose run request carries an
 * IDE-sized checkpoint (turn-kit.ts `ideCheckpoint`): a first turn of a new conversation, not
 * timed, then the timed one with the checkpoint that ends in that first turn. For a line
 * `DIRECT <json>` (`DirectCall`) it makes the same model call with the LLM
 * layer directly, no server, and prints its times the same way: the baseline of a client that
 * is a process of its own and talks to the provider itself. It exits when stdin closes.
 */
import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";
import type { LLM, LLMCall } from "../src/llm/index.ts";
import type { ConversationStateStructure } from "../src/transport/cursor/gen/agent/v1/conversation_state_pb.js";
import {
  appendEncodingMs,
  createBenchLLM,
  ideCheckpoint,
  indexesOf,
  runDirect,
  runTurn,
  type TurnOptions,
} from "./turn-kit.ts";

/** A `DIRECT` line: the provider's address and the request the server's model call made. */
export interface DirectCall {
  readonly providerUrl: string;
  readonly request: LLMCall["request"];
}

export interface TurnTimes {
  readonly sentAt: number;
  /** By chunk index: when the client had that chunk's text. */
  readonly received: (number | null)[];
  /** `IDE` turns: the client's own encoding of such an append (turn-kit.ts `appendEncodingMs`). */
  readonly encodeMs?: number;
}

const epoch = (at: number) => performance.timeOrigin + at;

/** One LLM layer per provider address, made once: as the server keeps its own. */
const direct = new Map<string, LLM>();

for await (const line of createInterface({ input: process.stdin })) {
  let checkpoint: ConversationStateStructure | undefined;
  let times: { received: number[]; calledAt: number };
  if (line.startsWith("DIRECT ")) {
    times = await callDirectly(JSON.parse(line.slice(7)) as DirectCall);
  } else if (line.startsWith("IDE ")) {
    const url = line.slice(4);
    const conversationId = randomUUID();
    const first = randomUUID();
    await turn(url, { conversationId, requestId: first });
    checkpoint = ideCheckpoint(first);
    times = await turn(url, { conversationId, checkpoint });
  } else {
    times = await turn(line);
  }
  const { received, calledAt } = times;
  const result: TurnTimes = {
    sentAt: epoch(calledAt),
    received: Array.from(received, (at) => (at === undefined ? null : epoch(at))),
    ...(checkpoint === undefined ? {} : { encodeMs: appendEncodingMs(checkpoint) }),
  };
  process.stdout.write(`TURN ${JSON.stringify(result)}\n`);
}

async function turn(
  url: string,
  options: TurnOptions = {},
): Promise<{ received: number[]; calledAt: number }> {
  const texts: string[] = [];
  const times: number[] = [];
  const { sentAt } = await runTurn(
    url,
    (text, at) => {
      texts.push(text);
      times.push(at);
    },
    undefined,
    undefined,
    options,
  );
  const received: number[] = [];
  texts.forEach((text, i) => {
    for (const index of indexesOf(text)) received[index] = times[i] as number;
  });
  return { received, calledAt: sentAt };
}

function callDirectly(call: DirectCall): Promise<{ received: number[]; calledAt: number }> {
  let llm = direct.get(call.providerUrl);
  if (llm === undefined) {
    llm = createBenchLLM(call.providerUrl);
    direct.set(call.providerUrl, llm);
  }
  return runDirect(llm, call.request);
}
