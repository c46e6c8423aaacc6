/**
 * Canonical JSON: object keys sorted by UTF-16 code unit order, no whitespace, `undefined`
 * members omitted, non-finite numbers rejected. Two equal values always give the same bytes,
 * whatever order their keys were created in.
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
        return `[${value.map((item, i) => (item === undefined ? "null" : write(item, `${path}[${i}]`))).join(",")}]`;
      }
      const record = value as Record<string, unknown>;
      const members: string[] = [];
      for (const key of Object.keys(record).sort()) {
        const member = record[key];
        if (member === undefined) continue;
        members.push(`${JSON.stringify(key)}:${write(member, `${path}.${key}`)}`);
      }
      return `{${members.join(",")}}`;
    }
    default:
      throw new TypeError(`canonical JSON: ${path} has unsupported type ${typeof value}`);
  }
}
