/**
 * Glob patterns as ripgrep's `--glob` reads them, for the test client's grep and ls: `*` and `?`
 * stay within one path segment, `**` spans segments, `{a,b}` alternates, `[…]` is a class. A
 * pattern without a `/` matches the file name in any directory; one with a `/` matches the
 * path relative to the search root. A leading `!` excludes.
 */
export interface GlobMatcher {
  /** `relativePath` uses `/` separators and is relative to the search root. */
  matches(relativePath: string): boolean;
}

export function createGlobMatcher(pattern: string): GlobMatcher {
  const negated = pattern.startsWith("!");
  const body = negated ? pattern.slice(1) : pattern;
  const trimmed = body.replace(/^\.\//, "").replace(/\/+$/, "");
  const anchored = trimmed.includes("/");
  const source = toRegExpSource(trimmed.replace(/^\//, ""));
  const regex = new RegExp(`^${source}$`);
  return {
    matches(relativePath: string): boolean {
      const subject = anchored ? relativePath : baseName(relativePath);
      const hit = regex.test(subject);
      return negated ? !hit : hit;
    },
  };
}

function toRegExpSource(glob: string): string {
  let out = "";
  let depth = 0;
  for (let i = 0; i < glob.length; i += 1) {
    const c = glob[i] as string;
    if (c === "*") {
      if (glob[i + 1] === "*") {
        const slashAfter = glob[i + 2] === "/";
        const atSegmentStart = i === 0 || glob[i - 1] === "/";
        if (atSegmentStart && slashAfter) {
          out += "(?:.*/)?";
          i += 2;
        } else {
          out += ".*";
          i += 1;
        }
      } else {
        out += "[^/]*";
      }
    } else if (c === "?") {
      out += "[^/]";
    } else if (c === "[") {
      const end = glob.indexOf("]", i + 2);
      if (end === -1) {
        out += "\\[";
      } else {
        const inner = glob
          .slice(i + 1, end)
          .replace(/^!/, "^")
          .replace(/\\/g, "\\\\");
        out += `[${inner}]`;
        i = end;
      }
    } else if (c === "{") {
      depth += 1;
      out += "(?:";
    } else if (c === "}" && depth > 0) {
      depth -= 1;
      out += ")";
    } else if (c === "," && depth > 0) {
      out += "|";
    } else {
      out += c.replace(/[.+^$()|\\]/g, "\\$&");
    }
  }
  return out + ")".repeat(depth);
}

function baseName(path: string): string {
  const index = path.lastIndexOf("/");
  return index === -1 ? path : path.slice(index + 1);
}
