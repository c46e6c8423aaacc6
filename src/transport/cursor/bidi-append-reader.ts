/**
 * A `BidiAppendRequest` body read chunk by chunk, its hex `data` decoded to the message's bytes as
 * the chunks arrive (docs/protocol.md §1.4). Clients send the message as lowercase hex in `data`:
 * every turn start after the first carries the client's checkpoint (up to 512 KiB,
 * `MAX_CHECKPOINT_BYTES`), i.e. up to 1 MB of hex in one append. Decoding the body whole made that
 * hex a JS string (protobuf's UTF-8 decode), checked it and decoded it again (`Buffer.from(…,
 * "hex")`), after `Buffer.concat` of the body: ≈1 ms per 300 KB message before the model call
 * (issue #19). Here no string is made, the body is not joined, and the decoding runs between the
 * socket's reads, while the rest of the body is still on its way.
 *
 * Only the common shape is read this way: `data` first (as protobuf encoders write fields, by
 * number), once, non-empty, pairs of hex digits (either case, as `Buffer.from(…, "hex")` reads
 * them), and the fields after it a valid message without another `data`. For anything else
 * `end` gives back the whole body, which the caller decodes as before (bidi-append.ts), so its
 * result and its errors are the same as they were, byte for byte. When the common shape is read,
 * the request it gives is the body's with `data` left empty and the decoded bytes beside it:
 * `fromBidiAppendRequest(request, limits, message)` is then what `fromBidiAppendRequest` of the
 * whole body's request is (bidi-append-reader.test.ts compares them).
 */
import { fromBinary } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { DEFAULT_DECODE_LIMITS } from "./bidi-append.ts";
import { type BidiAppendRequest, BidiAppendRequestSchema } from "./gen/aiserver/v1/bidi_pb.js";

/** `BidiAppendRequest.data` (field 1, length-delimited): its tag is this one byte. */
const DATA_TAG = (1 << 3) | 2;
const DATA_FIELD = 1;

/** A varint of a length below 2^35 has at most 5 bytes; more is never the common shape. */
const MAX_LENGTH_BYTES = 5;

/**
 * Digits are decoded by Node (`Buffer#write(…, "hex")`, ≈2× a JS loop, and without its warm-up)
 * from a latin1 string of at most this many of them: a small string, made and dropped at once.
 */
const PIECE_BYTES = 64 * 1024;

/** The first size of the message's buffer (bytes), unless the message is smaller. */
const MIN_CAPACITY = 64 * 1024;

/** A hex digit's value by character code; -1 for every other byte (a digit split by a chunk). */
const HEX_VALUE = new Int8Array(256).fill(-1);
for (let digit = 0; digit < 10; digit += 1) HEX_VALUE[0x30 + digit] = digit;
for (let digit = 0; digit < 6; digit += 1) {
  HEX_VALUE[0x61 + digit] = 10 + digit;
  HEX_VALUE[0x41 + digit] = 10 + digit;
}

export type ReadBidiAppend =
  /** The common shape: `request` has an empty `data`; `message` is what its hex encoded. */
  | { readonly type: "decoded"; readonly request: BidiAppendRequest; readonly message: Uint8Array }
  /** Anything else: the whole body, to be decoded as it is. */
  | { readonly type: "body"; readonly body: Uint8Array };

export interface BidiAppendReader {
  /** The next chunk of the body. It is kept (not copied) until `end`. */
  push(chunk: Uint8Array): void;
  /** All chunks read so far, joined (a body handed elsewhere unread). */
  joined(): Uint8Array;
  /** The body has ended. */
  end(): ReadBidiAppend;
}

/**
 * `maxMessageBytes`: a `data` of more than twice as many hex digits is not decoded here (the
 * decoder refuses it as `too_large`, bidi-append.ts `fromHex`).
 */
export function createBidiAppendReader(
  maxMessageBytes: number = DEFAULT_DECODE_LIMITS.maxMessageBytes,
): BidiAppendReader {
  const chunks: Uint8Array[] = [];
  let size = 0;
  /** head: reading `data`'s tag and length; data: its digits; tail: the fields after it. */
  let state: "head" | "data" | "tail" | "other" = "head";
  let head = 0;
  let headBytes = 0;
  let length = 0;
  /** The message's size, as `data`'s length says. */
  let total = 0;
  let message = new Uint8Array(0);
  /** Bytes of `message` decoded so far. */
  let written = 0;
  /** A high digit whose low digit is in the next chunk; -1 if none. */
  let pending = -1;
  /** Where the tail starts: chunk index and offset. */
  let tailChunk = 0;
  let tailOffset = 0;

  /** `message` as a Buffer (the same memory), to write the decoded digits into. */
  let target = Buffer.alloc(0);

  /**
   * Room for `count` more bytes. The buffer grows with what has arrived (up to 4× it, at least
   * `MIN_CAPACITY`), not to what `data`'s length claims: a body that announces 30 MB and sends
   * ten bytes costs at most `MIN_CAPACITY`, not 15 MB (joining the body first cost only its
   * bytes).
   */
  const reserve = (count: number): void => {
    if (written + count <= message.length) return;
    const grown = new Uint8Array(
      Math.min(total, Math.max(MIN_CAPACITY, 4 * (written + count), 2 * message.length)),
    );
    grown.set(message.subarray(0, written));
    message = grown;
    target = Buffer.from(grown.buffer, grown.byteOffset, grown.length);
  };

  /** Decodes `chunk[from, to)`, digits of `data`; false if one is not a hex digit. */
  const decode = (chunk: Uint8Array, from: number, to: number): boolean => {
    const completes = pending >= 0 && to > from ? 1 : 0;
    reserve(completes + ((to - from - completes) >> 1));
    let at = from;
    if (pending >= 0) {
      const low = HEX_VALUE[chunk[at] as number] as number;
      if (low < 0) return false;
      target[written++] = (pending << 4) | low;
      pending = -1;
      at += 1;
    }
    const end = at + ((to - at) & ~1);
    const text = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
    while (at < end) {
      const stop = Math.min(end, at + PIECE_BYTES);
      // Node's hex decoding stops at the first byte that is not a hex digit (of either case):
      // every byte of a latin1 string is its own character, so nothing else can pass.
      const count = target.write(text.toString("latin1", at, stop), written, "hex");
      if (count * 2 !== stop - at) return false;
      written += count;
      at = stop;
    }
    if (at < to) {
      pending = HEX_VALUE[chunk[at] as number] as number;
      if (pending < 0) return false;
    }
    return true;
  };

  const read = (chunk: Uint8Array): void => {
    let at = 0;
    while (state === "head" && at < chunk.length) {
      const byte = chunk[at++] as number;
      if (head === 0) {
        if (byte !== DATA_TAG) {
          state = "other";
          return;
        }
        head = 1;
        continue;
      }
      length += (byte & 0x7f) * 2 ** (7 * headBytes);
      headBytes += 1;
      if (byte & 0x80) {
        if (headBytes === MAX_LENGTH_BYTES) state = "other";
        continue;
      }
      // Empty, odd or too long: not pairs of hex digits the decoder would take.
      if (length === 0 || length % 2 !== 0 || length > maxMessageBytes * 2) {
        state = "other";
        return;
      }
      total = length / 2;
      state = "data";
    }
    if (state === "data" && at < chunk.length) {
      const take = Math.min(length, chunk.length - at);
      if (!decode(chunk, at, at + take)) {
        state = "other";
        return;
      }
      length -= take;
      at += take;
      if (length === 0) {
        state = "tail";
        tailChunk = chunks.length - 1;
        tailOffset = at;
      }
    }
  };

  const joined = (): Uint8Array =>
    chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks, size);

  return {
    push(chunk) {
      chunks.push(chunk);
      size += chunk.length;
      if (state === "head" || state === "data") read(chunk);
    },
    joined,
    end() {
      if (state !== "tail" || written !== total) return { type: "body", body: joined() };
      const request = readTail(chunks, tailChunk, tailOffset);
      return request === null
        ? { type: "body", body: joined() }
        : { type: "decoded", request, message };
    },
  };
}

/** The fields after `data`, parsed; null unless they are valid and repeat no `data`. */
function readTail(
  chunks: readonly Uint8Array[],
  first: number,
  offset: number,
): BidiAppendRequest | null {
  const parts = chunks.slice(first);
  parts[0] = (parts[0] as Uint8Array).subarray(offset);
  const tail = parts.length === 1 ? (parts[0] as Uint8Array) : Buffer.concat(parts);
  try {
    const reader = new BinaryReader(tail);
    while (reader.pos < reader.len) {
      const [field, wireType] = reader.tag();
      // A later `data` would replace this one: the whole body decides.
      if (field === DATA_FIELD) return null;
      reader.skip(wireType, field);
    }
    return fromBinary(BidiAppendRequestSchema, tail);
  } catch {
    return null;
  }
}
