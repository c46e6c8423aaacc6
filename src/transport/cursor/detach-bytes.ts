/**
 * A decoded message with its bytes copied out of the buffer it was decoded from. protobuf-es
 * decodes every `bytes` field (and every unknown field) as a view into the decoded buffer, so
 * keeping any part of a run request — the client's checkpoint, the user message — keeps the whole
 * request body alive: with an IDE's checkpoint (up to 512 KiB) and request context (tens to
 * hundreds of KiB) that is the size of the request per open stream (issue #19). Copying only the
 * bytes, into one new buffer per call, costs an allocation and a memcpy of them; `clone` from
 * protobuf-es would also rebuild the whole message through reflection.
 */

/**
 * `message` with every `Uint8Array` in it (fields, lists, maps, oneof values, nested messages,
 * `$unknown` data) that is a view into a larger buffer replaced by a copy in one fresh buffer;
 * the same value when it holds no such view (e.g. a message built here, not decoded), or when its
 * views share one buffer they cover at least 7/8 of (a request that is nearly all checkpoint).
 * Objects are copied only on the way to a view (their prototype kept); the input is not changed.
 * For plain protobuf-es messages: objects, arrays, scalars, bigints, `Uint8Array`s; no cycles.
 */
export function detachBytes<T>(message: T): T {
  const found: Found = { buffer: undefined };
  const total = measure(message, found);
  const { buffer } = found;
  if (total < 0) return message;
  // Views that are nearly all of the one buffer they share keep little else alive: not worth a
  // new buffer (its allocation, not the copy, is most of the cost: ≈100 µs for 400 KiB).
  if (buffer !== undefined && buffer !== null && total >= buffer.byteLength * KEPT_ANYWAY) {
    return message;
  }
  const pool = new Uint8Array(total);
  let offset = 0;
  const copy = (value: unknown): unknown => {
    if (value instanceof Uint8Array) {
      if (isWhole(value)) return value;
      const view = pool.subarray(offset, offset + value.length);
      view.set(value);
      offset += value.length;
      return view;
    }
    if (typeof value !== "object" || value === null) return value;
    if (Array.isArray(value)) {
      let out: unknown[] | undefined;
      for (let i = 0; i < value.length; i += 1) {
        const item: unknown = value[i];
        const copied = copy(item);
        if (copied !== item) {
          out ??= value.slice();
          out[i] = copied;
        }
      }
      return out ?? value;
    }
    let out: Record<string, unknown> | undefined;
    const fields = value as Record<string, unknown>;
    for (const key of Object.keys(fields)) {
      const field = fields[key];
      const copied = copy(field);
      if (copied !== field) {
        out ??= Object.assign(
          Object.create(Object.getPrototypeOf(value)) as Record<string, unknown>,
          fields,
        );
        out[key] = copied;
      }
    }
    return out ?? value;
  };
  return copy(message) as T;
}

/** The one buffer of all the views `measure` found; null: several; undefined: none yet. */
interface Found {
  buffer: ArrayBufferLike | null | undefined;
}

/** Views covering at least this share of their one buffer are kept as they are. */
const KEPT_ANYWAY = 7 / 8;

/** A `Uint8Array` that is all of its buffer keeps nothing else alive. */
function isWhole(value: Uint8Array): boolean {
  return value.byteOffset === 0 && value.byteLength === value.buffer.byteLength;
}

/** Bytes in the views under `value` to copy; -1 when there is none (not even an empty one). */
function measure(value: unknown, found: Found): number {
  if (value instanceof Uint8Array) {
    if (isWhole(value)) return -1;
    if (found.buffer === undefined) found.buffer = value.buffer;
    else if (found.buffer !== value.buffer) found.buffer = null;
    return value.length;
  }
  if (typeof value !== "object" || value === null) return -1;
  let total = -1;
  if (Array.isArray(value)) {
    for (const item of value) {
      const size = measure(item, found);
      if (size >= 0) total = Math.max(total, 0) + size;
    }
    return total;
  }
  const fields = value as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    const size = measure(fields[key], found);
    if (size >= 0) total = Math.max(total, 0) + size;
  }
  return total;
}
