/**
 * The client's turns as history (loop/fork.ts `ImportedTurn`), for a conversation this server has
 * no record of: a chat started on Cursor's own backend, or continued after our database was wiped
 * (docs/protocol.md "Rewinds"). Read only then, from the run request's checkpoint
 * (`conversation_state.turns`): each turn is an inline ConversationTurnStructure or the 32-byte
 * blob id of one in `pre_fetched_blobs`, as are its user message and steps (docs/protocol.md
 * §2.10). Best effort:
 *
 * - a turn: its user message's text, then its steps in order — an assistant message's text; a
 *   tool call with its result as a tool call of the catalogue's tool of that kind (arguments and
 *   result as the client recorded them, in the protocol's JSON form, results cut at
 *   `MAX_RESULT_CHARS`) and its result; a tool call without a result as a line of text (a call
 *   with no result is no valid history); thinking dropped;
 * - a turn that cannot be read (a blob not sent, bytes that do not decode, not an agent turn) is
 *   skipped and counted, never failing the turn; a step that cannot be read is skipped alike;
 * - bounded: the newest turns whose history fits `MAX_IMPORTED_CHARS` and `MAX_IMPORTED_TURNS`;
 *   when older turns are dropped, the first kept user message says so to the model.
 */
import { fromBinary, type JsonValue, toJson } from "@bufbuild/protobuf";
import type {
  AssistantMessage,
  JsonObject,
  Message,
  TextContent,
  ToolCall,
  ToolResultMessage,
} from "../../llm/types.ts";
import type { ImportedTurn } from "../../loop/index.ts";
import { type BlobStore, toBlobStore } from "./blobs.ts";
import {
  type ConversationStateStructure,
  ConversationStepSchema,
  ConversationTurnStructureSchema,
} from "./gen/agent/v1/conversation_state_pb.js";
import type { PreFetchedBlob } from "./gen/agent/v1/run_request_pb.js";
import { ToolCallSchema, type ToolCall as UiToolCall } from "./gen/agent/v1/tool_call_pb.js";
import { UserMessageSchema } from "./gen/agent/v1/user_message_pb.js";
import { BUILT_IN_TOOLS } from "./tools/catalogue.ts";

/** The most history imported, in characters of its JSON: the newest turns that fit. */
export const MAX_IMPORTED_CHARS = 256 * 1024;
/** The most turns imported (loop/rewind.ts keeps this many turn records). */
export const MAX_IMPORTED_TURNS = 50;
/** A tool call's arguments or result longer than this (as JSON) is cut. */
export const MAX_RESULT_CHARS = 4_000;

const BLOB_ID_BYTES = 32;

/** How assistant messages read from the client are marked: no provider's own reply. */
const IMPORTED = { api: "cursor-checkpoint", provider: "cursor", model: "imported" } as const;

export interface ImportedHistory {
  readonly turns: readonly ImportedTurn[];
  /** Turns that could not be read. */
  readonly skipped: number;
  /** Turns read but left out, oldest first, to stay within the bounds. */
  readonly dropped: number;
}

/** The catalogue's tool of each UI tool kind (`ToolCall.tool` case → the model's tool name). */
const TOOL_NAMES: ReadonlyMap<string, string> = new Map(
  BUILT_IN_TOOLS.flatMap((tool) => {
    const kind = tool.preview().case;
    return kind === undefined ? [] : [[kind, tool.name] as const];
  }),
);

export function toImportedHistory(
  state: ConversationStateStructure | undefined,
  prefetched: readonly PreFetchedBlob[],
  at: number,
): ImportedHistory {
  const turns = state?.turns ?? [];
  if (turns.length === 0) return { turns: [], skipped: 0, dropped: 0 };
  const blobs = toBlobStore(prefetched);
  const read: ImportedTurn[] = [];
  let skipped = 0;
  for (const [index, bytes] of turns.entries()) {
    const turn = readTurn(bytes, blobs, index + 1, at);
    if (turn === null) skipped += 1;
    else read.push(turn);
  }
  // The newest turns that fit.
  let chars = 0;
  let first = read.length;
  while (first > 0 && read.length - first < MAX_IMPORTED_TURNS) {
    const size = JSON.stringify((read[first - 1] as ImportedTurn).messages).length;
    if (chars + size > MAX_IMPORTED_CHARS) break;
    chars += size;
    first -= 1;
  }
  const kept = read.slice(first);
  const dropped = first;
  return { turns: dropped > 0 ? withDroppedNote(kept, dropped) : kept, skipped, dropped };
}

/**
 * Bytes that are either inline or a blob id sent in `pre_fetched_blobs`. A 32-byte value whose
 * blob was not sent is decoded as it is (an inline message of exactly 32 bytes), which for a blob
 * id fails or reads as nothing: that turn or step is then skipped or empty.
 */
function resolve(bytes: Uint8Array, blobs: BlobStore): Uint8Array {
  if (bytes.length !== BLOB_ID_BYTES) return bytes;
  return blobs.get(Buffer.from(bytes).toString("hex")) ?? bytes;
}

function readTurn(
  bytes: Uint8Array,
  blobs: BlobStore,
  number: number,
  at: number,
): ImportedTurn | null {
  try {
    const structure = fromBinary(ConversationTurnStructureSchema, resolve(bytes, blobs)).turn;
    if (structure.case !== "agentConversationTurn") return null;
    const turn = structure.value;
    const text = fromBinary(UserMessageSchema, resolve(turn.userMessage, blobs)).text;
    // Some providers refuse an empty text: a turn without one still gets a user message.
    const messages: Message[] = [
      { role: "user", content: text === "" ? "(no message text)" : text, timestamp: at },
    ];
    let content: (TextContent | ToolCall)[] = [];
    const flush = (stopReason: "stop" | "toolUse") => {
      if (content.length === 0) return;
      messages.push(toAssistant(content, stopReason, at));
      content = [];
    };
    for (const [index, step] of turn.steps.entries()) {
      let read: ReturnType<typeof readStep>;
      try {
        read = readStep(step, blobs, `imported_${number}_${index}`, at);
      } catch {
        continue; // a step that does not decode: the rest of the turn is still worth having
      }
      if (read === null) continue;
      if (read.type === "text") {
        if (read.text !== "") content.push({ type: "text", text: read.text });
        continue;
      }
      content.push(read.call);
      flush("toolUse");
      messages.push(read.result);
    }
    flush("stop");
    // Nothing readable (a user message whose blob was not sent, and no step).
    if (text === "" && messages.length === 1) return null;
    return { origin: turn.requestId ?? "", messages };
  } catch {
    return null;
  }
}

type Step =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "tool"; readonly call: ToolCall; readonly result: ToolResultMessage };

/**
 * One step: an assistant message's text; a tool call with its result (`id`: the call's id); a
 * tool call without one as text; thinking: null (it was the model's, not for another to replay).
 */
function readStep(bytes: Uint8Array, blobs: BlobStore, id: string, at: number): Step | null {
  const step = fromBinary(ConversationStepSchema, resolve(bytes, blobs)).message;
  if (step.case === "assistantMessage") return { type: "text", text: step.value.text };
  if (step.case !== "toolCall" || step.value.tool.case === undefined) return null;
  const call = step.value;
  const kind = call.tool.case ?? "";
  const name = TOOL_NAMES.get(kind) ?? kind;
  const args = toJsonOf(call, "args");
  if ((call.tool.value as { result?: unknown }).result === undefined) {
    return { type: "text", text: `[${name} ${JSON.stringify(args)}: no result recorded]` };
  }
  const result = toJsonOf(call, "result");
  return {
    type: "tool",
    call: { type: "toolCall", id, name, arguments: args },
    result: {
      role: "toolResult",
      toolCallId: id,
      toolName: name,
      content: [{ type: "text", text: cut(JSON.stringify(result)) }],
      isError: isErrorResult(result),
      timestamp: at,
    },
  };
}

/** The tool call's `args` or `result` in the protocol's JSON form, as an object. */
function toJsonOf(call: UiToolCall, field: "args" | "result"): JsonObject {
  const json = toJson(ToolCallSchema, call) as Record<string, JsonValue>;
  const kind = Object.values(json)[0];
  const value =
    typeof kind === "object" && kind !== null && !Array.isArray(kind) ? kind[field] : undefined;
  if (value === undefined || value === null) return {};
  const object =
    typeof value === "object" && !Array.isArray(value)
      ? withoutClientIds(value as JsonObject)
      : { value: value as JsonObject[string] };
  const text = JSON.stringify(object);
  return text.length > MAX_RESULT_CHARS ? { cut: cut(text) } : object;
}

/**
 * The arguments without the client's own id of the call (`tool_call_id` of e.g. ShellArgs): it
 * is Cursor's bookkeeping, no argument of our tool, and the imported call has its own id
 * (`imported_<turn>_<step>`), so no provider sees an id it did not make (docs/protocol.md
 * "Rewinds").
 */
function withoutClientIds(value: JsonObject): JsonObject {
  if (!Object.hasOwn(value, "toolCallId")) return value;
  const { toolCallId: _, ...rest } = value;
  return rest;
}

function isErrorResult(result: JsonObject): boolean {
  return Object.keys(result).some((key) => key === "error" || key.endsWith("Error"));
}

function cut(text: string): string {
  return text.length <= MAX_RESULT_CHARS
    ? text
    : `${text.slice(0, MAX_RESULT_CHARS)}… [cut: ${text.length - MAX_RESULT_CHARS} more characters]`;
}

function toAssistant(
  content: (TextContent | ToolCall)[],
  stopReason: "stop" | "toolUse",
  at: number,
): AssistantMessage {
  return {
    role: "assistant",
    content,
    ...IMPORTED,
    usage: {
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason,
    timestamp: at,
  };
}

/** The first kept turn's user message, saying that older turns were left out. */
function withDroppedNote(turns: readonly ImportedTurn[], dropped: number): ImportedTurn[] {
  const [first, ...rest] = turns;
  if (first === undefined) return [];
  const [user, ...others] = first.messages;
  const note =
    `[${dropped} earlier turn${dropped === 1 ? "" : "s"} of this chat, from before this server ` +
    "kept it, are not shown here.]\n\n";
  const noted: Message =
    user?.role === "user" && typeof user.content === "string"
      ? { ...user, content: `${note}${user.content}` }
      : { role: "user", content: note.trim(), timestamp: user?.timestamp ?? 0 };
  return [
    {
      ...first,
      messages:
        user?.role === "user" && typeof user.content === "string"
          ? [noted, ...others]
          : [noted, ...first.messages],
    },
    ...rest,
  ];
}
