/**
 * A history imported from the client's checkpoint (checkpoint-import.ts), sent to every API the
 * LLM layer speaks, against fake providers that refuse what the real ones refuse
 * (llm/testing/provider-rules.ts): each imported call paired with its result, ids the provider
 * accepts, no empty text, Gemini 3's signatures; the next request extends this one byte for byte.
 *
 * The checkpoint carries the ids Cursor recorded (`ToolCall.tool_call_id` and the arguments'
 * `tool_call_id`: an Anthropic id through Vertex, OpenAI's call and item ids, Kimi's
 * `functions.read_file:0`, a long one); none of them reaches a provider: an imported call gets
 * `imported_<turn>_<step>`, and Cursor's id is not one of its arguments.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { createModelConfig } from "../../llm/config.ts";
import { createLLM } from "../../llm/llm.ts";
import { readFixture, startFakeProvider } from "../../llm/testing/fake-provider.ts";
import {
  CONVERSATION_ID,
  type JsonRecord,
  PROVIDERS,
  type ProviderSpec,
} from "../../llm/testing/provider-specs.ts";
import { collect, terminalOf } from "../../llm/testing/streams.ts";
import type { Message, RequestMessages } from "../../llm/types.ts";
import { toImportedHistory } from "./checkpoint-import.ts";
import {
  ConversationStateStructureSchema,
  ConversationStepSchema,
  ConversationTurnStructureSchema,
} from "./gen/agent/v1/conversation_state_pb.js";
import { ToolCallSchema } from "./gen/agent/v1/tool_call_pb.js";
import { UserMessageSchema } from "./gen/agent/v1/user_message_pb.js";
import { toToolDefinitions } from "./tools/catalogue.ts";

const AT = 1_767_225_600_000;

/** Ids as Cursor's backend records them for its models' calls. */
const CURSOR_IDS = {
  vertex: "toolu_vrtx_01XJ5Q9k7nZgH8mR3pT2wY4s",
  responses:
    "call_FU6ZnNeGMaPoXWHqFZnyLN5n\nfc_68b0c9e1d2f3a4b5c6d7e8f90a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b",
  kimi: "functions.read_file:0",
  piped: "call_Qm3pX9sT2vW8yZ1aB4cD6eF0|fc_68c1f3b7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2c.v1:0",
} as const;

const user = (text: string) =>
  toBinary(UserMessageSchema, create(UserMessageSchema, { text, messageId: `m-${text}` }));
const stepOf = (message: Parameters<typeof create<typeof ConversationStepSchema>>[1]) =>
  toBinary(ConversationStepSchema, create(ConversationStepSchema, message));
const text = (value: string) =>
  stepOf({ message: { case: "assistantMessage", value: { text: value } } });
const thinking = (value: string) =>
  stepOf({ message: { case: "thinkingMessage", value: { text: value } } });
const read = (toolCallId: string, path: string, content: string | null) =>
  stepOf({
    message: {
      case: "toolCall",
      value: create(ToolCallSchema, {
        toolCallId,
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
  });
const shell = (toolCallId: string, command: string, exitCode: number, stdout: string) =>
  stepOf({
    message: {
      case: "toolCall",
      value: create(ToolCallSchema, {
        toolCallId,
        tool: {
          case: "shellToolCall",
          value: {
            args: { command, workingDirectory: "/work", toolCallId },
            result: {
              result:
                exitCode === 0
                  ? { case: "success", value: { command, exitCode, stdout } }
                  : { case: "failure", value: { command, exitCode, stderr: stdout } },
            },
          },
        },
      }),
    },
  });
const turn = (requestId: string, message: Uint8Array, steps: Uint8Array[]) =>
  toBinary(
    ConversationTurnStructureSchema,
    create(ConversationTurnStructureSchema, {
      turn: { case: "agentConversationTurn", value: { userMessage: message, steps, requestId } },
    }),
  );

/** Three turns of a chat run on Cursor's backend with several models. */
function importedMessages(): Message[] {
  const history = toImportedHistory(
    create(ConversationStateStructureSchema, {
      turns: [
        turn("req-1", user("What does a.ts export?"), [
          thinking("Read it first."),
          text("Reading it."),
          read(CURSOR_IDS.vertex, "a.ts", "export const a = 1;\n"),
          read(CURSOR_IDS.responses, "b.ts", "export const b = 2;\n"),
          text("\n"),
          text("`a` and `b`."),
        ]),
        turn("req-2", user("Run the tests."), [
          shell(CURSOR_IDS.kimi, "npm test", 1, "1 failing"),
          read(CURSOR_IDS.piped, "a.test.ts", null),
          shell(CURSOR_IDS.kimi, "npm test -- --grep a", 0, "1 passing"),
        ]),
        turn("req-3", user("Thanks"), [thinking("Nothing to do.")]),
      ],
    }),
    [],
    AT,
  );
  assert.deepEqual([history.skipped, history.dropped], [0, 0]);
  return history.turns.flatMap((t) => t.messages);
}

function request(messages: Message[]): RequestMessages {
  return {
    systemPrompt: "You are a coding agent.",
    tools: [...toToolDefinitions("agent", [])],
    messages,
  };
}

async function sendTwice(spec: ProviderSpec): Promise<string[]> {
  const fake = await startFakeProvider();
  try {
    const config = createModelConfig(spec.config(fake.url));
    const llm = createLLM({ models: [config] });
    let messages: Message[] = [
      ...importedMessages(),
      { role: "user", content: "And now?", timestamp: AT },
    ];
    for (const callID of ["after-import-1", "after-import-2"]) {
      fake.reply({ type: "sse", body: readFixture(spec.id, spec.fixtures.text) });
      const last = terminalOf(
        await collect(
          llm.stream({
            callID,
            model: config.name,
            request: request(messages),
            conversationID: CONVERSATION_ID,
          }),
        ),
      );
      assert.equal(
        last.type,
        "done",
        last.type === "error" ? `${spec.id} refused: ${last.error.errorMessage}` : undefined,
      );
      assert.ok(last.type === "done");
      messages = [
        ...messages,
        last.message,
        { role: "user", content: "Once more.", timestamp: AT },
      ];
    }
    return fake.requests.map((r) => r.body);
  } finally {
    await fake.close();
  }
}

function messageBytes(spec: ProviderSpec, body: string): string[] {
  return spec
    .messagesOf(JSON.parse(body) as JsonRecord)
    .map((message) =>
      JSON.stringify(message, (key, value: unknown) =>
        key === "cache_control" ? undefined : value,
      ),
    );
}

describe("an imported history sent to each API", () => {
  for (const spec of PROVIDERS) {
    test(`${spec.id}: accepted; Cursor's ids reach no provider; the next request extends it`, async () => {
      const [first, second] = await sendTwice(spec);
      assert.ok(first !== undefined && second !== undefined);
      for (const id of Object.values(CURSOR_IDS)) {
        assert.equal(first.includes(JSON.stringify(id).slice(1, -1)), false, `${id} is not sent`);
      }
      for (const id of ["imported_1_2", "imported_1_3", "imported_2_0", "imported_2_2"]) {
        assert.ok(first.includes(id), `${id} is sent`);
      }
      const before = messageBytes(spec, first);
      assert.deepEqual(messageBytes(spec, second).slice(0, before.length), before);
    });
  }
});
