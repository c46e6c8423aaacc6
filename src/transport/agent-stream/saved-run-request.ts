/**
 * The state a stream saves to be picked up after a restart: the run request that opened it, as
 * its protobuf bytes. The runner saves them with the stream's binding and the store keeps them in
 * a BLOB column (`request_streams.client_state`); this file is the one place they are encoded and
 * decoded.
 */
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  type AgentRunRequest,
  AgentRunRequestSchema,
} from "../cursor/gen/agent/v1/run_request_pb.js";
import { fromReceivedRunRequest } from "../cursor/index.ts";

export function toSavedRunRequest(request: AgentRunRequest): Uint8Array {
  // The bytes it came in, when the dialect kept them (cursor/run-request-bytes.ts).
  return fromReceivedRunRequest(request) ?? toBinary(AgentRunRequestSchema, request);
}

/** The saved run request, or `null` when the bytes are not one. */
export function fromSavedRunRequest(bytes: Uint8Array): AgentRunRequest | null {
  try {
    return fromBinary(AgentRunRequestSchema, bytes);
  } catch {
    return null;
  }
}
