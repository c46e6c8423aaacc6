/**
 * Images stored once, by hash (#15): a message's JSON and every saved model request hold each
 * attached image's base64 again, so without this a conversation with a 1 MiB image and 40
 * model calls stores ~40 MiB. On write, every run of at least `MIN_RUN` base64 characters in a
 * message's JSON or a request body moves to the `images` table under the SHA-256 of its text
 * (inserted only when absent, in the same transaction as the row that refers to it); the row
 * keeps a reference. On read the text is put back exactly, before any hash is checked, so the
 * store's contract is unchanged: `load` verifies the original bytes, a saved request reads back
 * byte for byte (docs/design.md: exact model requests are kept).
 *
 * A stored text with references is `REFERENCED` followed by a JSON array alternating literal
 * text and image hashes (`[text, hash, text, …, text]`). JSON text never starts with U+0001 (a
 * raw control character is not valid JSON), so rows written before this (schema 6) read as they
 * are; a text of ours that starts with it is always stored in the array form, so no text is
 * ever mistaken for another.
 */
import { createHash } from "node:crypto";
import { StoreError } from "./errors.ts";
import type { Backend, LLMCallRow, MessageRow, Tables } from "./tables.ts";

/** Shorter runs stay inline: a reference (64 hex characters) would save little. */
export const MIN_RUN = 1024;
const REFERENCED = "\u0001";

export interface StoredText {
  readonly text: string;
  /** Hash → base64 text of every run the stored text refers to. */
  readonly images: ReadonlyMap<string, string>;
}

export function imageHash(data: string): string {
  return createHash("sha256").update(data, "utf8").digest("hex");
}

/** The text to store: long base64 runs replaced by references. */
export function toStoredText(text: string): StoredText {
  const images = new Map<string, string>();
  const parts: string[] = [];
  let last = 0;
  for (const [start, end] of base64Runs(text)) {
    const data = text.slice(start, end);
    const hash = imageHash(data);
    images.set(hash, data);
    parts.push(text.slice(last, start), hash);
    last = end;
  }
  if (parts.length === 0 && !text.startsWith(REFERENCED)) return { text, images };
  parts.push(text.slice(last));
  return { text: REFERENCED + JSON.stringify(parts), images };
}

/**
 * `[start, end)` of each run of at least `MIN_RUN` base64 characters (`A–Z a–z 0–9 + /`) with up
 * to two `=` after it. One pass over the text: a regular expression with `{1024,}` re-scans a
 * shorter run from each of its positions (seconds for a megabyte of 1000-character runs).
 */
function* base64Runs(text: string): Generator<[number, number]> {
  // Most texts (every saved model request) have none: tell that without visiting every character.
  if (!mayHaveRun(text)) return;
  let start = -1;
  for (let i = 0; i <= text.length; i++) {
    const code = i < text.length ? text.charCodeAt(i) : -1;
    if (isBase64(code)) {
      if (start < 0) start = i;
      continue;
    }
    if (start >= 0 && i - start >= MIN_RUN) {
      let end = i;
      while (end < text.length && end - i < 2 && text.charCodeAt(end) === EQUALS) end++;
      yield [start, end];
      i = end - 1;
    }
    start = -1;
  }
}

/**
 * False when `text` certainly has no run of `MIN_RUN` base64 characters: such a run covers a
 * position that is a multiple of `MIN_RUN`, so only the runs through those positions are
 * measured, each at most `MIN_RUN` characters either way (linear in the worst case, a few
 * characters per position for ordinary text; issue #19).
 */
function mayHaveRun(text: string): boolean {
  for (let at = 0; at < text.length; at += MIN_RUN) {
    if (!isBase64(text.charCodeAt(at))) continue;
    let start = at;
    while (start > 0 && at - start < MIN_RUN && isBase64(text.charCodeAt(start - 1))) start--;
    let end = at + 1;
    while (end < text.length && end - start < MIN_RUN && isBase64(text.charCodeAt(end))) end++;
    if (end - start >= MIN_RUN) return true;
  }
  return false;
}

const EQUALS = 0x3d;

function isBase64(code: number): boolean {
  return (
    (code >= 0x41 && code <= 0x5a) || // A–Z
    (code >= 0x61 && code <= 0x7a) || // a–z
    (code >= 0x30 && code <= 0x39) || // 0–9
    code === 0x2b || // +
    code === 0x2f // /
  );
}

/** The hashes a stored text refers to, in order; `[]` for a text stored as it is. */
export function referencedHashes(stored: string): string[] {
  if (!stored.startsWith(REFERENCED)) return [];
  return parseParts(stored).filter((_, index) => index % 2 === 1);
}

/** The original text of a stored one; `image` returns the verified base64 of a hash. */
export async function fromStoredText(
  stored: string,
  image: (hash: string) => Promise<string>,
): Promise<string> {
  if (!stored.startsWith(REFERENCED)) return stored;
  const parts = parseParts(stored);
  let text = "";
  for (const [index, part] of parts.entries()) {
    text += index % 2 === 1 ? await image(part) : part;
  }
  return text;
}

function parseParts(stored: string): string[] {
  const parts: unknown = JSON.parse(stored.slice(REFERENCED.length));
  if (
    !Array.isArray(parts) ||
    parts.length % 2 !== 1 ||
    !parts.every((part) => typeof part === "string")
  ) {
    throw new Error("not a list of text parts");
  }
  return parts;
}

/**
 * The backend with images stored once: the store logic (create-store.ts) runs on this, so the
 * SQLite, in-memory and PostgreSQL stores all get it through `insertImage`/`readImage`.
 */
export function withImagesByHash(backend: Backend): Backend {
  const { location } = backend;
  return {
    location,
    read: (work, options) => backend.read((tables) => work(imageTables(tables, location)), options),
    write: (work, options) =>
      backend.write((tables) => work(imageTables(tables, location)), options),
    close: () => backend.close(),
  };
}

function imageTables(tables: Tables, location: string): Tables {
  // Images read in this transaction, verified: a message and its requests share them.
  const read = new Map<string, string>();
  const image = async (hash: string): Promise<string> => {
    const known = read.get(hash);
    if (known !== undefined) return known;
    const data = await tables.readImage(hash);
    if (data === null || imageHash(data) !== hash) {
      throw new StoreError(
        "corrupt_database",
        location,
        `The image ${hash} in ${location} is ${data === null ? "missing" : "damaged"}; rows ` +
          "that refer to it cannot be read. Nothing was changed. Stop cursor-byok, keep a copy " +
          "of the database and restore it from a backup.",
      );
    }
    read.set(hash, data);
    return data;
  };
  const restore = async (stored: string, what: string): Promise<string> => {
    try {
      return await fromStoredText(stored, image);
    } catch (error) {
      if (error instanceof StoreError) throw error;
      throw new StoreError(
        "corrupt_database",
        location,
        `${what} in ${location} has a damaged image reference. Nothing was changed. Stop ` +
          "cursor-byok, keep a copy of the database and restore it from a backup.",
      );
    }
  };
  const store = async (text: string): Promise<string> => {
    const stored = toStoredText(text);
    for (const [hash, data] of stored.images) {
      if (!read.has(hash)) await tables.insertImage(hash, data);
      read.set(hash, data);
    }
    return stored.text;
  };
  const restoreMessages = async (
    conversationID: string,
    rows: MessageRow[],
  ): Promise<MessageRow[]> => {
    const restored: MessageRow[] = [];
    for (const row of rows) {
      const json = await restore(row.json, `Message ${row.seq} of ${conversationID}`);
      restored.push(json === row.json ? row : { ...row, json });
    }
    return restored;
  };
  const restoreCall = async (row: LLMCallRow): Promise<LLMCallRow> => {
    const request = await restore(row.request, `The request of model call ${row.callID}`);
    return request === row.request ? row : { ...row, request };
  };
  // The backend's other operations through the prototype: copying its ~60 members into a new
  // object for every transaction cost ≈17 µs, several transactions a turn (issue #19).
  const overrides: Partial<Tables> = {
    async readMessages(conversationID) {
      return restoreMessages(conversationID, await tables.readMessages(conversationID));
    },
    async readMessagesFrom(conversationID, fromSeq, limit) {
      return restoreMessages(
        conversationID,
        await tables.readMessagesFrom(conversationID, fromSeq, limit),
      );
    },
    async appendMessages(conversationID, rows) {
      const stored: MessageRow[] = [];
      for (const row of rows) stored.push({ ...row, json: await store(row.json) });
      await tables.appendMessages(conversationID, stored);
    },
    async readLLMCall(callID) {
      const row = await tables.readLLMCall(callID);
      return row === null ? null : restoreCall(row);
    },
    async insertLLMCall(row) {
      await tables.insertLLMCall({ ...row, request: await store(row.request) });
    },
    async listUnfinishedLLMCalls(conversationID) {
      const rows = await tables.listUnfinishedLLMCalls(conversationID);
      const restored: LLMCallRow[] = [];
      for (const row of rows) restored.push(await restoreCall(row));
      return restored;
    },
  };
  return Object.assign(Object.create(tables) as Tables, overrides);
}
