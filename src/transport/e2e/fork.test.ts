/**
 * Forks end to end (docs/protocol.md "Rewinds", loop/fork.ts): the IDE forks or duplicates a chat
 * on the client. The clone's first run request names a NEW conversation id and carries the
 * source's checkpoint at the fork point (its turns keep the request ids they ran under). The model
 * must see the conversation the user sees — the source's turns up to that point and the new
 * message, nothing later —, with the source's request as the prefix of the fork's (prompt caches
 * hit); a replay of the fork's first request after a crash is a duplicate, not a second copy.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { toReferencedBlobs } from "../testing/index.ts";
import { messagesBytes, runTurn, textsOf, turn } from "./provider-turns.ts";
import { createGate, type Harness, startHarness } from "./test-harness.ts";

describe("a chat forked in the IDE (in-process)", () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness();
  });
  after(() => harness.close());

  test("a fork after two turns: the model sees both and the new message; the source's request is the prefix", async () => {
    const source = "fork-src-0001";
    const fork = "fork-new-0001";
    const client = harness.client();
    await runTurn(harness, client, turn(source, "A", "mA"), "answer A");
    const second = await runTurn(harness, client, turn(source, "B", "mB"), "answer B");
    // The IDE clones the chat: a new composer id, the source's checkpoint with its request ids.
    const forked = await runTurn(
      harness,
      client,
      { ...turn(fork, "F", "mF"), checkpoint: client.checkpoint(source) ?? null },
      "answer F",
    );
    assert.deepEqual(textsOf(forked, "user"), ["A", "B", "F"]);
    assert.deepEqual(textsOf(forked, "assistant"), ["answer A", "answer B"]);
    assert.ok(messagesBytes(forked).startsWith(messagesBytes(second)), "the same prompt prefix");
    const applied = harness.logs.find((line) => line.message === "fork applied");
    assert.deepEqual(
      {
        conversation: applied?.fields.conversation,
        from: applied?.fields.from,
        turn: applied?.fields.turn,
        messages: applied?.fields.messages,
      },
      { conversation: fork, from: source, turn: 2, messages: 4 },
    );
    // The fork goes on as a conversation of its own; the source is untouched.
    const next = await runTurn(harness, client, turn(fork, "G", "mG"), "answer G");
    assert.deepEqual(textsOf(next, "user"), ["A", "B", "F", "G"]);
    assert.ok(messagesBytes(next).startsWith(messagesBytes(forked)), "a prefix extension");
    const later = await runTurn(harness, client, turn(source, "C", "mC"), "answer C");
    assert.deepEqual(textsOf(later, "user"), ["A", "B", "C"]);
  });

  test("a fork at turn 1 of 3: only turn 1 and the new message", async () => {
    const source = "fork-src-0002";
    const fork = "fork-new-0002";
    const client = harness.client();
    await runTurn(harness, client, turn(source, "A", "mA"), "answer A");
    const afterA = client.checkpoint(source);
    await runTurn(harness, client, turn(source, "B", "mB"), "answer B");
    await runTurn(harness, client, turn(source, "C", "mC"), "answer C");
    const forked = await runTurn(
      harness,
      client,
      { ...turn(fork, "F", "mF"), checkpoint: afterA ?? null },
      "answer F",
    );
    assert.deepEqual(textsOf(forked, "user"), ["A", "F"]);
    assert.deepEqual(textsOf(forked, "assistant"), ["answer A"]);
    // An edit in the fork of its own message goes back to the copied turn A (a branch of it).
    const edited = await runTurn(
      harness,
      client,
      { ...turn(fork, "F2", "mF"), checkpoint: afterA ?? null },
      "answer F2",
    );
    assert.deepEqual(textsOf(edited, "user"), ["A", "F2"]);
  });

  test("a new chat with no turns shown starts empty", async () => {
    const client = harness.client();
    const body = await runTurn(
      harness,
      client,
      { ...turn("fork-new-0003", "hello", "m1"), checkpoint: null },
      "hi",
    );
    assert.deepEqual(textsOf(body, "user"), ["hello"]);
    assert.equal(
      harness.logs.filter(
        (line) => line.message.startsWith("fork") && line.fields.conversation === "fork-new-0003",
      ).length,
      0,
    );
  });
});

describe("a forked chat and a crash (process mode)", () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({ mode: "process" });
  });
  after(() => harness.close());

  test("the fork's first request replayed after a SIGKILL restart is a duplicate: no second copy, no second call", async () => {
    const source = "fork-src-0101";
    const fork = "fork-new-0101";
    const client = harness.client();
    await runTurn(harness, client, turn(source, "A", "mA"), "answer A");
    await runTurn(harness, client, turn(source, "B", "mB"), "answer B");
    const request = client.runRequest({
      ...turn(fork, "F", "mF"),
      checkpoint: client.checkpoint(source) ?? null,
    });
    const forked = await runTurn(harness, client, request, "answer F", "fork-request-0101");
    assert.deepEqual(textsOf(forked, "user"), ["A", "B", "F"]);
    const stored = await harness.store.load(fork);
    assert.equal(stored?.state.turnCount, 3);
    await harness.restart(); // SIGKILL
    const calls = harness.provider.requests.length;
    // The client sends the same run request again (a retry after the connection dropped).
    await client.startTurn(request, { requestId: "fork-request-0101" }).done.catch(() => {});
    assert.equal(harness.provider.requests.length, calls, "no second model call");
    assert.equal((await harness.store.load(fork))?.version, stored?.version, "no second copy");
    // The fork continues after the restart with its copied history.
    const next = await runTurn(harness, client, turn(fork, "G", "mG"), "answer G");
    assert.deepEqual(textsOf(next, "user"), ["A", "B", "F", "G"]);
    assert.ok(messagesBytes(next).startsWith(messagesBytes(forked)), "a prefix extension");
  });
});

describe("a forked chat whose first turn waits for a tool through a crash (process mode)", () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({ mode: "process" });
  });
  after(() => harness.close());

  test("after a SIGKILL the reconnected stream finishes the fork's turn on the copied history", async () => {
    const source = "fork-src-0102";
    const fork = "fork-new-0102";
    const gate = createGate();
    let held = true;
    const client = harness.client({
      onExec: async (exec) => {
        if (held && exec.message.case === "writeArgs") await gate.promise;
        return undefined;
      },
    });
    await runTurn(harness, client, turn(source, "A", "mA"), "answer A");
    await runTurn(harness, client, turn(source, "B", "mB"), "answer B");
    harness.reply(
      {
        toolCalls: [
          { id: "call_w", name: "write_file", arguments: { path: "f.txt", content: "f\n" } },
        ],
      },
      { text: "written" },
    );
    const forked = client.startTurn({
      ...turn(fork, "F", "mF"),
      checkpoint: client.checkpoint(source) ?? null,
    });
    await forked.waitFor(
      (m) => m.message.case === "execServerMessage" && m.message.value.message.case === "writeArgs",
    );
    const lost = forked.runSseLost();
    await harness.restart(); // SIGKILL while the fork's write waits in the client
    await lost;
    held = false;
    gate.open();
    forked.reconnectRunSse();
    const result = await forked.done;
    assert.equal(result.error, undefined);
    assert.equal(readFileSync(join(harness.workspace, "f.txt"), "utf8"), "f\n");
    const last = harness.provider.requests.at(-1)?.body ?? "";
    assert.deepEqual(textsOf(last, "user"), ["A", "B", "F"]);
    assert.ok(last.includes("call_w"), "the write's result reached the fork's next call");
    const next = await runTurn(harness, client, turn(fork, "G", "mG"), "answer G");
    assert.deepEqual(textsOf(next, "user"), ["A", "B", "F", "G"]);
  });
});

describe("a chat this server has no record of (in-process, two servers)", () => {
  let elsewhere: Harness;
  let here: Harness;
  before(async () => {
    elsewhere = await startHarness(); // Cursor's own backend, or this server before a wipe
    here = await startHarness();
  });
  after(async () => {
    await elsewhere.close();
    await here.close();
  });

  test("its checkpoint's turns become the history: text, a tool call with its result; the next turn continues", async () => {
    const id = "import-0001";
    writeFileSync(join(elsewhere.workspace, "notes.txt"), "the secret word is pelican\n");
    const before = elsewhere.client();
    elsewhere.reply(
      { toolCalls: [{ id: "call_r", name: "read_file", arguments: { path: "notes.txt" } }] },
      { text: "answer A" },
    );
    assert.equal((await before.startTurn(turn(id, "A", "mA")).done).error, undefined);
    await runTurn(elsewhere, before, turn(id, "B", "mB"), "answer B");
    // The user goes on with the chat on a server that has never seen it.
    const client = here.client();
    const body = await runTurn(
      here,
      client,
      {
        ...turn(id, "C", "mC"),
        checkpoint: before.checkpoint(id) ?? null,
        // The turns are blob ids: the client's store (the same IDE) sends their blobs along.
        edit: (request) => {
          const checkpoint = before.checkpoint(id);
          if (checkpoint !== undefined) {
            request.preFetchedBlobs = toReferencedBlobs(checkpoint, before.blobs);
          }
        },
      },
      "answer C",
    );
    assert.deepEqual(textsOf(body, "user"), ["A", "B", "C"]);
    assert.match(body, /the secret word is pelican/, "the tool result is in the history");
    assert.match(body, /"name":"read_file"/, "as a call of the catalogue's tool");
    assert.ok(textsOf(body, "assistant").includes("answer B"));
    const imported = here.logs.find((line) => line.message === "history imported");
    assert.deepEqual(
      [imported?.fields.turns, imported?.fields.skipped, imported?.fields.dropped],
      [2, 0, 0],
    );
    // The next turn continues the imported conversation, its request extending this one.
    const next = await runTurn(here, client, turn(id, "D", "mD"), "answer D");
    assert.deepEqual(textsOf(next, "user"), ["A", "B", "C", "D"]);
    assert.ok(messagesBytes(next).startsWith(messagesBytes(body)), "a prefix extension");
  });
});
