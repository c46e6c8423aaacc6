/**
 * Each provider kind's context-length error as the provider sends it: status and body. The
 * bodies follow the providers' documented and observed error shapes (OpenAI `context_length_exceeded`,
 * Anthropic `invalid_request_error` "prompt is too long", Gemini `INVALID_ARGUMENT` "input token
 * count … exceeds the maximum", vLLM/OpenAI-compatible `BadRequestError`).
 */
import type { ProviderID } from "./provider-specs.ts";

export interface OverflowError {
  readonly status: number;
  readonly body: string;
}

export const OVERFLOW_ERRORS: Readonly<Record<ProviderID, OverflowError>> = {
  "openai-chat": {
    status: 400,
    body: JSON.stringify({
      error: {
        message:
          "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
        type: "invalid_request_error",
        param: "messages",
        code: "context_length_exceeded",
      },
    }),
  },
  "openai-responses": {
    status: 400,
    body: JSON.stringify({
      error: {
        message:
          "Your input exceeds the context window of this model. Please adjust your input and try again.",
        type: "invalid_request_error",
        param: "input",
        code: "context_length_exceeded",
      },
    }),
  },
  anthropic: {
    status: 400,
    body: JSON.stringify({
      type: "error",
      error: {
        type: "invalid_request_error",
        message: "prompt is too long: 213462 tokens > 200000 maximum",
      },
    }),
  },
  gemini: {
    status: 400,
    body: JSON.stringify({
      error: {
        code: 400,
        message:
          "The input token count (1196265) exceeds the maximum number of tokens allowed (1048576).",
        status: "INVALID_ARGUMENT",
      },
    }),
  },
  "openai-compatible": {
    status: 400,
    body: JSON.stringify({
      object: "error",
      message:
        "This model's maximum context length is 32768 tokens. However, you requested 33280 tokens (31232 in the messages, 2048 in the completion). Please reduce the length of the messages or completion.",
      type: "BadRequestError",
      param: null,
      code: 400,
    }),
  },
};
