/**
 * The one JSON serialisation of loop values (messages, states, commands), used for hashing,
 * storage and byte-level comparisons.
 *
 * It is `JSON.stringify` without whitespace, made strict: non-finite numbers, `undefined` inside
 * arrays, and values JSON cannot represent (functions, symbols, bigints, class instances such as
 * `Date` or `Map`) are rejected instead of silently changed; `undefined` object members are
 * omitted. Key order is kept as built, not sorted: it is part of the data (a tool call's
 * arguments are replayed to the provider in the order the model wrote them), every value is built
 * or parsed deterministically, and `JSON.parse` preserves it, so a stored message re-serialises
 * to the same bytes.
 */
export function toCanonicalJSON(value: unknown): string {
  return write(value, "$");
}

function write(value: unknown, path: string): string {
  switch (typeof value) {
    case "string":
    case "boolean":
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`canonical JSON: ${path} is not finite`);
      return JSON.stringify(value);
    case "object": {
      if (value === null) return "null";
      if (Array.isArray(value)) {
        return `[${value.map((item, i) => write(item, `${path}[${i}]`)).join(",")}]`;
      }
      const prototype = Object.getPrototypeOf(value);
      if (prototype !== Object.prototype && prototype !== null) {
        throw new TypeError(`canonical JSON: ${path} is not a plain object`);
      }
      const members: string[] = [];
      for (const [key, member] of Object.entries(value)) {
        if (member === undefined) continue;
        members.push(`${JSON.stringify(key)}:${write(member, `${path}.${key}`)}`);
      }
      return `{${members.join(",")}}`;
    }
    default:
      throw new TypeError(`canonical JSON: ${path} has unsupported type ${typeof value}`);
  }
}
