/**
 * History hashing (docs/design.md §7, §9).
 *
 * - `bytes(message)` is the UTF-8 of the message's canonical JSON (canonical-json.ts).
 * - `hash(message) = sha256(bytes(message))`.
 * - `chain[-1]` is 32 zero bytes; `chain[n] = sha256(chain[n-1] || hash(message n))`, over the
 *   raw 32-byte digests.
 *
 * `chain[n]` is the `messagesHash` of a request whose messages are the first n+1 messages, so
 * "request n-1 is a prefix of request n" is a comparison of two stored hashes.
 * Hashes are lowercase hex.
 */
import { createHash, hash } from "node:crypto";
import type { Message } from "../llm/types.ts";
import { toCanonicalJSON } from "./canonical-json.ts";
import type { HistoryHashes } from "./types.ts";

/** The chain hash of an empty history. */
export const EMPTY_CHAIN_HASH = "0".repeat(64);

export const EMPTY_HISTORY_HASHES: HistoryHashes = {
  chainHash: EMPTY_CHAIN_HASH,
  lastMessageHash: "",
};

/** The canonical bytes of one message. */
export function toMessageBytes(message: Message): Uint8Array {
  return Buffer.from(toCanonicalJSON(message), "utf8");
}

export function hashMessageBytes(bytes: Uint8Array): string {
  // One-shot: no `Hash` object per message (issue #19); the same digest.
  return hash("sha256", bytes, "hex");
}

export function hashMessage(message: Message): string {
  return hashMessageBytes(toMessageBytes(message));
}

/** chain[n] from chain[n-1] and hash(message n). */
export function chainHash(previousChainHash: string, messageHash: string): string {
  return createHash("sha256")
    .update(Buffer.from(previousChainHash, "hex"))
    .update(Buffer.from(messageHash, "hex"))
    .digest("hex");
}

/** The hashes after appending `messages` to a history whose hashes are `from`. */
export function appendHashes(from: HistoryHashes, messages: readonly Message[]): HistoryHashes {
  let hashes = from;
  for (const message of messages) {
    const messageHash = hashMessage(message);
    hashes = { chainHash: chainHash(hashes.chainHash, messageHash), lastMessageHash: messageHash };
  }
  return hashes;
}

/** The hashes of a whole history, computed from scratch. */
export function hashHistory(messages: readonly Message[]): HistoryHashes {
  return appendHashes(EMPTY_HISTORY_HASHES, messages);
}
