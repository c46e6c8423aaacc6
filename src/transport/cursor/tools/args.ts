/**
 * Reading tool arguments the model produced. Models send wrong types now and then; numbers
 * and booleans written as strings are accepted, anything else is an argument error with a
 * message the model can act on (it becomes an isError tool result, never an exception).
 */
import type { JsonObject, JsonValue } from "../../../llm/types.ts";
import type { ParseResult } from "./types.ts";

export interface ArgReader {
  string(key: string, options?: { allowEmpty?: boolean }): string;
  optionalString(key: string): string | undefined;
  integer(key: string, range: { min: number; max: number }): number;
  optionalInteger(key: string, range: { min: number; max: number }): number | undefined;
  optionalBoolean(key: string): boolean | undefined;
  optionalStringArray(key: string): string[] | undefined;
  /** An array of objects, each read by `read`. */
  objectArray<T>(key: string, read: (item: ArgReader, index: number) => T, required: boolean): T[];
  optionalEnum<T extends string>(key: string, values: readonly T[]): T | undefined;
}

/** Runs `read` over `args`; the first problem found becomes the error. */
export function parseArgs<A>(args: JsonObject, read: (reader: ArgReader) => A): ParseResult<A> {
  try {
    return { ok: true, args: read(createReader(args, "")) };
  } catch (error) {
    if (error instanceof ArgumentProblem) return { ok: false, error: error.message };
    throw error;
  }
}

/** Internal signal, caught by parseArgs only. */
class ArgumentProblem extends Error {}

function createReader(args: JsonObject, prefix: string): ArgReader {
  const fail = (key: string, problem: string): never => {
    throw new ArgumentProblem(`"${prefix}${key}" ${problem}`);
  };
  const present = (key: string): JsonValue | undefined => {
    const value = args[key];
    return value === null ? undefined : value;
  };
  const reader: ArgReader = {
    string(key, options = {}) {
      const value = present(key);
      if (value === undefined) return fail(key, "is required");
      if (typeof value !== "string") return fail(key, "must be a string");
      if (!options.allowEmpty && value.trim() === "") return fail(key, "must not be empty");
      return value;
    },
    optionalString(key) {
      const value = present(key);
      if (value === undefined) return undefined;
      if (typeof value !== "string") return fail(key, "must be a string");
      return value;
    },
    integer(key, range) {
      const value = reader.optionalInteger(key, range);
      return value === undefined ? fail(key, "is required") : value;
    },
    optionalInteger(key, range) {
      const value = present(key);
      if (value === undefined) return undefined;
      const number = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
      if (typeof number !== "number" || !Number.isInteger(number)) {
        return fail(key, "must be an integer");
      }
      if (number < range.min || number > range.max) {
        return fail(key, `must be between ${range.min} and ${range.max}`);
      }
      return number;
    },
    optionalBoolean(key) {
      const value = present(key);
      if (value === undefined) return undefined;
      if (value === "true") return true;
      if (value === "false") return false;
      if (typeof value !== "boolean") return fail(key, "must be true or false");
      return value;
    },
    optionalStringArray(key) {
      const value = present(key);
      if (value === undefined) return undefined;
      if (!Array.isArray(value) || !value.every((item) => typeof item === "string")) {
        return fail(key, "must be an array of strings");
      }
      return [...(value as string[])];
    },
    objectArray(key, read, required) {
      const value = present(key);
      if (value === undefined) return required ? fail(key, "is required") : [];
      if (!Array.isArray(value)) return fail(key, "must be an array");
      return value.map((item, index) => {
        if (item === null || typeof item !== "object" || Array.isArray(item)) {
          return fail(`${key}[${index}]`, "must be an object");
        }
        return read(createReader(item as JsonObject, `${prefix}${key}[${index}].`), index);
      });
    },
    optionalEnum(key, values) {
      const value = present(key);
      if (value === undefined) return undefined;
      if (typeof value !== "string" || !(values as readonly string[]).includes(value)) {
        return fail(key, `must be one of ${values.map((v) => `"${v}"`).join(", ")}`);
      }
      return value as (typeof values)[number];
    },
  };
  return reader;
}
