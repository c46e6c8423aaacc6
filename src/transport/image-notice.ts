/**
 * The note a user sees when the images they attached cannot reach the model: the model's
 * configuration has no `image` input. The images stay in the conversation's history (a later
 * turn on a vision model sees them); requests to a model without image input carry a short text
 * in their place instead (pi-ai's downgrade, the same bytes on every request).
 */
import type { ModelInfo } from "../llm/index.ts";
import type { UserMessage } from "../loop/index.ts";

export function toImageNotice(
  model: Pick<ModelInfo, "name" | "input">,
  message: UserMessage,
): string | null {
  if (model.input.includes("image") || typeof message.content === "string") return null;
  const images = message.content.filter((block) => block.type === "image").length;
  if (images === 0) return null;
  const what = images === 1 ? "the attached image was" : `the ${images} attached images were`;
  return `Note: ${model.name} does not accept images, so ${what} not sent to it.\n\n`;
}
