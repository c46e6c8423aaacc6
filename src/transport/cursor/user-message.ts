/**
 * The user's Cursor message → the model's user message: the text (inline or from a blob) and
 * the pasted images (inline bytes or blob references). Selected files, rules and other context
 * become context supplements instead (context.ts), so that unchanged context is not repeated.
 */
import type { ImageContent, TextContent, UserMessage } from "../../llm/types.ts";
import { type BlobStore, findBlob } from "./blobs.ts";
import type {
  UserMessage as CursorUserMessage,
  SelectedImage,
} from "./gen/agent/v1/user_message_pb.js";

export function toUserMessage(
  message: CursorUserMessage,
  blobs: BlobStore,
  at: number,
  prepend: readonly CursorUserMessage[] = [],
): UserMessage {
  const texts = [...prepend, message]
    .map((entry) => toText(entry, blobs))
    .filter((text) => text !== "");
  const images = (message.selectedContext?.selectedImages ?? []).map((image) =>
    toImage(image, blobs),
  );
  if (images.length === 0 && texts.length <= 1) {
    return { role: "user", content: texts[0] ?? "", timestamp: at };
  }
  const blocks: (TextContent | ImageContent)[] = texts.map((text) => ({ type: "text", text }));
  for (const image of images) blocks.push(image ?? UNAVAILABLE_IMAGE);
  return { role: "user", content: blocks, timestamp: at };
}

const UNAVAILABLE_IMAGE: TextContent = {
  type: "text",
  text: "[An image was attached but its data was not sent by the client.]",
};

function toText(message: CursorUserMessage, blobs: BlobStore): string {
  if (message.text !== "") return message.text;
  const blob = findBlob(blobs, message.textBlobId);
  return blob === null ? "" : new TextDecoder().decode(blob);
}

function toImage(image: SelectedImage, blobs: BlobStore): ImageContent | null {
  const source = image.dataOrBlobId;
  let data: Uint8Array | null = null;
  switch (source.case) {
    case "data":
      data = source.value;
      break;
    case "blobId":
      data = findBlob(blobs, source.value);
      break;
    case "blobIdWithData":
      data =
        source.value.data.length > 0 ? source.value.data : findBlob(blobs, source.value.blobId);
      break;
    case undefined:
      data = null;
  }
  if (data === null || data.length === 0) return null;
  return {
    type: "image",
    data: Buffer.from(data).toString("base64"),
    mimeType: image.mimeType !== "" ? image.mimeType : sniffImageType(data),
  };
}

/** The image type from the file's magic bytes (the client normally sends `mime_type`). */
export function sniffImageType(data: Uint8Array): string {
  const starts = (...bytes: number[]) => bytes.every((byte, i) => data[i] === byte);
  if (starts(0x89, 0x50, 0x4e, 0x47)) return "image/png";
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(0x47, 0x49, 0x46, 0x38)) return "image/gif";
  if (starts(0x52, 0x49, 0x46, 0x46) && data[8] === 0x57 && data[9] === 0x45) return "image/webp";
  return "application/octet-stream";
}
