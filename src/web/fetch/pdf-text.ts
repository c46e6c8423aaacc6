/**
 * The text of a PDF, page by page, through unpdf (a dependency-free build of Mozilla's pdf.js).
 * Pages are read only until `maxChars` characters are collected, so a long document costs what
 * the model will see, not what the file holds.
 */
import { getDocumentProxy } from "unpdf";

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
  let document: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    document = await getDocumentProxy(new Uint8Array(body));
  } catch (error) {
    return { type: "unreadable", message: `the PDF could not be read (${describe(error)})` };
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
    return { type: "unreadable", message: `the PDF could not be read (${describe(error)})` };
  } finally {
    await document.destroy().catch(() => {});
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
