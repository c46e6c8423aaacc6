/**
 * The text of a PDF, page by page, through unpdf (a dependency-free build of Mozilla's pdf.js).
 * Pages are read only until `maxChars` characters are collected, so a long document costs what
 * the model will see, not what the file holds. A PDF whose deflated streams inflate to more than
 * `MAX_INFLATED_BYTES` in all is refused before pdf.js reads it: pdf.js holds decoded streams in
 * ArrayBuffers, outside the worker's heap cap (a 306 KB file inflated to 200 MB and took 760 MB).
 */
import { constants, inflateSync } from "node:zlib";
import { getDocumentProxy } from "unpdf";
import { errorMessage } from "../../errors/error-message.ts";

/** The most bytes all deflated streams of a PDF may inflate to. */
export const MAX_INFLATED_BYTES = 64 * 1024 * 1024;

export type PdfText =
  | {
      readonly type: "text";
      readonly title: string;
      readonly text: string;
      readonly pagesRead: number;
      readonly pages: number;
    }
  | { readonly type: "unreadable"; readonly message: string };

interface TextItem {
  readonly str?: string;
  readonly hasEOL?: boolean;
}

export async function pdfToText(body: Buffer, maxChars: number): Promise<PdfText> {
  if (!inflatesWithin(body, MAX_INFLATED_BYTES)) {
    return {
      type: "unreadable",
      message: `the PDF was not read: its compressed content inflates to more than ${MAX_INFLATED_BYTES / (1024 * 1024)} MiB`,
    };
  }
  let document: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    document = await getDocumentProxy(new Uint8Array(body));
  } catch (error) {
    return { type: "unreadable", message: `the PDF could not be read (${errorMessage(error)})` };
  }
  try {
    const parts: string[] = [];
    let length = 0;
    let pagesRead = 0;
    for (let number = 1; number <= document.numPages && length < maxChars; number += 1) {
      const page = await document.getPage(number);
      const content = await page.getTextContent();
      const text = (content.items as TextItem[])
        .map((item) => `${item.str ?? ""}${item.hasEOL === true ? "\n" : ""}`)
        .join("")
        .replace(/[ \t]+\n/g, "\n")
        .trim();
      const part = `## Page ${number}\n\n${text === "" ? "(no text on this page)" : text}`;
      parts.push(part);
      length += part.length + 2;
      pagesRead = number;
    }
    const metadata = await document.getMetadata().catch(() => null);
    const title = (metadata?.info as { Title?: unknown } | undefined)?.Title;
    return {
      type: "text",
      title: typeof title === "string" ? title.trim() : "",
      text: parts.join("\n\n"),
      pagesRead,
      pages: document.numPages,
    };
  } catch (error) {
    return { type: "unreadable", message: `the PDF could not be read (${errorMessage(error)})` };
  } finally {
    await document.destroy().catch(() => {});
  }
}

/**
 * Whether the zlib streams of `body` (every `stream … endstream` that inflates) decode to at
 * most `budget` bytes in all. Streams that are not zlib data are not counted.
 */
export function inflatesWithin(body: Buffer, budget: number): boolean {
  let left = budget;
  for (let at = body.indexOf("stream"); at >= 0; at = body.indexOf("stream", at + 6)) {
    if (body[at - 1] === 0x64 /* "d" of endstream */) continue;
    let start = at + 6;
    if (body[start] === 0x0d) start += 1;
    if (body[start] !== 0x0a) continue;
    start += 1;
    const end = body.indexOf("endstream", start);
    if (end < 0) break;
    try {
      left -= inflateSync(body.subarray(start, end), {
        maxOutputLength: Math.max(left, 1),
        // A stream cut short counts what it holds.
        finishFlush: constants.Z_SYNC_FLUSH,
      }).length;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") return false;
    }
    if (left < 0) return false;
    at = end;
  }
  return true;
}
