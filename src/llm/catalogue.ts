/**
 * pi-ai's built-in model catalogue, used for defaults only: when a configured model is known
 * (provider id and upstream model id both match a catalogue entry), its context window, output
 * limit, prices, reasoning support, thinking-level map and compatibility flags fill in whatever
 * the configuration leaves out. The configuration always wins.
 */
import type { Api, Model } from "@earendil-works/pi-ai";
import { getBuiltinModel } from "@earendil-works/pi-ai/providers/all";

type LookupModel = (provider: string, modelId: string) => Model<Api> | undefined;

/** The catalogue entry for `provider`/`upstreamId`, or `undefined` when pi-ai does not know it. */
export function findCatalogueModel(provider: string, upstreamId: string): Model<Api> | undefined {
  // The typed overloads only accept literal catalogue keys; at run time unknown keys give undefined.
  const lookup = getBuiltinModel as unknown as LookupModel;
  const model = lookup(provider, upstreamId);
  return model === undefined ? undefined : structuredClone(model);
}
