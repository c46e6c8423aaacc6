/**
 * A run request's own bytes, as the client sent them inside its `AgentClientMessage`: the stream
 * saves them as its state (agent-stream/saved-run-request.ts), so a turn start does not encode
 * the request it has just decoded again (issue #19: ≈20–100 µs before the model call). Decoding
 * them gives the same request as decoding an encoding of it would.
 */
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import type { AgentClientMessage } from "./gen/agent/v1/agent_stream_pb.js";
import type { AgentRunRequest } from "./gen/agent/v1/run_request_pb.js";

/** `agent.v1.AgentClientMessage.run_request`. */
const RUN_REQUEST_FIELD = 1;

const received = new WeakMap<AgentRunRequest, Uint8Array>();

/**
 * Remembers the bytes of the run request `message` was decoded from (`bytes`). Not when the
 * field occurs more than once: the decoder merged those parts, and only an encoding of the
 * merged request is its bytes.
 */
export function rememberRunRequestBytes(message: AgentClientMessage, bytes: Uint8Array): void {
  if (message.message.case !== "runRequest") return;
  let found: Uint8Array | undefined;
  try {
    const reader = new BinaryReader(bytes);
    while (reader.pos < reader.len) {
      const [field, wireType] = reader.tag();
      if (field === RUN_REQUEST_FIELD && wireType === WireType.LengthDelimited) {
        if (found !== undefined) return;
        found = reader.bytes();
      } else {
        reader.skip(wireType, field);
      }
    }
  } catch {
    return;
  }
  if (found !== undefined) received.set(message.message.value, ownBytes(found));
}

/**
 * `view` itself when its buffer holds little else (the decoded hex `data` of a BidiAppend, a
 * binary body around one message): the request's fields are views into that buffer anyway, and
 * copying a 500 KiB run request costs ≈100 µs at each turn start (issue #19). A copy when the
 * buffer is much larger (a shared pool slab, a read buffer of several messages), which the saved
 * bytes (kept by the memory store) would otherwise keep alive.
 */
function ownBytes(view: Uint8Array): Uint8Array {
  const spare = view.buffer.byteLength - view.length;
  return spare <= view.length / 8 ? view : new Uint8Array(view);
}

/** The bytes `request` was decoded from, when it came that way and was remembered. */
export function fromReceivedRunRequest(request: AgentRunRequest): Uint8Array | undefined {
  return received.get(request);
}
