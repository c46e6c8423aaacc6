/**
 * HTML → Markdown of the page's main content: Readability (which leaves out navigation, headers
 * and footers) on a linkedom DOM, then Turndown. Links are made absolute; content past the text
 * budget is pruned before the conversion; very large pages skip Readability.
 */
import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import TurndownService from "turndown";

/** Pages with more elements than this skip Readability (see htmlToMarkdown). */
const MAX_READABILITY_ELEMENTS = 8_000;

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
  // with npm run bench:web) and blocks the server meanwhile; larger pages take the fallback.
  const large = document.querySelectorAll("*").length > MAX_READABILITY_ELEMENTS;
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
