/**
 * When an `AgentClientMessage` fails to decode, the ids of the exec it answers can often still be
 * read: a client that encodes one field of a result wrongly (e.g. `LsSuccess` field 1 as a
 * string) breaks the whole message, but `exec_client_message` (field 2) with its `id` (1) and
 * `exec_id` (15) is intact. Reading them lets the server fail that one tool call with an error
 * the model sees, instead of leaving the turn waiting for a result that never decodes.
 */
import { create } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import {
  type AgentClientMessage,
  AgentClientMessageSchema,
} from "./gen/agent/v1/agent_stream_pb.js";

const EXEC_CLIENT_MESSAGE = 2;
const EXEC_NUMBER = 1;
const EXEC_ID = 15;

/** The exec ids an undecodable client message carries, or null when it carries none. */
export function readExecIDs(bytes: Uint8Array): { id: number; execID: string } | null {
  try {
    const message = new BinaryReader(bytes);
    while (message.pos < message.len) {
      const [no, wireType] = message.tag();
      if (no !== EXEC_CLIENT_MESSAGE || wireType !== WireType.LengthDelimited) {
        message.skip(wireType, no);
        continue;
      }
      const exec = new BinaryReader(message.bytes());
      let id = 0;
      let execID = "";
      while (exec.pos < exec.len) {
        const [field, type] = exec.tag();
        if (field === EXEC_NUMBER && type === WireType.Varint) id = exec.uint32();
        else if (field === EXEC_ID && type === WireType.LengthDelimited) execID = exec.string();
        else exec.skip(type, field);
      }
      return id === 0 && execID === "" ? null : { id, execID };
    }
    return null;
  } catch {
    // Broken framing around the exec ids too: nothing to salvage.
    return null;
  }
}

/**
 * The stand-in for an exec result that could not be decoded: the client's `throw` for that exec,
 * which fails the tool call with `error` (the tool may have run; the model is told so).
 */
export function toUndecodableResult(exec: { id: number; execID: string }): AgentClientMessage {
  return create(AgentClientMessageSchema, {
    message: {
      case: "execClientControlMessage",
      value: {
        message: {
          case: "throw",
          value: {
            id: exec.id,
            error:
              "it ran, but its result could not be decoded by the server (the client sent a malformed result), so it may have taken effect; check before retrying",
          },
        },
      },
    },
  });
}
