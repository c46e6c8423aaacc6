/**
 * A fetched body → text the model can read, by media type: HTML through Readability (the main
 * content, without navigation, headers and footers) on a linkedom DOM, then Turndown to
 * Markdown; text, Markdown, JSON, XML and other textual types as they are; PDFs as their text,
 * page by page (pdf-text.ts); anything else is refused with a clear reason. A body without a
 * content type is sniffed.
 */
import { pdfToText } from "./pdf-text.ts";

export type Readable =
  | {
      readonly type: "text";
      readonly mediaType: string;
      readonly title: string;
      readonly text: string;
      /** Set when only part of the document was read (PDF pages), saying which part. */
      readonly partial?: string;
      /** Characters of page text left out before conversion because they exceed the budget. */
      readonly omitted?: number;
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

/** The media type of `body`: from `contentType`, or sniffed when it gives none. */
export function toMediaType(body: Buffer, contentType: string): string {
  const mediaType = (contentType.split(";")[0] ?? "").trim().toLowerCase();
  return mediaType === "" ? sniff(body) : mediaType;
}

/** Whether converting `mediaType` can cost much time or memory (see convert-in-worker.ts). */
export function isCostlyType(mediaType: string): boolean {
  return (
    mediaType === "text/html" ||
    mediaType === "application/xhtml+xml" ||
    mediaType === "application/pdf"
  );
}

/**
 * `maxChars`: how much text the caller will use (PDF pages beyond it are not read). HTML and
 * PDF can cost unbounded time and memory here: the server calls this through
 * convert-in-worker.ts.
 */
export async function toReadable(
  body: Buffer,
  contentType: string,
  url: string,
  maxChars: number,
): Promise<Readable> {
  const sniffed = toMediaType(body, contentType);
  if (sniffed === "text/html" || sniffed === "application/xhtml+xml") {
    // Loaded on first use: the DOM and Markdown libraries add ~0.2 s to every CLI start.
    const { htmlToMarkdown } = await import("./html-to-markdown.ts");
    return {
      type: "text",
      mediaType: sniffed,
      ...htmlToMarkdown(decode(body, contentType), url, maxChars),
    };
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
