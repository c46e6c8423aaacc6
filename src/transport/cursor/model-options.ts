/**
 * The client's model choice as the LLM layer's per-call options (src/llm/model-options.ts).
 *
 * What Cursor clients send (public Cursor servers and proxies agree on these; see
 * docs/protocol.md §2.3, RequestedModel):
 * - `requested_model.parameters[]` `{id, value}`: `thinking` (`true`/`false`), `effort` or
 *   `reasoning` (`low` … `xhigh`, `max`), `fast`, `context`;
 * - `requested_model.max_mode` (or `model_details.max_mode`);
 * - a variant string (`is_variant_string_representation`): the options ride in the model id,
 *   either after a colon (`name:high`) or as trailing `-thinking`, `-low`/`-medium`/`-high`/
 *   `-xhigh` and `-max` tokens (`name-thinking-high`). A trailing token is only read as an option
 *   when the whole id is not itself a configured model name.
 *
 * Options the server cannot honour (`fast`, `context`) are left out: the model's own settings
 * apply.
 */
import type { Effort, ModelOptions } from "../../llm/index.ts";
import type { ModelSelection } from "./run-request.ts";

const EFFORTS: readonly Effort[] = ["minimal", "low", "medium", "high", "xhigh", "max"];

/** The configured model the selection names, and the options it carries. */
export interface ChosenModel {
  readonly model: string;
  readonly options: ModelOptions;
}

export function toChosenModel(
  selection: ModelSelection,
  isConfigured: (name: string) => boolean,
): ChosenModel {
  let model = selection.model;
  let thinking: boolean | undefined;
  let effort: Effort | undefined;
  let maxMode = selection.maxMode;
  // The variant forms, tried only when the id as sent is not a configured model.
  if (!isConfigured(model)) {
    const colon = model.indexOf(":");
    if (colon > 0) {
      const suffix = model.slice(colon + 1).toLowerCase();
      model = model.slice(0, colon);
      effort = toEffort(suffix) ?? effort;
      if (suffix === "thinking") thinking = true;
    }
    const parts = model.split("-");
    while (parts.length > 1 && !isConfigured(parts.join("-"))) {
      const token = (parts.at(-1) ?? "").toLowerCase();
      if (token === "thinking") thinking = true;
      else if (token === "max") maxMode = true;
      else if (toEffort(token) !== undefined) effort = toEffort(token);
      else break;
      parts.pop();
    }
    if (isConfigured(parts.join("-"))) model = parts.join("-");
  }
  for (const { id, value } of selection.parameters) {
    const key = id.toLowerCase();
    const text = value.trim().toLowerCase();
    if (key === "thinking") thinking = text === "true" ? true : text === "false" ? false : thinking;
    else if (key === "effort" || key === "reasoning" || key === "reasoning_effort") {
      effort = toEffort(text) ?? effort;
    }
  }
  return {
    model,
    options: {
      ...(thinking === undefined ? {} : { thinking }),
      ...(effort === undefined ? {} : { effort }),
      ...(maxMode ? { maxMode: true } : {}),
    },
  };
}

function toEffort(text: string): Effort | undefined {
  return EFFORTS.find((effort) => effort === text);
}
