/**
 * The client's checkpoint turns as history (checkpoint-import.ts): inline and blob-backed turns,
 * user text, assistant text, a tool call with its result as a catalogue tool call and its result,
 * a call without a result as text, thinking dropped; unreadable turns and steps skipped, never
 * thrown; the newest turns kept within the bounds, with a note to the model.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { toBlobID } from "./blobs.ts";
import {
  MAX_IMPORTED_CHARS,
  MAX_IMPORTED_TURNS,
  MAX_RESULT_CHARS,
  toImportedHistory,
} from "./checkpoint-import.ts";
import {
  ConversationStateStructureSchema,
  ConversationStepSchema,
  ConversationTurnStructureSchema,
} from "./gen/agent/v1/conversation_state_pb.js";
import { PreFetchedBlobSchema } from "./gen/agent/v1/run_request_pb.js";
import { ToolCallSchema } from "./gen/agent/v1/tool_call_pb.js";
import { UserMessageSchema } from "./gen/agent/v1/user_message_pb.js";

const AT = 1_767_225_600_000;

const userBytes = (text: string) =>
  toBinary(UserMessageSchema, create(UserMessageSchema, { text, messageId: `id-of-${text}` }));
const textStep = (text: string) =>
  toBinary(
    ConversationStepSchema,
    create(ConversationStepSchema, { message: { case: "assistantMessage", value: { text } } }),
  );
const thinkingStep = (text: string) =>
  toBinary(
    ConversationStepSchema,
    create(ConversationStepSchema, { message: { case: "thinkingMessage", value: { text } } }),
  );
const readStep = (path: string, content: string | null) =>
  toBinary(
    ConversationStepSchema,
    create(ConversationStepSchema, {
      message: {
        case: "toolCall",
        value: create(ToolCallSchema, {
          tool: {
            case: "readToolCall",
            value: {
              args: { path },
              ...(content === null
                ? {}
                : {
                    result: {
                      result: {
                        case: "success",
                        value: { output: { case: "content", value: content } },
                      },
                    },
                  }),
            },
          },
        }),
      },
    }),
  );
const turnBytes = (requestId: string, user: Uint8Array, steps: Uint8Array[]) =>
  toBinary(
    ConversationTurnStructureSchema,
    create(ConversationTurnStructureSchema, {
      turn: { case: "agentConversationTurn", value: { userMessage: user, steps, requestId } },
    }),
  );
const blob = (bytes: Uint8Array) =>
  create(PreFetchedBlobSchema, { id: Buffer.from(toBlobID(bytes), "hex"), value: bytes });
const idOf = (bytes: Uint8Array) => new Uint8Array(Buffer.from(toBlobID(bytes), "hex"));
const checkpoint = (turns: Uint8Array[]) => create(ConversationStateStructureSchema, { turns });

test("inline turns: user text, assistant text, a read with its result, thinking dropped", () => {
  const history = toImportedHistory(
    checkpoint([
      turnBytes("req-1", userBytes("look at a.ts"), [
        thinkingStep("hmm"),
        textStep("Reading it."),
        readStep("a.ts", "export const a = 1;\n"),
        textStep("It exports a."),
      ]),
      turnBytes("req-2", userBytes("thanks"), [textStep("You're welcome.")]),
    ]),
    [],
    AT,
  );
  assert.deepEqual([history.skipped, history.dropped], [0, 0]);
  assert.deepEqual(
    history.turns.map((turn) => turn.origin),
    ["req-1", "req-2"],
  );
  const [first] = history.turns;
  assert.deepEqual(
    first?.messages.map((message) => message.role),
    ["user", "assistant", "toolResult", "assistant"],
  );
  assert.deepEqual(first?.messages[0], { role: "user", content: "look at a.ts", timestamp: AT });
  const call = first?.messages[1];
  assert.ok(call?.role === "assistant");
  assert.deepEqual(call.content, [
    { type: "text", text: "Reading it." },
    { type: "toolCall", id: "imported_1_2", name: "read_file", arguments: { path: "a.ts" } },
  ]);
  assert.equal(call.stopReason, "toolUse");
  const result = first?.messages[2];
  assert.ok(result?.role === "toolResult");
  assert.equal(result.toolCallId, "imported_1_2");
  assert.equal(result.toolName, "read_file");
  assert.equal(result.isError, false);
  assert.match(JSON.stringify(result.content), /export const a = 1;/);
  const last = first?.messages[3];
  assert.ok(last?.role === "assistant");
  assert.deepEqual(last.content, [{ type: "text", text: "It exports a." }]);
});

test("blob-backed turns resolve through pre_fetched_blobs; a blob not sent or bytes that do not decode are skipped", () => {
  const user = userBytes("from blobs");
  const step = textStep("blob answer");
  const turn = turnBytes("req-b", idOf(user), [idOf(step)]);
  const missing = turnBytes("req-m", userBytes("x"), []);
  const history = toImportedHistory(
    checkpoint([idOf(turn), idOf(missing), new Uint8Array([0xff, 0xff, 0xff, 0x07]), turn]),
    [blob(turn), blob(user), blob(step)],
    AT,
  );
  assert.equal(history.skipped, 2);
  assert.deepEqual(
    history.turns.map((t) => [t.origin, t.messages.map((m) => m.role)]),
    [
      ["req-b", ["user", "assistant"]],
      ["req-b", ["user", "assistant"]],
    ],
  );
});

test("a call without a result is text; a long result is cut", () => {
  const long = "x".repeat(MAX_RESULT_CHARS * 2);
  const history = toImportedHistory(
    checkpoint([turnBytes("r", userBytes("go"), [readStep("b.ts", null), readStep("c.ts", long)])]),
    [],
    AT,
  );
  const messages = history.turns[0]?.messages ?? [];
  const first = messages[1];
  assert.ok(first?.role === "assistant");
  assert.deepEqual(first.content[0], {
    type: "text",
    text: '[read_file {"path":"b.ts"}: no result recorded]',
  });
  const result = messages[2];
  assert.ok(result?.role === "toolResult");
  const text = JSON.stringify(result.content);
  assert.ok(text.length < MAX_RESULT_CHARS + 200);
  assert.match(text, /\[cut: \d+ more characters\]/);
});

test("bounded: the newest turns that fit, with a note to the model about the rest", () => {
  const many = Array.from({ length: MAX_IMPORTED_TURNS + 5 }, (_, i) =>
    turnBytes(`r${i}`, userBytes(`message ${i}`), [textStep(`answer ${i}`)]),
  );
  const history = toImportedHistory(checkpoint(many), [], AT);
  assert.equal(history.turns.length, MAX_IMPORTED_TURNS);
  assert.equal(history.dropped, 5);
  assert.equal(history.turns.at(-1)?.origin, `r${MAX_IMPORTED_TURNS + 4}`);
  const first = history.turns[0]?.messages[0];
  assert.ok(first?.role === "user" && typeof first.content === "string");
  assert.match(
    first.content,
    /^\[5 earlier turns of this chat.*are not shown here\.\]\n\nmessage 5$/s,
  );
  // By size: a turn larger than the bound leaves only the newer ones.
  const big = turnBytes("big", userBytes("y".repeat(MAX_IMPORTED_CHARS)), []);
  const sized = toImportedHistory(
    checkpoint([big, turnBytes("small", userBytes("hi"), [])]),
    [],
    AT,
  );
  assert.deepEqual(
    sized.turns.map((turn) => turn.origin),
    ["small"],
  );
  assert.equal(sized.dropped, 1);
  // No checkpoint, or no turns: nothing, nothing skipped.
  assert.deepEqual(toImportedHistory(undefined, [], AT), { turns: [], skipped: 0, dropped: 0 });
});

test("a turn without user text keeps its steps under a placeholder; one without anything is skipped", () => {
  const history = toImportedHistory(
    checkpoint([
      turnBytes("r1", userBytes(""), [textStep("an answer")]),
      turnBytes("r2", userBytes(""), [thinkingStep("only thinking")]),
    ]),
    [],
    AT,
  );
  assert.equal(history.skipped, 1);
  assert.deepEqual(history.turns[0]?.messages[0], {
    role: "user",
    content: "(no message text)",
    timestamp: AT,
  });
});
