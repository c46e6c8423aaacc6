/**
 * A fetched body → text the model can read, by media type: HTML through Readability (the main
 * content, without navigation, headers and footers) on a linkedom DOM, then Turndown to
 * Markdown; text, Markdown, JSON, XML and other textual types as they are; PDFs as their text,
 * page by page (pdf-text.ts); anything else is refused with a clear reason. A body without a
 * content type is sniffed.
 */
import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import TurndownService from "turndown";
import { pdfToText } from "./pdf-text.ts";

export type Readable =
  | {
      readonly type: "text";
      readonly mediaType: string;
      readonly title: string;
      readonly text: string;
      /** Set when only part of the document was read (PDF pages), saying which part. */
      readonly partial?: string;
    }
  | { readonly type: "unsupported"; readonly message: string };

const TEXT_TYPES = new Set([
  "application/json",
  "application/ld+json",
  "application/xml",
  "application/rss+xml",
  "application/atom+xml",
  "application/javascript",
  "application/x-javascript",
  "application/yaml",
  "application/x-yaml",
  "application/toml",
  "application/x-sh",
]);

/** `maxChars`: how much text the caller will use (PDF pages beyond it are not read). */
export async function toReadable(
  body: Buffer,
  contentType: string,
  url: string,
  maxChars: number,
): Promise<Readable> {
  const mediaType = (contentType.split(";")[0] ?? "").trim().toLowerCase();
  const sniffed = mediaType === "" ? sniff(body) : mediaType;
  if (sniffed === "text/html" || sniffed === "application/xhtml+xml") {
    return { type: "text", mediaType: sniffed, ...htmlToMarkdown(decode(body, contentType), url) };
  }
  if (sniffed.startsWith("text/") || TEXT_TYPES.has(sniffed) || /\+(json|xml)$/.test(sniffed)) {
    return { type: "text", mediaType: sniffed, title: "", text: decode(body, contentType) };
  }
  if (sniffed === "application/pdf") {
    const pdf = await pdfToText(body, maxChars);
    if (pdf.type === "unreadable") return { type: "unsupported", message: pdf.message };
    return {
      type: "text",
      mediaType: sniffed,
      title: pdf.title,
      text: pdf.text,
      ...(pdf.pagesRead < pdf.pages
        ? { partial: `only pages 1 to ${pdf.pagesRead} of ${pdf.pages} were read` }
        : {}),
    };
  }
  return {
    type: "unsupported",
    message: `unsupported content type ${sniffed === "" ? "(binary data without a type)" : sniffed}; web_fetch reads HTML, text, JSON and PDF`,
  };
}

/** HTML → `{ title, text }` with the main content as Markdown and links made absolute. */
export function htmlToMarkdown(html: string, url: string): { title: string; text: string } {
  const { document } = parseHTML(html);
  absolutize(document, url);
  const pageTitle = document.querySelector("title")?.textContent?.trim() ?? "";
  let content: string;
  let title = pageTitle;
  const article = new Readability(
    document as unknown as ConstructorParameters<typeof Readability>[0],
  ).parse();
  if (article?.content !== undefined && article.content !== null && article.content.trim() !== "") {
    content = article.content;
    title = article.title?.trim() || pageTitle;
  } else {
    // Not article-shaped (a listing, an app shell): the body without page furniture.
    const fallback = parseHTML(html).document;
    absolutize(fallback, url);
    for (const element of fallback.querySelectorAll(
      "script, style, noscript, template, nav, header, footer, aside, form, svg, iframe",
    )) {
      element.remove();
    }
    content = fallback.querySelector("body")?.innerHTML ?? "";
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
  return { title, text };
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

function decode(body: Buffer, contentType: string): string {
  const charset = /charset\s*=\s*"?([^";\s]+)/i.exec(contentType)?.[1];
  try {
    return new TextDecoder(charset ?? "utf-8").decode(body);
  } catch {
    return new TextDecoder("utf-8").decode(body);
  }
}

/** A media type for a body sent without one: HTML, text, or "" (binary). */
function sniff(body: Buffer): string {
  const head = body.subarray(0, 1024).toString("utf8").trimStart().toLowerCase();
  if (head.startsWith("<!doctype html") || head.startsWith("<html")) return "text/html";
  if (body.subarray(0, 4).toString("latin1") === "%PDF") return "application/pdf";
  if (body.subarray(0, 8192).includes(0)) return "";
  return "text/plain";
}
