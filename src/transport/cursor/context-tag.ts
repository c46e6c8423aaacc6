/** The one shape every context supplement is rendered in. */

/** `<name a="…">body</name>`; attribute values are escaped so a path cannot break the tag. */
export function tag(name: string, attributes: Record<string, string>, body: string): string {
  const attrs = Object.entries(attributes)
    .map(([key, value]) => ` ${key}="${value.replaceAll("&", "&amp;").replaceAll('"', "&quot;")}"`)
    .join("");
  return `<${name}${attrs}>\n${body}\n</${name}>`;
}

export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
