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
  // Fast path (issue #19: every commit serialises the state): check the value without building
  // anything, then let `JSON.stringify` write it, which for a value that passes the check writes
  // exactly what `write` below would. Only a value that fails goes through `write`, for the path
  // in its error.
  if (isPlainJSON(value)) return JSON.stringify(value);
  return write(value, "$");
}

/**
 * `toCanonicalJSON` of a frozen object, made once per object and reused: Cursor's tool
 * definitions, frozen (deeply) by the catalogue and shared by every turn, are most of the 20 KB
 * state every commit writes (issue #19). Whoever freezes an object for this freezes its members
 * too. An object that is not frozen is written each time, so the cache holds only the texts of
 * shared, long-lived values, never one per conversation. A value that is not plain JSON throws as
 * `toCanonicalJSON` does, and is not remembered.
 */
export function toCanonicalJSONOnce(value: object): string {
  if (!Object.isFrozen(value)) return toCanonicalJSON(value);
  let text = made.get(value);
  if (text === undefined) {
    text = toCanonicalJSON(value);
    made.set(value, text);
  }
  return text;
}

const made = new WeakMap<object, string>();

/** Whether `write` would accept `value` (and so `JSON.stringify` writes the same text). */
function isPlainJSON(value: unknown): boolean {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(value);
    case "object": {
      if (value === null) return true;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i];
          if (item === undefined || !isPlainJSON(item)) return false;
        }
        return true;
      }
      const prototype = Object.getPrototypeOf(value);
      if (prototype !== Object.prototype && prototype !== null) return false;
      for (const key of Object.keys(value)) {
        const member: unknown = (value as Record<string, unknown>)[key];
        if (member !== undefined && !isPlainJSON(member)) return false;
      }
      return true;
    }
    default:
      return false;
  }
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
