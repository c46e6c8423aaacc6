/**
 * The IDE's clone of a chat (fork, "duplicate chat", best-of-N: its `deepCloneComposer`), as a
 * check, for each checkpoint it keeps (the chat's and each user message's): every entry of
 * `turns` is looked up in the client's blob store, and in each agent turn blob its
 * `user_message`; an empty id or a miss is the error the IDE throws ("[composer] Missing turn
 * blob" / "Missing user message blob id" / "Missing user message blob"). The IDE's clone leaves
 * steps alone; they are checked here too, since the server and other features read them. The
 * store holds only blobs whose id is the SHA-256 of their bytes (turn.ts verifies each
 * `set_blob_args`), so a found id resolves to exactly the bytes the server wrote
 * (docs/protocol.md §2.9, §2.10).
 */
import { createHash } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import {
  type ConversationStateStructure,
  ConversationStepSchema,
  ConversationTurnStructureSchema,
} from "../cursor/gen/agent/v1/conversation_state_pb.js";
import { UserMessageSchema } from "../cursor/gen/agent/v1/user_message_pb.js";

export interface ClonedTurn {
  readonly requestID: string | undefined;
  readonly userText: string;
  readonly steps: number;
}

/** The checkpoint's turns as the clone reads them; throws the IDE's error on a missing blob. */
export function cloneCheckpoint(
  checkpoint: ConversationStateStructure,
  store: ReadonlyMap<string, Uint8Array>,
): ClonedTurn[] {
  return checkpoint.turns.map((id, index) => {
    if (id.length === 0) {
      throw new Error("[composer] Missing turn blob id while cloning conversation state");
    }
    const bytes = lookUp(store, id, `[composer] Missing turn blob (turn ${index})`);
    const turn = fromBinary(ConversationTurnStructureSchema, bytes).turn;
    if (turn.case !== "agentConversationTurn") {
      throw new Error(`turn ${index} is not an agent turn (${turn.case ?? "none"})`);
    }
    const { userMessage, steps, requestId } = turn.value;
    if (userMessage.length === 0) {
      throw new Error(`[composer] Missing user message blob id for turn ${index}`);
    }
    const user = fromBinary(
      UserMessageSchema,
      lookUp(store, userMessage, `[composer] Missing user message blob (turn ${index})`),
    );
    for (const [at, step] of steps.entries()) {
      fromBinary(
        ConversationStepSchema,
        lookUp(store, step, `[composer] Missing step blob (turn ${index}, step ${at})`),
      );
    }
    return { requestID: requestId, userText: user.text, steps: steps.length };
  });
}

/** The SHA-256 of `bytes`, as the store's key (lowercase hex). */
export function toBlobKey(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function lookUp(store: ReadonlyMap<string, Uint8Array>, id: Uint8Array, missing: string) {
  if (id.length !== 32) throw new Error(`${missing}: not a blob id (${id.length} bytes)`);
  const bytes = store.get(Buffer.from(id).toString("hex"));
  if (bytes === undefined) throw new Error(missing);
  if (toBlobKey(bytes) !== Buffer.from(id).toString("hex")) {
    throw new Error(`${missing}: the stored bytes do not hash to the id`);
  }
  return bytes;
}
