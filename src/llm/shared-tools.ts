/**
 * One copy of a provider body's tool list for every call that sends the same tools (issue #19,
 * heap per open stream).
 *
 * pi-ai converts the request's tools into the provider's shape in every call (an object or two
 * per tool; the schemas themselves are ours and shared), and keeps the body it built for as long
 * as the call streams. Every conversation offers the same tools, so each open stream held its own
 * equal copy (≈ 1.5 KiB with the built-in tools, more with MCP tools). `shareTools` hands back a
 * body whose `tools` is the first such list seen: equal as JSON, so the bytes sent do not change.
 *
 * Equal means what `JSON.stringify` writes is the same: the same keys in the same order and
 * equal primitives, compared recursively through plain objects and arrays (one `===` per shared
 * schema, which is the common case). Anything else (a class instance, a `toJSON`) is equal only
 * to itself. The shared lists are never modified here, and nothing in pi-ai or the SDKs modifies a
 * body after `onPayload`.
 */

/** Most recently used first; a server has one tool list per configuration, rarely more. */
const shared: unknown[][] = [];
const MAX_SHARED = 16;

/**
 * `payload` itself, or a copy with the same members in the same order whose `tools` is an equal
 * list seen before (which this one becomes, when none was).
 */
export function shareTools(payload: unknown): unknown {
  if (!isPlainObject(payload)) return payload;
  const tools = (payload as Record<string, unknown>).tools;
  if (!Array.isArray(tools) || tools.length === 0) return payload;
  const index = shared.findIndex((list) => sameJson(list, tools));
  if (index === -1) {
    shared.unshift(tools);
    if (shared.length > MAX_SHARED) shared.pop();
    return payload;
  }
  const list = shared[index] as unknown[];
  if (index > 0) {
    shared.splice(index, 1);
    shared.unshift(list);
  }
  return list === tools ? payload : { ...payload, tools: list };
}

/** Whether `JSON.stringify` writes the same text for both (see the module comment). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (!isPlainObject(a) || !isPlainObject(b)) return false;
  const keys = Object.keys(a);
  const others = Object.keys(b);
  if (keys.length !== others.length) return false;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    if (key !== others[i]) return false;
    if (!sameJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) {
      return false;
    }
  }
  return true;
}

function isPlainObject(value: unknown): value is object {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return (prototype === Object.prototype || prototype === null) && !("toJSON" in value);
}
