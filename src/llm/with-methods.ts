/**
 * Objects made once per call or stream as one plain record of their state whose methods are
 * shared (issue #19, heap per open stream): a factory of closures makes a closure and a context
 * per method per object; this makes one record, and every record of a kind shares one map and
 * one methods object.
 *
 * `Object.setPrototypeOf` on a fresh literal is what a `__proto__` literal does at run time (one
 * runtime call after the literal's boilerplate): same memory, fast properties, one map. Unlike
 * the literal it is typed, so the compiler checks the result against the public interface.
 * Such members are methods: callers call them on the object, never pass them on unbound.
 */
export function withMethods<R extends object, M extends object>(record: R, methods: M): R & M {
  return Object.setPrototypeOf(record, methods) as R & M;
}
