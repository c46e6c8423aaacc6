/**
 * The runner (docs/design.md §5, §7): thin glue that feeds inputs to `transition`, commits what
 * changed, publishes the emitted events, and executes the command. It decides nothing itself: what
 * a step writes and who may act on a turn are the loop's (`toStepRecords`, turn-ownership.ts).
 *
 * - Inputs of one conversation enter `transition` one at a time (a serial queue per
 *   conversation); the store's version compare-and-swap is the final arbiter.
 * - Commit order: a state change is committed before its events or command reach the client; a
 *   model call's exact request is saved (in the LLM layer's `beforeSend`) before any byte goes
 *   upstream — in the commit of the step that plans the call, which holds the call at
 *   `beforeSend` until then (model-call.ts `prepare`); a client operation is saved before it is
 *   sent (`runOnce`).
 * - Model events are read outside the queue and applied one `transition` each, in queued steps
 *   that take the burst already received (model-call.ts), so a cancel can come between two steps.
 * - A tool result is a new input, applied when the client answers; nothing waits for it.
 *
 * This file assembles the parts: the conversation cache (conversation-cache.ts), applying an input
 * with compare-and-swap and retry (apply-input.ts), a model call (model-call.ts) and a tool call
 * (tool-call.ts).
 */

import { errorMessage } from "../errors/error-message.ts";
import { toErrorMessage } from "../llm/index.ts";
import {
  type Command,
  type Input,
  mayCancel,
  mayResume,
  type StartInput,
  type Transition,
  toResumeCommand,
  toSupersedingCancel,
} from "../loop/index.ts";
import { createOperationRunner, type RecordWrite } from "../store/index.ts";
import { type ApplyInput, createApplyInput } from "./apply-input.ts";
import { createConversationCache, type Live } from "./conversation-cache.ts";
import { createModelCall } from "./model-call.ts";
import type { PreparedCall } from "./prepared-call.ts";
import { createRouteStart } from "./route-start.ts";
import { createSerialQueue } from "./serial-queue.ts";
import { createToolCall } from "./tool-call.ts";
import type {
  ExternalInput,
  Runner,
  RunnerOptions,
  SubmitOptions,
  SubmitResult,
  TurnOutcome,
  TurnOutput,
} from "./types.ts";

export function createRunner(options: RunnerOptions): Runner {
  const { store, llm } = options;
  const now = options.now ?? Date.now;
  const report = options.onError ?? (() => {});
  const queue = createSerialQueue();
  const operations = createOperationRunner(store);
  const live = createConversationCache(store);
  const background = new Set<Promise<void>>();
  let stopping = false;
  const isStopping = (): boolean => stopping;
  const applyInput = createApplyInput({
    store,
    cache: live,
    execute,
    prepare: (entry, command, turnID) => callModel.prepare(entry, command, turnID),
  });
  const apply: ApplyInput = Object.assign(applyOrEndTurn, { now: applyNowOrEndTurn });
  const callModel = createModelCall({
    store,
    llm,
    now,
    queue,
    apply,
    isStopping,
    ...(options.onModelSwitch === undefined ? {} : { onModelSwitch: options.onModelSwitch }),
    ...(options.prepareWaitMs === undefined ? {} : { prepareWaitMs: options.prepareWaitMs }),
  });
  const callTool = createToolCall({ operations, now, queue, apply, isStopping });

  /**
   * Runs work outside the caller's queue step. Model calls are awaited by `shutdown`; tool calls
   * are not, since they wait for a client that may never answer.
   */
  const spawn = (
    conversationID: string,
    what: "model call" | "tool call",
    work: () => Promise<void>,
  ): void => track(conversationID, what, work());

  /** Reports a failure of `work`; a model call's is kept until it ends (`shutdown` waits). */
  const track = (
    conversationID: string,
    what: "model call" | "tool call",
    work: Promise<void>,
  ): void => {
    const task = work
      .catch((error: unknown) => report(error, { conversationID, what }))
      .finally(() => background.delete(task));
    if (what === "model call") background.add(task);
  };

  /**
   * Applies one input: transition, commit, publish, execute. Runs inside the conversation's
   * queue. Returns null when the store had already applied it (a duplicate). Any failure ends
   * the turn on the client (the loop never saw it) and is rethrown.
   */
  async function applyOrEndTurn(
    entry: Live,
    input: Input,
    inputID: string,
    extra: (step: Transition) => readonly RecordWrite[] = () => [],
  ): Promise<Transition | null> {
    try {
      return await applyInput(entry, input, inputID, extra);
    } catch (error) {
      fail(entry, `the conversation could not be saved: ${errorMessage(error)}`);
      throw error;
    }
  }

  /** `applyInput.now` (a step with nothing to commit, at once), failing the same way. */
  function applyNowOrEndTurn(entry: Live, input: Input): Transition | undefined {
    try {
      return applyInput.now(entry, input);
    } catch (error) {
      fail(entry, `the conversation could not be saved: ${errorMessage(error)}`);
      throw error;
    }
  }

  function execute(entry: Live, command: Command, prepared?: PreparedCall): void {
    switch (command.type) {
      case "call_llm":
        if (entry.calling === command.callID) {
          prepared?.drop();
          return;
        }
        entry.calling = command.callID;
        // Started here, not from a closure: no closure of this scope keeps the prepared call for
        // as long as the call streams (issue #19).
        track(
          entry.conversationID,
          "model call",
          callModel(entry, command, prepared).finally(() => {
            if (entry.calling === command.callID) entry.calling = null;
          }),
        );
        return;
      case "call_client":
        spawn(entry.conversationID, "tool call", () => callTool(entry, command));
        return;
      case "call_clients":
        // A batch of read-only calls: each is its own operation, run and answered on its own.
        for (const call of command.calls) {
          spawn(entry.conversationID, "tool call", () => callTool(entry, call));
        }
        return;
      case "final":
      case "failed":
      case "canceled":
        endTurn(entry, command);
        return;
      case "continue_llm":
      case "wait_input":
        return;
    }
  }

  function endTurn(entry: Live, outcome: TurnOutcome): void {
    if (outcome.type === "canceled") entry.stream?.stream.abort("canceled");
    const output = entry.output;
    entry.output = null;
    output?.end(outcome, entry.state.committed);
  }

  /** Ends the turn on the client with a failure the loop never saw (e.g. the store failed). */
  function fail(entry: Live, message: string): void {
    if (entry.retired) return;
    entry.retired = true;
    entry.stream?.stream.abort("failed");
    live.drop(entry.conversationID);
    const failure = toErrorMessage({
      api: "cursor-byok",
      provider: "cursor-byok",
      model: entry.state.committed.settings?.model ?? "",
      reason: "error",
      errorMessage: message,
      timestamp: now(),
    });
    endTurn(entry, { type: "failed", message: failure });
  }

  const routeStart = createRouteStart({
    store,
    queue,
    live,
    mayCopy: options.mayCopy ?? (() => Promise.resolve(true)),
  });

  /**
   * A rewind left the source's turn running (the client went back from inside it): it is canceled
   * as a new message cancels it ("superseded by a new message").
   */
  const supersede = (conversationID: string, input: StartInput): Promise<unknown> =>
    queue.run(conversationID, async () => {
      const entry = await live.load(conversationID);
      const cancel = toSupersedingCancel(entry.state.committed, input);
      if (cancel !== null) await applyOrEndTurn(entry, cancel, cancel.inputID);
    });

  /** `submit` on the conversation named, in its queue. */
  function submitTo(
    conversationID: string,
    input: ExternalInput,
    output: TurnOutput,
    submitOptions: SubmitOptions,
  ): Promise<SubmitResult> {
    return queue.run(conversationID, async (): Promise<SubmitResult> => {
      const entry = await live.load(conversationID);
      if (await store.findInputCommit(conversationID, input.inputID)) {
        return { type: "duplicate" };
      }
      if (input.type === "cancel") {
        const access = mayCancel(entry.output, output);
        if (access.type === "refused") return { type: "applied", rejected: access.reason };
        const step = await applyOrEndTurn(entry, input, input.inputID);
        return step === null ? { type: "duplicate" } : applied(step);
      }
      // A compaction asked for while a turn runs is refused by the loop, not superseding it.
      const cancel =
        input.type === "compact" || submitOptions.supersede === false
          ? null
          : toSupersedingCancel(entry.state.committed, input);
      if (cancel !== null) await applyOrEndTurn(entry, cancel, cancel.inputID);
      // A refused input (a summarize while a turn runs) leaves the turn with the output it had.
      const carrier = entry.output;
      entry.output = output;
      const { requestID, clientState } = submitOptions;
      const step = await applyOrEndTurn(entry, input, input.inputID, (started) =>
        requestID === undefined
          ? []
          : [
              {
                type: "request_stream",
                requestID,
                turnID: started.state.committed.turnID,
                ...(clientState === undefined ? {} : { clientState }),
              },
            ],
      );
      if (step?.rejected) entry.output = carrier;
      return step === null ? { type: "duplicate" } : applied(step);
    });
  }

  return {
    submit(conversationID, input, output, submitOptions: SubmitOptions = {}) {
      const { route, requestID } = submitOptions;
      if (
        route === undefined ||
        requestID === undefined ||
        (input.type !== "start" && input.type !== "compact")
      ) {
        return submitTo(conversationID, input, output, submitOptions);
      }
      return (async () => {
        const starts = input.type === "start";
        const routed = await routeStart.route(conversationID, route, requestID, starts);
        if (routed.rewind?.running === true && starts) await supersede(routed.rewind.from, input);
        const result = await submitTo(routed.conversationID, input, output, submitOptions);
        if (result.type === "duplicate") {
          // A replay: its first attempt applied the rewind (and is remembered, or was followed by
          // newer starts that must stay remembered); reported as a replay, not again. A fork or
          // an import is reported only by the attempt that committed the copy (route-start.ts),
          // which is this one even when a concurrent attempt of the same request applied the
          // start: reported, so the copy is logged once (review-fork #8).
          const { conversationID: to } = routed;
          return {
            ...result,
            routed: routed.rewind === undefined ? routed : { conversationID: to, reason: "replay" },
          };
        }
        if (starts) routeStart.remember(conversationID, routed.conversationID);
        return { ...result, routed };
      })();
    },

    resume(conversationID, output, options = {}) {
      return queue.run(conversationID, async () => {
        const entry = await live.load(conversationID);
        const state = entry.state.committed;
        const carrier = entry.output;
        const access = mayResume(state, carrier, output, {
          ...(options.turnID === undefined ? {} : { turnID: options.turnID }),
          carrierDetached: carrier?.isDetached?.() === true,
        });
        if (access.type === "refused") return false;
        const command = toResumeCommand(state);
        if (command === null) return false;
        const { requestID, clientState } = options;
        if (requestID !== undefined) {
          // Bound before anything is continued, so a restart from here on finds this stream.
          const bound = await store.bindRequestStream({
            conversationID,
            requestID,
            turnID: state.turnID,
            expectedVersion: entry.version,
            ...(clientState === undefined ? {} : { clientState }),
          });
          if (bound.type === "conflict") {
            // Another process committed to the conversation: it runs the turn, not this stream.
            await live.reload(entry);
            return false;
          }
        }
        entry.output = output;
        // The output learns which turn it carries (the client's id for it) before any of it.
        output.resumed?.(state, access.type === "take_over" ? (carrier ?? undefined) : undefined);
        // The carrier nobody read ends without ending the turn; its tool calls' waits fail, and
        // the calls are asked again below on `output` (tool-call.ts waits for the old attempt).
        if (access.type === "take_over") carrier?.release?.("another stream resumed the turn");
        // A call already running on this output is not started twice (`callTool` skips it too);
        // a model call goes on, publishing to `output` from now on.
        const asked = (operationID: string): boolean =>
          entry.tools.get(operationID)?.output === output;
        const busy =
          command.type === "call_llm"
            ? entry.calling === command.callID
            : command.type === "call_client"
              ? asked(command.operationID)
              : command.calls.every((call) => asked(call.operationID));
        if (!busy) execute(entry, command);
        return true;
      });
    },

    async findStream(requestID) {
      const bound = await store.findRequestStream(requestID);
      if (bound === null) return null;
      // A binding saved without a turn has no turn to match, so nothing to resume.
      return {
        conversationID: bound.conversationID,
        turnID: bound.turnID ?? "",
        clientState: bound.clientState,
      };
    },

    async follow(conversationID, hint, requestID) {
      return (await routeStart.route(conversationID, hint, requestID, false)).conversationID;
    },

    detach(conversationID, output) {
      const entry = live.get(conversationID);
      if (entry?.output === output) entry.output = null;
    },

    async inspect(conversationID, inspectOptions = {}) {
      return queue.run(conversationID, async () => {
        const cached = live.get(conversationID);
        if (cached !== undefined) return cached.state;
        if (inspectOptions.liveOnly === true) return null;
        const loaded = await store.load(conversationID);
        return loaded === null ? null : { committed: loaded.state, pending: null };
      });
    },

    async shutdown() {
      stopping = true;
      for (const entry of live.values()) entry.stream?.stream.abort("server shutting down");
      while (background.size > 0) await Promise.allSettled([...background]);
    },
  };
}

function applied(step: Transition): SubmitResult {
  return { type: "applied", rejected: step.rejected?.reason ?? null };
}
