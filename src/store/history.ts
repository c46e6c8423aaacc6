/**
 * History in the store (docs/design.md §7): one row per message holding its canonical bytes, its
 * hash and the chain hash up to it; the rest of the state is one JSON text.
 *
 * A commit costs O(new messages): it hashes only the messages it appends, chains them onto the
 * stored chain hash and requires the result to equal the state's own `hashes`. It also re-checks
 * the last stored message of the state against the stored hash. Older messages are not re-hashed
 * on every commit (that would make a commit O(history)); they cannot reach the database anyway,
 * since stored rows are never rewritten, and a load always returns the stored bytes.
 *
 * A load re-hashes every stored message and its chain, so damaged bytes are reported instead of
 * being sent to a model.
 */

import { errorMessage } from "../errors/error-message.ts";
import { toCanonicalJSON, toCanonicalJSONOnce } from "../loop/canonical-json.ts";
import {
  chainHash,
  EMPTY_CHAIN_HASH,
  hashMessageBytes,
  toMessageBytes,
} from "../loop/history-hash.ts";
import type { ConversationState, Message } from "../loop/types.ts";
import { StoreError } from "./errors.ts";
import { fromJSONText } from "./json-text.ts";
import type { ConversationHead, ConversationRow, MessageRow } from "./tables.ts";

export const EMPTY_HEAD: ConversationHead = {
  version: 0,
  messageCount: 0,
  chainHash: EMPTY_CHAIN_HASH,
  lastMessageHash: "",
};

/** Hashes of message objects this store has stored or loaded, so a tail check is a lookup. */
export type MessageHashCache = WeakMap<object, string>;

const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * The rows to append for `state`, given what is stored. Throws `chain_mismatch` when the state's
 * history is not the stored history plus new messages.
 */
export function toAppendedRows(
  head: ConversationHead,
  state: ConversationState,
  cache: MessageHashCache,
  location: string,
): MessageRow[] {
  const stored = head.messageCount;
  const messages = state.messages;
  const mismatch = (detail: string): StoreError =>
    new StoreError(
      "chain_mismatch",
      location,
      `Conversation ${state.conversationID} in ${location}: ${detail}. Nothing was written; ` +
        "reload the conversation and apply the input again.",
    );
  if (messages.length < stored) {
    throw mismatch(
      `the state has ${messages.length} messages but ${stored} are stored (history never shrinks)`,
    );
  }
  const lastStored = stored > 0 ? messages[stored - 1] : undefined;
  if (lastStored !== undefined && toMessageHash(lastStored, cache) !== head.lastMessageHash) {
    throw mismatch(`message ${stored - 1} of the state differs from the stored one`);
  }
  const rows: MessageRow[] = [];
  let chain = head.chainHash;
  let last = head.lastMessageHash;
  for (let seq = stored; seq < messages.length; seq += 1) {
    const message = messages[seq] as Message;
    const bytes = toBytes(message, seq, state.conversationID, location);
    const hash = hashMessageBytes(bytes);
    cache.set(message, hash);
    chain = chainHash(chain, hash);
    last = hash;
    rows.push({ seq, json: decoder.decode(bytes), hash, chainHash: chain });
  }
  if (chain !== state.hashes.chainHash || last !== state.hashes.lastMessageHash) {
    throw mismatch(
      "the state's history hashes do not equal the stored chain extended by its new messages",
    );
  }
  return rows;
}

/**
 * The state's text without its messages; `messages` keeps its key position as `[]`. `toText` is
 * the canonical JSON writer (with the caller's error); the text is the same as
 * `toText({ ...state, messages: [] })`, but each frozen tool definition is written once
 * (`toCanonicalJSONOnce`): the catalogue's are shared by every turn and are most of the text
 * (issue #19). Anything that is not plain JSON goes through `toText`, for its error.
 */
export function toStateJSON(state: ConversationState, toText: (value: unknown) => string): string {
  return toStateText(state) ?? toText({ ...state, messages: [] });
}

function toStateText(state: ConversationState): string | null {
  if (Object.getPrototypeOf(state) !== Object.prototype || !Object.hasOwn(state, "messages")) {
    return null;
  }
  try {
    let text = "{";
    for (const key of Object.keys(state)) {
      const member: unknown = state[key as keyof ConversationState];
      if (member === undefined) continue;
      const value =
        key === "messages"
          ? "[]"
          : key === "settings" && isPlainObject(member)
            ? toSettingsText(member)
            : toCanonicalJSON(member);
      text += `${text === "{" ? "" : ","}${JSON.stringify(key)}:${value}`;
    }
    return `${text}}`;
  } catch {
    return null;
  }
}

function toSettingsText(settings: object): string {
  let text = "{";
  for (const [key, member] of Object.entries(settings)) {
    if (member === undefined) continue;
    const value =
      key === "systemPrompt" && typeof member === "string"
        ? toPromptText(member)
        : key === "tools" && Array.isArray(member)
          ? toToolsText(member)
          : toCanonicalJSON(member);
    text += `${text === "{" ? "" : ","}${JSON.stringify(key)}:${value}`;
  }
  return `${text}}`;
}

/**
 * The text of a tool list, each frozen definition written once (`toCanonicalJSONOnce`). A frozen
 * list of frozen definitions — the catalogue's, one per mode and web offer, shared by every turn
 * (transport/cursor/tools/catalogue.ts) — is written once whole: no 15 KB text joined again at
 * every commit (issue #19). Whoever freezes a definition freezes its members too (the contract of
 * `toCanonicalJSONOnce`), so neither text can change.
 *
 * Contract for callers: only lists shared process-wide are frozen. The text (15–30 KB) is kept as
 * long as the list is; a frozen list made per conversation (e.g. one with MCP tools) would keep
 * its own copy for the conversation's life. Lists not frozen are joined at every commit and keep
 * nothing.
 */
function toToolsText(tools: readonly unknown[]): string {
  let text = toolsTexts.get(tools);
  if (text === undefined) {
    text = `[${Array.from(tools, (tool: unknown) => (isPlainObject(tool) ? toCanonicalJSONOnce(tool) : toCanonicalJSON(tool))).join(",")}]`;
    if (Object.isFrozen(tools) && tools.every(isFrozenObject)) toolsTexts.set(tools, text);
  }
  return text;
}

const toolsTexts = new WeakMap<readonly unknown[], string>();

function isFrozenObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && Object.isFrozen(value);
}

/**
 * The JSON text of the system prompts written last: one fixed 2–6 KB text per agent mode, the same
 * in every commit (issue #19). At most `PROMPT_TEXTS` are kept.
 */
function toPromptText(prompt: string): string {
  let text = promptTexts.get(prompt);
  if (text === undefined) {
    text = JSON.stringify(prompt);
    if (promptTexts.size >= PROMPT_TEXTS) promptTexts.clear();
    promptTexts.set(prompt, text);
  }
  return text;
}

const PROMPT_TEXTS = 8;
const promptTexts = new Map<string, string>();

function isPlainObject(value: unknown): value is object {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * The committed state from its stored rows, after checking every message against its hash and
 * the chain. Throws `corrupt_database` when the rows disagree.
 */
export function fromStoredRows(
  row: ConversationRow,
  rows: readonly MessageRow[],
  cache: MessageHashCache,
  location: string,
): ConversationState {
  const damaged = (detail: string): StoreError =>
    new StoreError(
      "corrupt_database",
      location,
      `Conversation ${row.conversationID} in ${location} is damaged: ${detail}. Nothing was ` +
        "changed. Stop cursor-byok, keep a copy of the file and restore it from a backup; " +
        "other conversations are not affected.",
    );
  if (rows.length !== row.messageCount) {
    throw damaged(
      `${rows.length} messages are stored, the conversation expects ${row.messageCount}`,
    );
  }
  const messages: Message[] = [];
  let chain = EMPTY_HEAD.chainHash;
  let last = "";
  for (const [index, stored] of rows.entries()) {
    if (stored.seq !== index) throw damaged(`message ${index} is missing`);
    const hash = hashMessageBytes(Buffer.from(stored.json, "utf8"));
    chain = chainHash(chain, hash);
    if (hash !== stored.hash || chain !== stored.chainHash) {
      throw damaged(`message ${index} does not match its stored hash`);
    }
    const message = parse(stored.json, () => damaged(`message ${index} is not valid JSON`));
    if (typeof message !== "object" || message === null) {
      throw damaged(`message ${index} is not a message`);
    }
    cache.set(message, hash);
    messages.push(message as Message);
    last = hash;
  }
  if (chain !== row.chainHash || last !== row.lastMessageHash) {
    throw damaged("its history hash does not match its messages");
  }
  const state = parse(row.stateJSON, () => damaged("its state is not valid JSON"));
  const loaded = { ...(state as ConversationState), messages };
  if (loaded.hashes?.chainHash !== chain || loaded.conversationID !== row.conversationID) {
    throw damaged("its state does not match its messages");
  }
  return loaded;
}

function toMessageHash(message: Message, cache: MessageHashCache): string {
  const known = cache.get(message);
  if (known !== undefined) return known;
  const hash = hashMessageBytes(toMessageBytes(message));
  cache.set(message, hash);
  return hash;
}

function toBytes(
  message: Message,
  seq: number,
  conversationID: string,
  location: string,
): Uint8Array {
  try {
    return toMessageBytes(message);
  } catch (error) {
    throw new StoreError(
      "invalid_argument",
      location,
      `Cannot write to ${location}: message ${seq} of conversation ${conversationID} is not ` +
        `plain JSON (${errorMessage(error)}). Nothing was ` +
        "written.",
      error,
    );
  }
}

function parse(text: string, onError: () => StoreError): unknown {
  try {
    return fromJSONText(text);
  } catch {
    throw onError();
  }
}
