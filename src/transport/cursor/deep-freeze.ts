/**
 * Freezes `value` and every object reachable from it, and returns it: for values made once and
 * shared (a tool list, a streaming tool call's UI form whose bytes are cached by identity), so
 * that a later write throws instead of silently changing what others hold. Typed arrays cannot be
 * frozen while they have elements and are left as they are.
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    if (ArrayBuffer.isView(value)) return value;
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}
