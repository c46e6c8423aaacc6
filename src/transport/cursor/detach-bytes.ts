/**
 * A decoded message with its bytes copied out of the buffer it was decoded from. protobuf-es
 * decodes every `bytes` field (and every unknown field) as a view into the decoded buffer, so
 * keeping any part of a run request — the client's checkpoint, the user message — keeps the whole
 * request body alive: with an IDE's checkpoint (up to 512 KiB) and request context (tens to
 * hundreds of KiB) that is the size of the request per open stream (issue #19). Copying only the
 * bytes, into one new buffer per call, costs a memcpy of them; `clone` from protobuf-es would
 * rebuild the whole message through reflection (≈120–260 µs for a 200–500 KiB checkpoint).
 */

/**
 * `message` with every `Uint8Array` in it (fields, lists, maps, oneof values, nested messages,
 * `$unknown` data) that is a view into a larger buffer replaced by a copy in one fresh buffer;
 * the same value when it holds no such view (e.g. a message built here, not decoded).
 * Objects are copied only on the way to a view (their prototype kept); the input is not changed.
 * For plain protobuf-es messages: objects, arrays, scalars, bigints, `Uint8Array`s; no cycles.
 */
export function detachBytes<T>(message: T): T {
  const total = measure(message);
  if (total < 0) return message;
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

/** A `Uint8Array` that is all of its buffer keeps nothing else alive. */
function isWhole(value: Uint8Array): boolean {
  return value.byteOffset === 0 && value.byteLength === value.buffer.byteLength;
}

/** Bytes in the views under `value` to copy; -1 when there is none (not even an empty one). */
function measure(value: unknown): number {
  if (value instanceof Uint8Array) return isWhole(value) ? -1 : value.length;
  if (typeof value !== "object" || value === null) return -1;
  let total = -1;
  if (Array.isArray(value)) {
    for (const item of value) {
      const size = measure(item);
      if (size >= 0) total = Math.max(total, 0) + size;
    }
    return total;
  }
  const fields = value as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    const size = measure(fields[key]);
    if (size >= 0) total = Math.max(total, 0) + size;
  }
  return total;
}
