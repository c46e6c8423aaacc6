/**
 * Accessors on objects made once per call or stream, without putting them in dictionary mode
 * (issue #19, heap per open stream).
 *
 * V8 keeps an object fast only while objects of its shape share their accessors: an object
 * literal with a `get` member, or a getter closure defined per object, makes every object after
 * the first a dictionary-mode one (≈ 470 bytes for a stream's handful of members instead of
 * ≈ 100). Here each property name has one getter function, shared by all objects, which calls the
 * object's own source function, kept under a non-enumerable symbol. The result is what a
 * literal's `get` makes: an own, enumerable, configurable accessor without a setter.
 */
const SOURCES = Symbol("getter sources");

type Sources = Readonly<Record<string, () => unknown>>;

/** One getter per property name, shared by every object given that name. */
const sharedGetters = new Map<string, (this: { readonly [SOURCES]: Sources }) => unknown>();

function sharedGetter(name: string): (this: { readonly [SOURCES]: Sources }) => unknown {
  let getter = sharedGetters.get(name);
  if (getter === undefined) {
    getter = function (this: { readonly [SOURCES]: Sources }) {
      return (this[SOURCES][name] as () => unknown)();
    };
    sharedGetters.set(name, getter);
  }
  return getter;
}

/** `target` with each of `getters` as an accessor that calls it on every read. */
export function withGetters<T extends object, G extends Sources>(
  target: T,
  getters: G,
): T & { readonly [K in keyof G]: ReturnType<G[K]> } {
  Object.defineProperty(target, SOURCES, { value: getters });
  for (const name of Object.keys(getters)) {
    Object.defineProperty(target, name, {
      get: sharedGetter(name),
      enumerable: true,
      configurable: true,
    });
  }
  return target as T & { readonly [K in keyof G]: ReturnType<G[K]> };
}
