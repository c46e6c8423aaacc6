/**
 * What a model call may use and what it did use, for budgets (gated-llm.ts, docs/team.md
 * "Users and budgets").
 *
 * - Before the call: its *reservation*, an upper estimate — the request's input at 4 characters
 *   a token (an image counts as `IMAGE_TOKENS`) plus the whole output limit the call is sent with
 *   (the max-mode limit when the client chose max mode), priced at the model's input and output
 *   prices.
 * - After it: what the provider reported; when the call was cut short (aborted, failed) after
 *   tokens had arrived and the report is missing or smaller, the estimated input plus the output
 *   received so far (characters / 4). A call that failed before any token arrived and reported
 *   nothing used nothing.
 */
import type { ModelPrices } from "./config.ts";
import type { LLMCall, ResponseEvent, Usage } from "./types.ts";

/** Tokens and USD. */
export interface CallAmount {
  readonly tokens: number;
  readonly cost: number;
}

/** What one image is counted as, in tokens (providers count ~1,000–1,600 for a typical one). */
export const IMAGE_TOKENS = 1_600;
const CHARS_PER_TOKEN = 4;

export interface ModelLimits {
  readonly maxOutput: number;
  /** The output limit a call in max mode is sent with (model-options.ts `applyModelOptions`). */
  readonly maxModeMaxOutput: number;
  readonly prices: ModelPrices;
}

/**
 * The output limit the call is sent with: in max mode (`options.maxMode`), the model's max-mode
 * limit, as `applyModelOptions` sets `maxTokens`; else its base limit.
 */
export function toOutputLimit(call: Pick<LLMCall, "options">, model: ModelLimits): number {
  return call.options?.maxMode === true ? model.maxModeMaxOutput : model.maxOutput;
}

/** The input tokens of a request, estimated from its characters. */
export function estimateInputTokens(call: LLMCall): number {
  let chars = call.request.systemPrompt.length + JSON.stringify(call.request.tools).length;
  let images = 0;
  for (const message of call.request.messages) {
    const content = typeof message.content === "string" ? [message.content] : message.content;
    for (const block of content) {
      if (typeof block === "string") chars += block.length;
      else if (block.type === "text") chars += block.text.length;
      else if (block.type === "thinking") chars += block.thinking.length;
      else if (block.type === "toolCall") chars += JSON.stringify(block.arguments).length;
      else if (block.type === "image") images += 1;
    }
  }
  return Math.ceil(chars / CHARS_PER_TOKEN) + images * IMAGE_TOKENS;
}

/** The reservation of a call: estimated input plus the whole output limit it is sent with. */
/** `input`: the call's `estimateInputTokens`, when the caller has it already. */
export function toReservation(
  call: LLMCall,
  model: ModelLimits | undefined,
  input = estimateInputTokens(call),
): CallAmount {
  const output = model === undefined ? 0 : toOutputLimit(call, model);
  return { tokens: input + output, cost: price(model?.prices, input, output) };
}

/** Follows a call's events and says, at its end, what it used. */
export interface UsageMeter {
  see(event: ResponseEvent): void;
  /** What the call used, from its terminal event (reported, or estimated when cut short). */
  used(terminal: Extract<ResponseEvent, { type: "done" } | { type: "error" }>): CallAmount;
}

/**
 * `inputTokens`: the call's `estimateInputTokens`, taken before it is sent: the meter lives as
 * long as the call streams and keeps nothing of its request.
 */
export function createUsageMeter(inputTokens: number, model: ModelLimits | undefined): UsageMeter {
  let received = false;
  let outputChars = 0;
  return {
    see(event) {
      switch (event.type) {
        case "text_delta":
        case "thinking_delta":
        case "toolcall_delta":
          received = true;
          outputChars += event.delta.length;
          return;
        case "text_start":
        case "thinking_start":
        case "toolcall_start":
          received = true;
          return;
        default:
          return;
      }
    },
    used(terminal) {
      const message = terminal.type === "done" ? terminal.message : terminal.error;
      const reported = fromUsage(message.usage);
      if (terminal.type === "done" && reported.tokens > 0) return reported;
      if (!received) return reported;
      const output = Math.ceil(outputChars / CHARS_PER_TOKEN);
      const estimated = {
        tokens: inputTokens + output,
        cost: price(model?.prices, inputTokens, output),
      };
      return estimated.tokens > reported.tokens ? estimated : reported;
    },
  };
}

function fromUsage(usage: Usage | undefined): CallAmount {
  const count = (value: unknown) =>
    typeof value === "number" && Number.isFinite(value) && value > 0 ? value : 0;
  return {
    tokens:
      count(usage?.input) +
      count(usage?.output) +
      count(usage?.cacheRead) +
      count(usage?.cacheWrite),
    cost: count(usage?.cost?.total),
  };
}

function price(prices: ModelPrices | undefined, input: number, output: number): number {
  if (prices === undefined) return 0;
  return (input * prices.input + output * prices.output) / 1_000_000;
}
