/**
 * Whether V8 keeps `value` as a fast object (not in dictionary mode), for the tests of objects made
 * once per stream (issue #19: a dictionary-mode object of a handful of members costs ≈ 4x more).
 * Uses the `%HasFastProperties` intrinsic, allowed for functions compiled from here on.
 */
import { setFlagsFromString } from "node:v8";

setFlagsFromString("--allow-natives-syntax");
const check = new Function("value", "return %HasFastProperties(value)") as (
  value: object,
) => boolean;

export function hasFastProperties(value: object): boolean {
  return check(value);
}
