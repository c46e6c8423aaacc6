/**
 * The result of turning client bytes into protocol values. Decoding never throws: bad input
 * (random bytes, truncated messages, bad hex, oversized or over-compressed bodies) becomes a
 * typed `DecodeError`, and nothing is decided or changed on the way.
 */

export type DecodeErrorReason =
  /** The body (or the message inside it) is empty. */
  | "empty"
  /** The body, or what it inflates to, exceeds the configured limit. */
  | "too_large"
  /** A content encoding or format the dialect does not speak. */
  | "bad_encoding"
  /** The body claims gzip but does not inflate. */
  | "bad_gzip"
  /** `BidiAppendRequest.data` is not hex. */
  | "bad_hex"
  /** The bytes are not a valid protobuf message of the expected type. */
  | "bad_protobuf"
  /** The body is not valid JSON for the expected message. */
  | "bad_json"
  /** A field the protocol requires is missing or out of range. */
  | "bad_field";

export interface DecodeError {
  readonly type: "decode_error";
  readonly reason: DecodeErrorReason;
  /** Safe to log and to return to the client: never contains message contents or secrets. */
  readonly message: string;
}

export type Decoded<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: DecodeError };

export function toDecoded<T>(value: T): Decoded<T> {
  return { ok: true, value };
}

export function toDecodeError(reason: DecodeErrorReason, message: string): Decoded<never> {
  return { ok: false, error: { type: "decode_error", reason, message } };
}
