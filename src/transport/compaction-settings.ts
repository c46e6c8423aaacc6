/**
 * The loop's compaction settings for a turn on `model` (docs/compaction.md): the model's window
 * and output reserve from its configuration, its `compaction` entry, and the summary model (the
 * model itself unless configured).
 */
import type { ModelInfo } from "../llm/index.ts";
import type { CompactionSettings } from "../loop/index.ts";

export function toCompactionSettings(model: ModelInfo): CompactionSettings {
  const { auto, threshold, summaryModel, tailMessages, charsPerToken } = model.compaction;
  return {
    auto,
    contextWindow: model.contextWindow,
    outputReserve: model.maxOutput,
    threshold,
    summaryModel: summaryModel ?? model.name,
    tailMessages,
    charsPerToken,
  };
}
