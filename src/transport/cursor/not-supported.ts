/**
 * Requests the client may make that this server does not carry out yet, answered with an error
 * the client shows (ErrorDetails title and detail) instead of silence. Not retryable: asking
 * again cannot succeed.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorDetails_Error, ErrorDetailsSchema } from "./gen/aiserver/v1/error_details_pb.js";

export const NOT_SUPPORTED_TITLE = "Not supported by cursor-byok yet";

/** The `/summarize` action (compaction): protocol-coverage.md §6. */
export const SUMMARIZE_NOT_SUPPORTED =
  "Summarizing a conversation (compaction) is not supported yet. When a chat grows too long " +
  "for the model, start a new chat.";

export function toNotSupportedError(detail: string): ConnectError {
  return new ConnectError(`${NOT_SUPPORTED_TITLE}: ${detail}`, Code.Unimplemented, undefined, [
    {
      desc: ErrorDetailsSchema,
      value: {
        error: ErrorDetails_Error.CUSTOM_MESSAGE,
        details: { title: NOT_SUPPORTED_TITLE, detail, isRetryable: false },
        isExpected: true,
      },
    },
  ]);
}
