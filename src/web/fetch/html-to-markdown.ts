/**
 * HTML → Markdown of the page's main content: Readability (which leaves out navigation, headers
 * and footers) on a linkedom DOM, then Turndown. Links are made absolute; content past the text
 * budget is pruned before the conversion; very large or deeply nested pages skip Readability,
 * and what Turndown sees is bounded in depth and element count. Runs in a worker
 * (convert-in-worker.ts), which bounds time and memory for whatever these checks miss.
 */
import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import TurndownService from "turndown";

/** Pages with more elements than this skip Readability (see htmlToMarkdown). */
const MAX_READABILITY_ELEMENTS = 8_000;
/**
 * Pages nested deeper than this skip Readability: its cost grows faster than linearly with
 * depth (measured: 300 levels 0.2 s, 1,000 levels 3.5 s, 2,000 levels 31 s).
 */
const MAX_READABILITY_DEPTH = 300;
/**
 * What Turndown is given: elements deeper than this are flattened to their text (Turndown
 * recurses and overflows the stack near 7,000 levels), and elements past this count are dropped
 * (it takes about 13 µs per element: 700,000 empty elements took 9 s).
 */
const MAX_MARKDOWN_DEPTH = 300;
const MAX_MARKDOWN_ELEMENTS = 20_000;

/**
 * HTML → `{ title, text }` with the main content as Markdown and links made absolute. Content
 * past `maxChars` characters of text is dropped before the Markdown conversion (which is the
 * costly part on large pages); `omitted` counts the text characters dropped.
 */
export function htmlToMarkdown(
  html: string,
  url: string,
  maxChars: number,
): { title: string; text: string; omitted: number } {
  const { document } = parseHTML(html);
  absolutize(document, url);
  const pageTitle = document.querySelector("title")?.textContent?.trim() ?? "";
  let content: string;
  let title = pageTitle;
  let omitted = 0;
  // Readability scores every element, which takes about a second per 10,000 elements (measured
  // with npm run bench:web); larger or deeply nested pages take the fallback.
  const shape = measure(document.documentElement as unknown as TreeElement | null);
  const large = shape.elements > MAX_READABILITY_ELEMENTS || shape.depth > MAX_READABILITY_DEPTH;
  const article = large
    ? null
    : new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], {
        serializer: (node: unknown) => {
          omitted = prune(node as PrunableNode, maxChars);
          return (node as { innerHTML: string }).innerHTML;
        },
      }).parse();
  if (article?.content !== undefined && article.content !== null && article.content.trim() !== "") {
    content = article.content;
    title = article.title?.trim() || pageTitle;
  } else {
    // Not article-shaped (a listing, an app shell), or too large: the body without furniture.
    const fallback = large ? document : parseHTML(html).document;
    if (!large) absolutize(fallback, url);
    for (const element of fallback.querySelectorAll(
      "script, style, noscript, template, nav, header, footer, aside, form, svg, iframe",
    )) {
      element.remove();
    }
    const body = fallback.querySelector("body");
    omitted = body === null ? 0 : prune(body as unknown as PrunableNode, maxChars);
    if (body !== null) {
      omitted += limitTree(
        body as unknown as TreeElement,
        MAX_MARKDOWN_DEPTH,
        MAX_MARKDOWN_ELEMENTS,
      );
    }
    content = body?.innerHTML ?? "";
  }
  const turndown = new TurndownService({
    headingStyle: "atx",
    codeBlockStyle: "fenced",
    bulletListMarker: "-",
  });
  turndown.remove(["script", "style", "noscript"]);
  const text = turndown
    .turndown(content)
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  return { title, text, omitted };
}

/** The DOM surface `prune` needs (linkedom's nodes have it). */
interface PrunableNode {
  readonly textContent: string | null;
  readonly childNodes: ArrayLike<PrunableNode>;
  remove(): void;
}

/**
 * Keeps the first `budget` characters of `node`'s text (whole child nodes; the child where the
 * budget ends is pruned in turn) plus a margin, and removes everything after. Returns how many
 * characters of text were removed.
 */
function prune(node: PrunableNode, budget: number): number {
  const keep = Math.ceil(budget * 1.1) + 200;
  const total = node.textContent?.length ?? 0;
  if (total <= keep) return 0;
  let used = 0;
  let removed = 0;
  const children = Array.from(node.childNodes);
  for (const [index, child] of children.entries()) {
    const length = child.textContent?.length ?? 0;
    if (used + length <= keep) {
      used += length;
      continue;
    }
    removed += prune(child, keep - used);
    for (const rest of children.slice(index + 1)) {
      removed += rest.textContent?.length ?? 0;
      rest.remove();
    }
    break;
  }
  return removed;
}

/** The DOM surface `measure` and `limitTree` need (linkedom's elements have it). */
interface TreeElement {
  readonly firstElementChild: TreeElement | null;
  readonly nextElementSibling: TreeElement | null;
  textContent: string | null;
  remove(): void;
}

/** Element count and maximum nesting depth under `root`, walked without recursion. */
function measure(root: TreeElement | null): { elements: number; depth: number } {
  let elements = 0;
  let depth = 0;
  const stack: [TreeElement, number][] = root === null ? [] : [[root, 1]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [element, level] = next;
    elements += 1;
    depth = Math.max(depth, level);
    for (let child = element.firstElementChild; child !== null; child = child.nextElementSibling) {
      stack.push([child, level + 1]);
    }
  }
  return { elements, depth };
}

/**
 * Bounds the tree under `root` for Turndown: elements at `maxDepth` keep only their text, and
 * elements past the first `maxElements` (in document order) are removed. Returns how many
 * characters of text were removed.
 */
function limitTree(root: TreeElement, maxDepth: number, maxElements: number): number {
  let seen = 0;
  let removed = 0;
  const stack: [TreeElement, number][] = [[root, 0]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [element, level] = next;
    seen += 1;
    if (seen > maxElements) {
      removed += element.textContent?.length ?? 0;
      element.remove();
      continue;
    }
    if (level >= maxDepth) {
      element.textContent = element.textContent ?? "";
      continue;
    }
    const children: TreeElement[] = [];
    for (let child = element.firstElementChild; child !== null; child = child.nextElementSibling) {
      children.push(child);
    }
    for (const child of children.reverse()) stack.push([child, level + 1]);
  }
  return removed;
}

function absolutize(document: ReturnType<typeof parseHTML>["document"], base: string): void {
  for (const [selector, attribute] of [
    ["a[href]", "href"],
    ["img[src]", "src"],
  ] as const) {
    for (const element of document.querySelectorAll(selector)) {
      const value = element.getAttribute(attribute) ?? "";
      if (value.startsWith("#") || value.startsWith("javascript:")) continue;
      try {
        element.setAttribute(attribute, new URL(value, base).href);
      } catch {
        // Leave what cannot be resolved as it is.
      }
    }
  }
}
