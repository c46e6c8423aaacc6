/**
 * Model routing for one conversation (README "Model routing"): which configured model a call
 * goes to, and whether a failed call moves to a fallback.
 *
 * - A turn's candidates are its model then that model's fallbacks (`TurnSettings.fallbacks`),
 *   in configuration order.
 * - A call goes to the conversation's sticky model: the last model that produced a token for it,
 *   while the user still asks for the same model; otherwise to the model asked for. Switching
 *   models throws the provider's prompt cache away, so a conversation stays where it works.
 * - A call that fails before its first token (no content block opened) for a reason another
 *   model may not share (`FAILOVER_KINDS`) is repeated on the next candidate not yet tried for
 *   this request; a failure after the first token, or of another kind, ends the turn as before.
 * - The sticky model is recorded when a call's first tokens are committed: with its `done`, or
 *   with the failure or cancel that cut it short. It is kept in state only while it differs from
 *   the model asked for (`route`), so a conversation that never failed over has no route at all.
 */
import type {
  ConversationState,
  FailureKind,
  LLMCall,
  PendingResponse,
  TurnSettings,
} from "./types.ts";

/** Failures of one model or provider that another model may not share. */
export const FAILOVER_KINDS: ReadonlySet<FailureKind> = new Set([
  "rate_limited",
  "overloaded",
  "server_error",
  "connection",
  "cooling_down",
]);

/** The turn's model, then its fallbacks; each once. */
export function toCandidates(settings: Pick<TurnSettings, "model" | "fallbacks">): string[] {
  return [...new Set([settings.model, ...(settings.fallbacks ?? [])])];
}

/** The model the next call of the turn goes to. */
export function chooseModel(state: ConversationState): string {
  const settings = state.settings;
  if (settings === null) return "";
  const route = state.route;
  if (
    route !== undefined &&
    route.requested === settings.model &&
    toCandidates(settings).includes(route.model)
  ) {
    return route.model;
  }
  return settings.model;
}

/** The model of call `call` (recorded on the call when it is not the turn's model). */
export function callModel(state: ConversationState, call: LLMCall | null): string {
  return call?.model ?? state.settings?.model ?? "";
}

/**
 * The next model to try after the current call failed before its first token, or null when the
 * failure ends the turn: a kind another model would share, tokens already streamed, or no
 * candidate left.
 */
export function toFailoverModel(
  state: ConversationState,
  pending: PendingResponse | null,
  kind: FailureKind | undefined,
): string | null {
  const settings = state.settings;
  const call = state.call;
  if (settings === null || call === null || kind === undefined || !FAILOVER_KINDS.has(kind)) {
    return null;
  }
  if (hasTokens(pending) || !hasFallbackLeft(state)) return null;
  const tried = new Set([...(call.tried ?? []), callModel(state, call)]);
  return toCandidates(settings).find((model) => !tried.has(model)) ?? null;
}

/** True when the current call, failing before its first token, would move to another model. */
export function hasFallbackLeft(state: ConversationState): boolean {
  const { settings, call } = state;
  // A summary call (compaction.ts) goes to the compaction's model: no routing.
  if (settings === null || call === null || call.summary !== undefined) return false;
  const tried = new Set([...(call.tried ?? []), callModel(state, call)]);
  return toCandidates(settings).some((model) => !tried.has(model));
}

/** True once the call's response has a content block: its first token arrived. */
export function hasTokens(pending: PendingResponse | null): boolean {
  return pending?.blocks.some((block) => block !== null) === true;
}

/**
 * `state` with `model` as its sticky model: recorded as the route when it is not the model
 * asked for, and the route dropped when it is.
 */
export function withStickyModel(state: ConversationState, model: string): ConversationState {
  const requested = state.settings?.model ?? "";
  const { route: _dropped, ...rest } = state;
  if (model === requested || model === "") return rest;
  return { ...rest, route: { requested, model } };
}
