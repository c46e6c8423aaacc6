/**
 * The user's Cursor message → the model's user message: the text (inline or from a blob) and
 * the pasted images (inline bytes or blob references). Selected files, rules and other context
 * become context supplements instead (context.ts), so that unchanged context is not repeated.
 *
 * Images are checked here, before anything reaches the loop (README "Images"): each must be a
 * PNG, JPEG, GIF or WebP (the types every provider kind accepts) of at most
 * `IMAGE_LIMITS.maxBytes`, and a message holds at most `IMAGE_LIMITS.maxImages`. An image that
 * breaks a limit fails the run request with a message naming the image and the limit. The image
 * type is taken from the file's bytes when they show one (providers reject a declared type that
 * does not match the data), else from the client's `mime_type`.
 */
import type { ImageContent, TextContent, UserMessage } from "../../llm/types.ts";
import { type BlobStore, findBlob } from "./blobs.ts";
import { type Decoded, toDecoded, toDecodeError } from "./decode-error.ts";
import type {
  UserMessage as CursorUserMessage,
  SelectedImage,
} from "./gen/agent/v1/user_message_pb.js";

/**
 * 5 MiB per image is Anthropic's limit, the strictest of the provider kinds (OpenAI and Gemini
 * allow 20 MB per request); 20 images per message keeps a request well inside all of them.
 */
export const IMAGE_LIMITS = { maxBytes: 5 * 1024 * 1024, maxImages: 20 } as const;

const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"] as const;

export function toUserMessage(
  message: CursorUserMessage,
  blobs: BlobStore,
  at: number,
  prepend: readonly CursorUserMessage[] = [],
): Decoded<UserMessage> {
  const texts = [...prepend, message]
    .map((entry) => toText(entry, blobs))
    .filter((text) => text !== "");
  const selected = message.selectedContext?.selectedImages ?? [];
  if (selected.length > IMAGE_LIMITS.maxImages) {
    return toDecodeError(
      "bad_field",
      `the message has ${selected.length} images; at most ${IMAGE_LIMITS.maxImages} can be sent at once`,
    );
  }
  const images: (ImageContent | null)[] = [];
  for (const [index, image] of selected.entries()) {
    const converted = toImage(image, blobs, index);
    if (!converted.ok) return converted;
    images.push(converted.value);
  }
  if (images.length === 0 && texts.length <= 1) {
    return toDecoded({ role: "user", content: texts[0] ?? "", timestamp: at });
  }
  const blocks: (TextContent | ImageContent)[] = texts.map((text) => ({ type: "text", text }));
  for (const image of images) blocks.push(image ?? UNAVAILABLE_IMAGE);
  return toDecoded({ role: "user", content: blocks, timestamp: at });
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

function toImage(
  image: SelectedImage,
  blobs: BlobStore,
  index: number,
): Decoded<ImageContent | null> {
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
  if (data === null || data.length === 0) return toDecoded(null);
  const name = `image ${index + 1}${image.path === "" ? "" : ` (${baseName(image.path)})`}`;
  if (data.length > IMAGE_LIMITS.maxBytes) {
    return toDecodeError(
      "bad_field",
      `${name} is ${toMiB(data.length)} MiB; images can be at most ${toMiB(IMAGE_LIMITS.maxBytes)} MiB`,
    );
  }
  const sniffed = sniffImageType(data);
  const mimeType = isImageType(sniffed) ? sniffed : image.mimeType.toLowerCase();
  if (!isImageType(mimeType)) {
    return toDecodeError(
      "bad_field",
      `${name} is not a PNG, JPEG, GIF or WebP image, the types every model provider accepts`,
    );
  }
  return toDecoded({ type: "image", data: Buffer.from(data).toString("base64"), mimeType });
}

function isImageType(type: string): boolean {
  return (IMAGE_TYPES as readonly string[]).includes(type);
}

function toMiB(bytes: number): string {
  return (bytes / (1024 * 1024)).toFixed(1);
}

/** The file name only: a client path may hold the user's folder names, which errors do not show. */
function baseName(path: string): string {
  return path.split(/[\\/]/).at(-1) ?? "";
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
