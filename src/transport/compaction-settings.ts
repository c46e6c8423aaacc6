/**
 * The loop's compaction settings for a turn on `model` (docs/compaction.md): the model's window
 * and output reserve from its configuration, its `compaction` entry, and the summary model (the
 * model itself unless configured) with the input it can take.
 */
import type { ModelInfo } from "../llm/index.ts";
import type { CompactionSettings } from "../loop/index.ts";

export function toCompactionSettings(
  model: ModelInfo,
  findModel: (name: string) => ModelInfo | undefined,
): CompactionSettings {
  const { auto, threshold, summaryModel, tailMessages, charsPerToken } = model.compaction;
  const summarizer = (summaryModel === null ? undefined : findModel(summaryModel)) ?? model;
  return {
    auto,
    contextWindow: model.contextWindow,
    outputReserve: model.maxOutput,
    threshold,
    summaryModel: summarizer.name,
    summaryInputBudget: Math.max(0, summarizer.contextWindow - summarizer.maxOutput),
    tailMessages,
    charsPerToken,
  };
}
