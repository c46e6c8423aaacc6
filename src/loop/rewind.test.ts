/**
 * The rewind decisions (rewind.ts), one test per row of README.md's R-table, named by the row id:
 * given turns run through `transition`, when a start with this hint arrives, then this decision
 * (and for a rewind, this branch state).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { hashHistory } from "./history-hash.ts";
import { toCallID, toTurnID } from "./ids.ts";
import {
  isBranchOf,
  MAX_TURN_STARTS,
  type RewindDecision,
  type RewindHint,
  toBranchConversationID,
  toBranchState,
  toRewind,
} from "./rewind.ts";
import { toRootConversationID } from "./subagent.ts";
import {
  assistantMessage,
  COMPACTING,
  CONVERSATION_ID,
  cancel,
  compact,
  fromState,
  given,
  llm,
  type Spec,
  start,
  streamed,
  text,
} from "./testing.ts";
import type {
  ContextSupplement,
  ConversationState,
  Input,
  ResponseEvent,
  TurnSettings,
} from "./types.ts";

const callOf = (turn: number) => toCallID(CONVERSATION_ID, toTurnID(turn), 0);

/** The start of turn `n`, as the Cursor dialect builds it: origin `r<n>`, message id `m<n>`. */
function startOf(n: number, settings?: TurnSettings): Input {
  const base = start(`message ${n}`, {
    inputID: `r${n}:0`,
    ...(settings === undefined ? {} : { settings }),
  });
  return { ...base, origin: `r${n}`, messageID: `m${n}` } as Input;
}

/** Turn `n` from its start to its final answer. */
function turn(n: number, settings?: TurnSettings): Input[] {
  return [startOf(n, settings), ...streamed(callOf(n), assistantMessage([text(`answer ${n}`)]))];
}

/** Turns 1..n, each ended normally. */
function turns(n: number, settings?: TurnSettings): Input[] {
  return Array.from({ length: n }, (_, i) => turn(i + 1, settings)).flat();
}

/** A hint: the client's last turn is `r<last>` (null: none), the new message `messageID`, its turn `r-new`. */
function hint(last: number | null, messageID = "m-new", origin = "r-new"): RewindHint {
  return { lastTurnOrigin: last === null ? null : `r${last}`, messageID, origin };
}

function decide(spec: Spec, rewindHint: RewindHint): RewindDecision {
  return toRewind(spec.state.committed, rewindHint);
}

const summary = assistantMessage([text("The user asked for 1 and 2.")]);
/** Turns 1, 2 (2 messages each), a summarize turn 3 (its record: upTo 2), then turn 4. */
const compacted = given(
  turns(2, COMPACTING),
  { ...compact("r3:0"), origin: "r3" } as Input,
  streamed(callOf(3), summary),
  turn(4, COMPACTING),
);

const rows: Record<string, () => void> = {
  R1() {
    // The client shows every turn: a continuation.
    assert.deepEqual(decide(given(turns(3)), hint(3)), { type: "continue", reason: "last_turn" });
  },
  R2() {
    // Turn 2's message sent again with the state from before it: a rewind to turn 1.
    const spec = given(turns(3));
    assert.deepEqual(decide(spec, hint(1, "m2")), { type: "rewind", afterTurn: 1, dropped: 4 });
    // The same message while the turn it edits still runs.
    const running = given(turns(2), startOf(3));
    assert.deepEqual(decide(running, hint(2, "m3")), { type: "rewind", afterTurn: 2, dropped: 1 });
  },
  R3() {
    // A new message from an earlier point with two turns or more after it: the client saw the
    // first of them end, so it went back: a rewind too.
    assert.deepEqual(decide(given(turns(3)), hint(1)), {
      type: "rewind",
      afterTurn: 1,
      dropped: 4,
    });
    // One turn after it, ended normally: the client may not have seen its end (a text-only turn's
    // first checkpoint comes at its end; a message sent as its last tokens streamed): a
    // continuation, unless that turn's own message is sent again.
    const ended = given(turns(3));
    assert.equal(ended.state.committed.status, "final");
    assert.deepEqual(decide(ended, hint(2)), { type: "continue", reason: "interrupted_turn" });
    assert.deepEqual(decide(ended, hint(2, "m3")), { type: "rewind", afterTurn: 2, dropped: 2 });
  },
  R4() {
    // A new message whose state lacks only the turn that runs or was interrupted: a continuation.
    const running = given(turns(2), startOf(3));
    assert.deepEqual(decide(running, hint(2)), { type: "continue", reason: "interrupted_turn" });
    const canceled = given(turns(2), startOf(3), cancel());
    assert.equal(canceled.state.committed.status, "canceled");
    assert.deepEqual(decide(canceled, hint(2)), { type: "continue", reason: "interrupted_turn" });
    const error: ResponseEvent = {
      type: "error",
      reason: "error",
      error: { ...assistantMessage([], "error"), errorMessage: "no" },
    };
    const failed = given(turns(2), startOf(3), llm(callOf(3), error));
    assert.equal(failed.state.committed.status, "failed");
    assert.deepEqual(decide(failed, hint(2)), { type: "continue", reason: "interrupted_turn" });
  },
  R5() {
    // No turns shown: only the first message sent again is a rewind (to nothing).
    const spec = given(turns(2));
    assert.deepEqual(decide(spec, hint(null, "m1")), { type: "rewind", afterTurn: 0, dropped: 4 });
    assert.deepEqual(decide(spec, hint(null)), { type: "continue", reason: "no_checkpoint" });
    assert.deepEqual(decide(spec, hint(null, "")), { type: "continue", reason: "no_checkpoint" });
  },
  R6() {
    // The client's last turn is not ours, or the conversation has none.
    assert.deepEqual(decide(given(turns(2)), { ...hint(1), lastTurnOrigin: "elsewhere" }), {
      type: "continue",
      reason: "unknown_origin",
    });
    assert.deepEqual(decide(given(), hint(null, "m1")), { type: "continue", reason: "no_turns" });
  },
  R7() {
    // A state saved before records existed: nothing is known, nothing rewound.
    const { turnStarts: _, ...legacy } = given(turns(3)).state.committed;
    assert.deepEqual(toRewind(legacy, hint(1, "m2")), {
      type: "continue",
      reason: "unknown_origin",
    });
    assert.deepEqual(toRewind(legacy, hint(null, "m1")), {
      type: "continue",
      reason: "no_checkpoint",
    });
    // Records from some turn on only (the first turns before records existed).
    const partial: ConversationState = {
      ...legacy,
      turnStarts: (given(turns(3)).state.committed.turnStarts ?? []).filter((s) => s.turn !== 2),
    };
    assert.deepEqual(toRewind(partial, hint(1, "m2")), { type: "continue", reason: "no_record" });
  },
  R8() {
    // A replay of a turn already started is never a rewind.
    assert.deepEqual(decide(given(turns(3)), hint(1, "m2", "r2")), {
      type: "continue",
      reason: "replay",
    });
  },
  R9() {
    // The turns the client lacks appended nothing (a summarize): no branch.
    const spec = given(turns(2, COMPACTING), { ...compact("r3:0"), origin: "r3" } as Input);
    const done = spec.given(streamed(callOf(3), summary));
    assert.equal(done.state.committed.status, "final");
    // One turn behind (a continuation anyway); a branch would also hold the same history.
    assert.deepEqual(decide(done, hint(2)), { type: "continue", reason: "interrupted_turn" });
  },
  R10() {
    // The branch: the prefix, its hashes, the kept turns' records; nothing of a running turn.
    const source = given(turns(3)).state.committed;
    const branch = toBranchState({ ...source, route: { requested: "a", model: "b" } }, 1, "b", "i");
    assert.deepEqual(branch.messages, source.messages.slice(0, 2));
    assert.deepEqual(branch.hashes, hashHistory(source.messages.slice(0, 2)));
    assert.deepEqual(
      [branch.conversationID, branch.status, branch.turnCount, branch.turnID, branch.lastCommitID],
      ["b", "final", 1, "t1", "i"],
    );
    assert.deepEqual(
      [branch.call, branch.waiting, branch.failure, branch.context],
      [null, null, null, []],
    );
    assert.equal(branch.route, undefined);
    assert.equal(branch.settings, source.settings);
    assert.deepEqual(branch.turnStarts, source.turnStarts?.slice(0, 1));
    // The kept messages are marked copied (the dashboard: not the branch's calls); the branch
    // keeps the source's prompt-cache key, and a branch of it the same.
    assert.deepEqual([branch.copied, branch.cacheKeyFrom], [2, CONVERSATION_ID]);
    assert.equal(toBranchState(branch, 1, "b2", "i2").cacheKeyFrom, CONVERSATION_ID);
    // To nothing: the first state of a conversation, with the settings kept.
    const empty = toBranchState(given(turns(2), startOf(3)).state.committed, 0, "b", "i");
    assert.deepEqual(
      [empty.messages, empty.status, empty.turnCount, empty.turnID, empty.turnStarts],
      [[], "ready", 0, "", undefined],
    );
    // To the last turn: all of it once it has ended (a fork, fork.ts), never while it runs.
    assert.equal(toBranchState(source, 3, "b", "i").messages.length, 6);
    assert.throws(
      () => toBranchState(given(turns(2), startOf(3)).state.committed, 3, "b", "i"),
      /no record/,
    );
    // Context: what the kept messages show. Rules shown in turn 1 and unchanged stay seen; the
    // layout, changed in turn 2 (dropped), is not seen on a branch to 1; a key first shown in
    // turn 2 is not seen either.
    const withContext = (n: number, context: ContextSupplement[]): Input => {
      const base = start(`message ${n}`, { inputID: `r${n}:0`, context });
      return { ...base, origin: `r${n}`, messageID: `m${n}` } as Input;
    };
    const rules = { key: "rules", text: "Be brief." };
    const shown = given(
      withContext(1, [rules, { key: "layout", text: "a/" }]),
      ...streamed(callOf(1), assistantMessage([text("answer 1")])),
      withContext(2, [rules, { key: "layout", text: "a/ b/" }, { key: "git", text: "clean" }]),
      ...streamed(callOf(2), assistantMessage([text("answer 2")])),
    ).state.committed;
    assert.deepEqual(
      shown.context.map((entry) => entry.key),
      ["rules", "layout", "git"],
    );
    assert.deepEqual(
      toBranchState(shown, 1, "b", "i").context.map((entry) => entry.key),
      ["rules"],
    );
  },
  R11() {
    // The next turn on the branch: the prefix and the new message, nothing of the dropped turns.
    const branch = toBranchState(given(turns(3)).state.committed, 1, "branch", "i");
    const spec = fromState({ committed: branch, pending: null });
    const outcome = spec
      .when(startOf(4))
      .thenExpect({ command: "call_llm", status: "waiting_llm" });
    const command = outcome.transition.command;
    assert.ok(command.type === "call_llm");
    assert.deepEqual(
      command.request.messages.map((message) =>
        typeof message.content === "string" ? message.content : message.content.length,
      ),
      ["message 1", 1, "message 4"],
    );
    assert.equal(outcome.transition.state.committed.turnCount, 2);
    assert.deepEqual(
      outcome.transition.state.committed.turnStarts?.map((s) => [s.turn, s.at, s.origin]),
      [
        [1, 0, "r1"],
        [2, 2, "r4"],
      ],
    );
  },
  R12() {
    // Compaction records: kept when a kept turn made them, dropped otherwise.
    const source = compacted.state.committed;
    assert.equal(source.compactions?.length, 1);
    assert.equal(source.compactions?.[0]?.historyLength, 4);
    assert.deepEqual(decide(compacted, hint(3, "m4")), {
      type: "rewind",
      afterTurn: 3,
      dropped: 2,
    });
    assert.equal(toBranchState(source, 3, "b", "i").compactions?.length, 1);
    assert.deepEqual(decide(compacted, hint(1, "m2")), {
      type: "rewind",
      afterTurn: 1,
      dropped: 4,
    });
    assert.equal(toBranchState(source, 1, "b", "i").compactions, undefined);
    // Back to just before the summarize turn (its record sits at the cut): the summary goes, the
    // branch has the history it replaced.
    assert.equal(source.turnStarts?.find((start) => start.turn === 3)?.at, 4);
    assert.equal(toBranchState(source, 2, "b", "i").compactions, undefined);
    assert.equal(toBranchState(source, 2, "b", "i").messages.length, 4);
    const elided: ConversationState = {
      ...source,
      elisions: [
        { upTo: 2, historyLength: 2, afterCompactions: 0 },
        { upTo: 4, historyLength: 6, afterCompactions: 1 },
      ],
    };
    assert.deepEqual(toBranchState(elided, 1, "b", "i").elisions, [
      { upTo: 2, historyLength: 2, afterCompactions: 0 },
    ]);
  },
  R13() {
    // Branch ids: stable per request, rooted at the client's conversation, told from subagents'.
    const branch = toBranchConversationID("conv", "req-2");
    assert.equal(branch, "conv~edit~req-2");
    assert.equal(toRootConversationID(branch), "conv");
    assert.equal(toRootConversationID(`${branch}~task~abc`), "conv");
    assert.equal(isBranchOf(branch, "conv"), true);
    assert.equal(isBranchOf("conv", "conv"), true);
    assert.equal(isBranchOf(`${branch}~task~abc`, "conv"), false);
    assert.equal(isBranchOf("conv2~edit~r", "conv"), false);
  },
  R14() {
    // At most MAX_TURN_STARTS records, the newest; older turns cannot be rewound to.
    const many = given(turns(MAX_TURN_STARTS + 2)).state.committed;
    assert.equal(many.turnStarts?.length, MAX_TURN_STARTS);
    assert.equal(many.turnStarts?.[0]?.turn, 3);
    assert.deepEqual(toRewind(many, hint(1)), { type: "continue", reason: "unknown_origin" });
    assert.equal(toRewind(many, hint(3)).type, "rewind");
  },
};

describe("rewind: the R-table", () => {
  for (const [row, check] of Object.entries(rows)) test(row, check);

  test("every R row of README.md has a test, and every test a row", () => {
    const readme = readFileSync(new URL("./README.md", import.meta.url), "utf8");
    const documented = [...readme.matchAll(/^\| (R\d+) +\|/gm)].map((match) => match[1]);
    assert.deepEqual(documented, Object.keys(rows));
  });
});
