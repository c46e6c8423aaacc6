/**
 * The fork decisions (fork.ts), one test per row of README.md's F-table, named by the row id:
 * given a source conversation run through `transition` and a new conversation, when a start shows
 * the client's last turn, then this decision (and for a fork, this copy and its next turn).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { type ForkSource, type ImportedTurn, toFork, toImportState } from "./fork.ts";
import { hashHistory } from "./history-hash.ts";
import { toCallID, toTurnID } from "./ids.ts";
import { MAX_TURN_STARTS, toBranchState, toRewind } from "./rewind.ts";
import { createConversation } from "./state.ts";
import {
  assistantMessage,
  COMPACTING,
  CONVERSATION_ID,
  cancel,
  compact,
  fromState,
  given,
  llm,
  start,
  streamed,
  text,
  userMessage,
} from "./testing.ts";
import type { ConversationState, Input, ResponseEvent, TurnSettings } from "./types.ts";

const FORK = "fork-1";
const callOf = (turn: number, conversationID = CONVERSATION_ID) =>
  toCallID(conversationID, toTurnID(turn), 0);

/** The start of turn `n`, as the Cursor dialect builds it: origin `r<n>`, message id `m<n>`. */
function startOf(n: number, settings?: TurnSettings): Input {
  const base = start(`message ${n}`, {
    inputID: `r${n}:0`,
    ...(settings === undefined ? {} : { settings }),
  });
  return { ...base, origin: `r${n}`, messageID: `m${n}` } as Input;
}

function turn(n: number, settings?: TurnSettings, conversationID = CONVERSATION_ID): Input[] {
  return [
    startOf(n, settings),
    ...streamed(callOf(n, conversationID), assistantMessage([text(`answer ${n}`)])),
  ];
}

function turns(n: number, settings?: TurnSettings): Input[] {
  return Array.from({ length: n }, (_, i) => turn(i + 1, settings)).flat();
}

const empty = createConversation(FORK).committed;
const known = (state: ConversationState): ForkSource => ({ type: "known", state });
const origin = (n: number) => `r${n}`;

/** The new conversation's state after its first start (`n`), run on the fork of `source` to `k`. */
function forkAndStart(source: ConversationState, k: number, n: number) {
  const copy = toBranchState(source, k, FORK, "r-fork:fork");
  return fromState({ committed: copy, pending: null }).when(startOf(n)).transition;
}

const rows: Record<string, () => void> = {
  F1() {
    // The conversation has history: never a fork (a continuation, or a replay of the fork's start).
    const source = given(turns(2)).state.committed;
    const own = { ...given(turns(1)).state.committed, conversationID: FORK };
    assert.deepEqual(toFork(own, origin(2), known(source)), {
      type: "none",
      reason: "has_history",
    });
  },
  F2() {
    // The client shows no turns (a new chat), or its last turn's id could not be read.
    const source = known(given(turns(2)).state.committed);
    assert.deepEqual(toFork(empty, null, source), { type: "none", reason: "no_turns" });
    assert.deepEqual(toFork(empty, "", source), { type: "none", reason: "unreadable_turn" });
  },
  F3() {
    // No conversation here ran the turn (a chat from elsewhere, a wiped store); another user's.
    assert.deepEqual(toFork(empty, origin(2), { type: "unknown", imported: [] }), {
      type: "none",
      reason: "unknown_source",
    });
    assert.deepEqual(toFork(empty, origin(2), { type: "not_visible", conversationID: "x" }), {
      type: "none",
      reason: "not_visible",
    });
  },
  F4() {
    // A fork at the source's last turn (ended) copies all of it; at turn 1 of 3, turn 1 only.
    const source = given(turns(3)).state.committed;
    assert.deepEqual(toFork(empty, origin(3), known(source)), {
      type: "fork",
      from: CONVERSATION_ID,
      afterTurn: 3,
      messages: 6,
    });
    assert.deepEqual(toFork(empty, origin(1), known(source)), {
      type: "fork",
      from: CONVERSATION_ID,
      afterTurn: 1,
      messages: 2,
    });
  },
  F5() {
    // The forked turn still runs: the copy ends with the turn before it; a first turn that runs
    // leaves nothing to copy. A turn that ended canceled or failed has ended: copied.
    const running = given(turns(2), startOf(3)).state.committed;
    assert.deepEqual(toFork(empty, origin(3), known(running)), {
      type: "fork",
      from: CONVERSATION_ID,
      afterTurn: 2,
      messages: 4,
    });
    const first = given(startOf(1)).state.committed;
    assert.deepEqual(toFork(empty, origin(1), known(first)), {
      type: "none",
      reason: "nothing_to_copy",
    });
    const canceled = given(turns(2), startOf(3), cancel()).state.committed;
    assert.equal(canceled.status, "canceled");
    assert.deepEqual(toFork(empty, origin(3), known(canceled)), {
      type: "fork",
      from: CONVERSATION_ID,
      afterTurn: 3,
      messages: canceled.messages.length,
    });
    const error: ResponseEvent = {
      type: "error",
      reason: "error",
      error: { ...assistantMessage([], "error"), errorMessage: "no" },
    };
    const failed = given(turns(2), startOf(3), llm(callOf(3), error)).state.committed;
    assert.equal(failed.status, "failed");
    assert.equal(toFork(empty, origin(3), known(failed)).type, "fork");
    // A later turn that runs does not hold back a fork at an earlier one.
    assert.deepEqual(toFork(empty, origin(1), known(running)), {
      type: "fork",
      from: CONVERSATION_ID,
      afterTurn: 1,
      messages: 2,
    });
  },
  F6() {
    // The source's records do not know the turn: older than the records kept, or none saved.
    const many = given(turns(MAX_TURN_STARTS + 2)).state.committed;
    assert.deepEqual(toFork(empty, origin(1), known(many)), {
      type: "none",
      reason: "unknown_origin",
    });
    assert.equal(toFork(empty, origin(3), known(many)).type, "fork");
    const { turnStarts: _, ...legacy } = given(turns(2)).state.committed;
    assert.deepEqual(toFork(empty, origin(2), known(legacy)), {
      type: "none",
      reason: "unknown_origin",
    });
  },
  F7() {
    // The copy at the source's last turn: every message, its hashes, every record; idle. A turn
    // that still runs is never copied whole.
    const source = given(turns(3)).state.committed;
    const copy = toBranchState(source, 3, FORK, "r-fork:fork");
    assert.deepEqual(copy.messages, source.messages);
    assert.deepEqual(copy.hashes, hashHistory(source.messages));
    assert.deepEqual(copy.turnStarts, source.turnStarts);
    assert.deepEqual(
      [copy.conversationID, copy.status, copy.turnCount, copy.turnID, copy.lastCommitID],
      [FORK, "final", 3, "t3", "r-fork:fork"],
    );
    const running = given(turns(2), startOf(3)).state.committed;
    assert.throws(() => toBranchState(running, 3, FORK, "i"), /no record/);
  },
  F8() {
    // The fork's first turn: the copied turns and the new message, nothing later; its request's
    // messages begin with the source's own (the same provider prompt prefix), and it keeps the
    // source's prompt-cache key (`cacheKeyFrom`), through its turns; the copied messages are
    // marked (`copied`: not its model calls). It is recorded after the copied turns, so a rewind
    // in the fork (to a copied turn) is a branch.
    const source = given(turns(3)).state.committed;
    const step = forkAndStart(source, 2, 4);
    const command = step.command;
    assert.ok(command.type === "call_llm");
    const sent = command.request.messages;
    assert.deepEqual(sent.slice(0, 4), source.messages.slice(0, 4));
    assert.equal(sent.length, 5);
    assert.equal(sent.at(-1)?.content, "message 4");
    const forked = step.state.committed;
    assert.deepEqual([forked.cacheKeyFrom, forked.copied], [CONVERSATION_ID, 4]);
    assert.deepEqual(
      forked.turnStarts?.map((s) => [s.turn, s.at, s.origin]),
      [
        [1, 0, "r1"],
        [2, 2, "r2"],
        [3, 4, "r4"],
      ],
    );
    const done = fromState(step.state).given(
      streamed(callOf(3, FORK), assistantMessage([text("answer 4")])),
    ).state.committed;
    // Its next start continues it; an edit of its own message goes back to the copied turn 2.
    assert.deepEqual(toRewind(done, { lastTurnOrigin: "r4", messageID: "m5", origin: "r5" }), {
      type: "continue",
      reason: "last_turn",
    });
    assert.deepEqual(toRewind(done, { lastTurnOrigin: "r2", messageID: "m4", origin: "r6" }), {
      type: "rewind",
      afterTurn: 2,
      dropped: 2,
    });
    // A replay of the fork's first start finds history: no second copy.
    assert.deepEqual(toFork(done, origin(2), known(source)), {
      type: "none",
      reason: "has_history",
    });
  },
  F9() {
    // A fork of a fork: at the fork's own turn (the copy holds the copied turns and it), or at a
    // turn it copied.
    const source = given(turns(3)).state.committed;
    const step = forkAndStart(source, 2, 4);
    const forked = fromState(step.state).given(
      streamed(callOf(3, FORK), assistantMessage([text("answer 4")])),
    ).state.committed;
    const again = createConversation("fork-2").committed;
    assert.deepEqual(toFork(again, origin(4), known(forked)), {
      type: "fork",
      from: FORK,
      afterTurn: 3,
      messages: 6,
    });
    assert.deepEqual(toFork(again, origin(1), known(forked)), {
      type: "fork",
      from: FORK,
      afterTurn: 1,
      messages: 2,
    });
  },
  F10() {
    // Compactions: kept when a kept turn made them (a fork after the summarize), dropped when the
    // fork point is before the summarize turn.
    const compacted = given(
      turns(2, COMPACTING),
      { ...compact("r3:0"), origin: "r3" } as Input,
      streamed(callOf(3), assistantMessage([text("The user asked for 1 and 2.")])),
      turn(4, COMPACTING),
    ).state.committed;
    assert.equal(compacted.compactions?.length, 1);
    const after = toFork(empty, origin(4), known(compacted));
    assert.deepEqual(after, { type: "fork", from: CONVERSATION_ID, afterTurn: 4, messages: 6 });
    assert.equal(toBranchState(compacted, 4, FORK, "i").compactions?.length, 1);
    const before = toFork(empty, origin(2), known(compacted));
    assert.deepEqual(before, { type: "fork", from: CONVERSATION_ID, afterTurn: 2, messages: 4 });
    assert.equal(toBranchState(compacted, 2, FORK, "i").compactions, undefined);
  },
  F11() {
    // No conversation here ran it, and the client's turns could be read: they are imported.
    const imported: ImportedTurn[] = [
      { origin: "c1", messages: [userMessage("hello"), assistantMessage([text("hi")])] },
      { origin: "", messages: [userMessage("and?")] },
      { origin: "c3", messages: [userMessage("bye"), assistantMessage([text("ok")])] },
    ];
    assert.deepEqual(toFork(empty, "c3", { type: "unknown", imported }), {
      type: "import",
      turns: 3,
      messages: 5,
    });
    assert.deepEqual(
      toFork(empty, "c3", { type: "unknown", imported: [{ origin: "c3", messages: [] }] }),
      {
        type: "none",
        reason: "unknown_source",
      },
    );
    // Another user's turns are not imported either; history of its own wins.
    assert.deepEqual(toFork(empty, "c3", { type: "not_visible", conversationID: "x" }), {
      type: "none",
      reason: "not_visible",
    });
    const own = { ...given(turns(1)).state.committed, conversationID: FORK };
    assert.equal(toFork(own, "c3", { type: "unknown", imported }).type, "none");
    // The state: the turns in order, a record per turn (origin when known), idle, no settings.
    const state = toImportState(FORK, imported, "r-new:fork");
    assert.deepEqual(
      state.messages,
      imported.flatMap((turn) => turn.messages),
    );
    assert.deepEqual(state.hashes, hashHistory(state.messages));
    assert.deepEqual(
      [state.status, state.turnCount, state.turnID, state.settings, state.lastCommitID],
      ["final", 3, "t3", null, "r-new:fork"],
    );
    assert.deepEqual(state.turnStarts, [
      { turn: 1, at: 0, origin: "c1" },
      { turn: 2, at: 2 },
      { turn: 3, at: 3, origin: "c3" },
    ]);
  },
  F12() {
    // The imported conversation's first turn runs on the imported history; its next start is a
    // continuation, an edit of an imported turn's successor a rewind.
    const imported: ImportedTurn[] = [
      { origin: "c1", messages: [userMessage("hello"), assistantMessage([text("hi")])] },
      { origin: "c2", messages: [userMessage("more"), assistantMessage([text("sure")])] },
    ];
    const step = fromState({
      committed: toImportState(FORK, imported, "i"),
      pending: null,
    }).when(startOf(3)).transition;
    const command = step.command;
    assert.ok(command.type === "call_llm");
    assert.deepEqual(
      command.request.messages.map((message) =>
        typeof message.content === "string" ? message.content : message.content.length,
      ),
      ["hello", 1, "more", 1, "message 3"],
    );
    const done = fromState(step.state).given(
      streamed(callOf(3, FORK), assistantMessage([text("answer 3")])),
    ).state.committed;
    assert.deepEqual(toRewind(done, { lastTurnOrigin: "r3", messageID: "m4", origin: "r4" }), {
      type: "continue",
      reason: "last_turn",
    });
    assert.deepEqual(toRewind(done, { lastTurnOrigin: "c1", messageID: "", origin: "r5" }), {
      type: "rewind",
      afterTurn: 1,
      dropped: 4,
    });
  },
  F13() {
    // The client names the turn by a resume request's id (a window reload while it ran), which the
    // records do not hold; the binding of that id names the turn it took over.
    const resumed = (state: ConversationState, boundTurnID: string | null): ForkSource => ({
      type: "known",
      state,
      boundTurnID,
    });
    const ended = given(turns(3)).state.committed;
    assert.deepEqual(toFork(empty, "q2", resumed(ended, "t2")), {
      type: "fork",
      from: CONVERSATION_ID,
      afterTurn: 2,
      messages: 4,
    });
    const running = given(turns(2), startOf(3)).state.committed;
    assert.deepEqual(toFork(empty, "q3", resumed(running, "t3")), {
      type: "fork",
      from: CONVERSATION_ID,
      afterTurn: 2,
      messages: 4,
    });
    for (const bound of ["t9", null]) {
      assert.deepEqual(toFork(empty, "q2", resumed(ended, bound)), {
        type: "none",
        reason: "unknown_origin",
      });
    }
    // The records decide when they know the id.
    assert.equal(
      (toFork(empty, origin(1), resumed(ended, "t3")) as { afterTurn?: number }).afterTurn,
      1,
    );
  },
};

describe("fork: the F-table", () => {
  for (const [row, check] of Object.entries(rows)) test(row, check);

  test("every F row of README.md has a test, and every test a row", () => {
    const readme = readFileSync(new URL("./README.md", import.meta.url), "utf8");
    const documented = [...readme.matchAll(/^\| (F\d+) +\|/gm)].map((match) => match[1]);
    assert.deepEqual(documented, Object.keys(rows));
  });
});
