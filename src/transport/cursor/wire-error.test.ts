import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fromBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { errorToJson } from "@connectrpc/connect/protocol-connect";
import { ErrorDetails_Error, ErrorDetailsSchema } from "./gen/aiserver/v1/error_details_pb.js";
import {
  classifyProviderError,
  type FailureKind,
  isRetryable,
  redactSecrets,
  toConnectError,
  toProtocolError,
  WIRE_ERRORS,
} from "./wire-error.ts";

test("provider errors are classified by what a retry could change", () => {
  const cases: [string, FailureKind][] = [
    ["429 Too Many Requests", "rate_limited"],
    ["Rate limit reached for gpt-5", "rate_limited"],
    ["401 Unauthorized: invalid x-api-key", "auth"],
    ["Incorrect API key provided", "auth"],
    ["This model's maximum context length is 128000 tokens", "context_length"],
    ["prompt is too long: 210000 tokens > 200000 maximum", "context_length"],
    ["The model `gpt-9` does not exist", "bad_model"],
    ["Request timed out", "timeout"],
    ["529 Overloaded", "overloaded"],
    ["503 Service Unavailable", "overloaded"],
    ["fetch failed: ECONNREFUSED 127.0.0.1:1", "network"],
    ["400 Bad Request: messages.1.content is empty", "bad_request"],
    ["something odd happened", "provider"],
  ];
  for (const [message, kind] of cases)
    assert.equal(classifyProviderError(message).kind, kind, message);
});

test("only transient failures are retryable", () => {
  const retryable = (["rate_limited", "timeout", "overloaded", "network"] as const).every(
    isRetryable,
  );
  assert.ok(retryable);
  for (const kind of [
    "auth",
    "bad_model",
    "context_length",
    "bad_request",
    "provider",
    "bad_input",
    "internal",
    "canceled",
  ] as const) {
    assert.equal(isRetryable(kind), false, kind);
  }
});

test("the Connect error carries aiserver.v1.ErrorDetails with title, detail and is_retryable", () => {
  const error = toConnectError(classifyProviderError("503 upstream unavailable"));
  assert.equal(error.code, Code.Unavailable);
  const json = errorToJson(error, undefined) as {
    code: string;
    details: { type: string; value: string }[];
  };
  assert.equal(json.code, "unavailable");
  assert.equal(json.details[0]?.type, "aiserver.v1.ErrorDetails");
  const details = fromBinary(
    ErrorDetailsSchema,
    Buffer.from(json.details[0]?.value ?? "", "base64"),
  );
  assert.equal(details.error, ErrorDetails_Error.PROVIDER_ERROR);
  assert.equal(details.details?.title, "The model provider is overloaded or unavailable");
  assert.equal(details.details?.detail, "503 upstream unavailable");
  assert.equal(details.details?.isRetryable, true);
  assert.equal(details.isExpected, true);
});

test("codes: canceled, internal and bad client input", () => {
  assert.equal(toConnectError({ kind: "canceled", detail: "" }).code, Code.Canceled);
  assert.equal(toConnectError({ kind: "internal", detail: "bug" }).code, Code.Internal);
  assert.equal(
    toConnectError({ kind: "bad_input", detail: "no conversation_id" }).code,
    Code.InvalidArgument,
  );
  const [internal] = toConnectError({ kind: "internal", detail: "bug" }).findDetails(
    ErrorDetailsSchema,
  );
  assert.equal(internal?.isExpected, false);
});

test("secrets in provider messages never reach the wire", () => {
  const message =
    "401: Incorrect API key provided: sk-proj-abcdef1234567890XYZ. Authorization: Bearer abcdefghijk123 api_key=zzzzzzzzzz99 AIzaSyA1234567890abcdefghijklmnop";
  const redacted = redactSecrets(message);
  for (const secret of [
    "sk-proj-abcdef1234567890XYZ",
    "abcdefghijk123",
    "zzzzzzzzzz99",
    "AIzaSyA1234567890abcdefghijklmnop",
  ]) {
    assert.ok(!redacted.includes(secret), secret);
  }
  assert.match(redacted, /Bearer \[redacted\]/);
  assert.match(redacted, /api_key=\[redacted\]/);
  const error = toConnectError(classifyProviderError(message));
  assert.ok(!error.message.includes("sk-proj-abcdef1234567890XYZ"));
  const [details] = error.findDetails(ErrorDetailsSchema);
  assert.ok(!(details?.details?.detail ?? "").includes("abcdefghijk123"));
  assert.equal(
    toConnectError({ kind: "provider", detail: "key sk-abcdefghij1234 leaked" }).message.includes(
      "sk-abcdefghij1234",
    ),
    false,
  );
});

test("ordinary text is left alone", () => {
  assert.equal(redactSecrets("model gpt-5 not found; see docs"), "model gpt-5 not found; see docs");
});

test("docs/wire-errors.md lists every wire error with its code and ErrorDetails", () => {
  const doc = readFileSync(new URL("../../../docs/wire-errors.md", import.meta.url), "utf8");
  const documented = [
    ...doc.matchAll(/^\| `([a-z_]+)` +\| `([a-z_]+)` +\| `?([A-Z_]+|—)`? +\|/gm),
  ].map((match) => [match[1], match[2], match[3]]);
  const codeName = (code: Code): string =>
    Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
  assert.deepEqual(
    documented,
    Object.entries(WIRE_ERRORS).map(([name, row]) => [
      name,
      codeName(row.code),
      row.details === null ? "—" : ErrorDetails_Error[row.details],
    ]),
  );
});

test("no model is configured: failed_precondition wherever it is said", () => {
  const error = toProtocolError({ type: "no_model" });
  assert.equal(error.code, Code.FailedPrecondition);
  assert.equal(error.rawMessage, "no model is configured");
});
