/**
 * Test helpers for the dialect: request builders (an IDE and a CLI run request), a turn state,
 * a driver that runs one tool call through the tool session with scripted client replies, and
 * golden-byte fixtures (`UPDATE_GOLDEN=1` rewrites them; otherwise a mismatch fails).
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import type { JsonObject, ToolResultMessage } from "../../llm/types.ts";
import type { CallClientCommand } from "../../loop/types.ts";
import { fromClientMessage } from "./client-message.ts";
import {
  type AgentClientMessage,
  AgentClientMessageSchema,
  type AgentServerMessage,
} from "./gen/agent/v1/agent_stream_pb.js";
import { AgentMode } from "./gen/agent/v1/common_pb.js";
import {
  type ExecClientMessage,
  ExecClientMessageSchema,
  type ExecServerMessage,
} from "./gen/agent/v1/exec_pb.js";
import type { InteractionResponseSchema } from "./gen/agent/v1/interaction_query_pb.js";
import { type AgentRunRequest, AgentRunRequestSchema } from "./gen/agent/v1/run_request_pb.js";
import { fromRunRequest } from "./run-request.ts";
import { continueToolCall, startToolCall, type ToolStep } from "./tool-session.ts";
import type { TurnState } from "./turn-state.ts";

export const T0 = 1_767_225_600_000;
export const CONVERSATION_ID = "8f0c1a6e-5d2b-4c1e-9a7f-3b2d1c0e9f8a";
export const REQUEST_ID = "2b7e4c1a-9d3f-4e8b-a6c5-1f0e9d8c7b6a";
export const WORKSPACE = "/home/dev/project";

/**
 * A run request as the IDE sends it (harness cursor-ide, request context, MCP tools); `edit`
 * may change the fresh message before it is returned.
 */
export function ideRunRequest(
  edit: (request: AgentRunRequest) => void = () => {},
): AgentRunRequest {
  const base: RunRequestInit = {
    conversationId: CONVERSATION_ID,
    harness: "cursor-ide",
    modelDetails: {
      modelId: "claude-sonnet",
      displayModelId: "claude-sonnet",
      displayName: "Claude Sonnet",
    },
    requestedModel: { modelId: "claude-sonnet", parameters: [{ id: "thinking", value: "high" }] },
    mcpTools: {
      mcpTools: [
        {
          name: "github-create_issue",
          description: "Create a GitHub issue.",
          providerIdentifier: "github",
          toolName: "create_issue",
          inputSchemaJson: JSON.stringify({
            type: "object",
            required: ["title"],
            properties: { title: { type: "string" }, body: { type: "string" } },
          }),
        },
      ],
    },
    action: {
      action: {
        case: "userMessageAction",
        value: {
          userMessage: {
            text: "Fix the failing test in src/math.ts",
            messageId: "msg-1",
            mode: AgentMode.AGENT,
            selectedContext: {
              files: [
                {
                  path: `${WORKSPACE}/src/math.ts`,
                  content: "export const add = (a, b) => a - b;\n",
                },
              ],
            },
          },
          requestContext: {
            env: {
              osVersion: "linux 6.8.0",
              workspacePaths: [WORKSPACE],
              shell: "bash",
              timeZone: "Europe/Berlin",
            },
            rules: [
              {
                fullPath: `${WORKSPACE}/.cursor/rules/style.mdc`,
                content: "Use two-space indentation.",
                type: { type: { case: "global", value: {} } },
              },
            ],
            gitRepos: [{ path: WORKSPACE, branchName: "main", status: "M src/math.ts" }],
          },
        },
      },
    },
  };
  const request = create(AgentRunRequestSchema, base);
  edit(request);
  return request;
}

export type RunRequestInit = MessageInitShape<typeof AgentRunRequestSchema>;

/** A run request as the CLI sends it: no harness, model in model_details, minimal context. */
export function cliRunRequest(): AgentRunRequest {
  return create(AgentRunRequestSchema, {
    conversationId: "c0ffee00-0000-4000-8000-000000000001",
    modelDetails: { modelId: "gpt-5", displayModelId: "gpt-5", displayName: "GPT-5" },
    action: {
      action: {
        case: "userMessageAction",
        value: {
          userMessage: { text: "list the files", messageId: "cli-msg-1", mode: AgentMode.AGENT },
          requestContext: {
            env: { osVersion: "darwin 24.1.0", workspacePaths: ["/Users/dev/app"], shell: "zsh" },
          },
        },
      },
    },
  });
}

/** The turn state of a fresh IDE run request in `mode`. */
export function turnState(overrides: Partial<TurnState> = {}): TurnState {
  const start = fromRunRequest(ideRunRequest(), "user_message", {
    at: T0,
    inputID: `${REQUEST_ID}:0`,
    requestID: REQUEST_ID,
    contextWindow: 200_000,
  });
  assert.ok(start.ok, "the IDE run request is valid");
  return { ...start.value.state, modelCallID: `${CONVERSATION_ID}:t1:c0`, ...overrides };
}

export function callClient(
  name: string,
  args: JsonObject,
  toolCallID = "toolu_01",
): CallClientCommand {
  return {
    type: "call_client",
    operationID: `${CONVERSATION_ID}:t1:c0:${toolCallID}`,
    toolCall: { type: "toolCall", id: toolCallID, name, arguments: args },
  };
}

/** A client reply to the exec the tool call is waiting on. */
export function execReply(
  state: TurnState,
  message: MessageInitShape<typeof ExecClientMessageSchema>["message"],
): AgentClientMessage {
  const awaiting = state.open.at(-1)?.awaiting;
  assert.ok(awaiting?.type === "exec", "a tool call waits on an exec");
  const exec: ExecClientMessage = create(ExecClientMessageSchema, {
    id: awaiting.id,
    execId: awaiting.execID,
    message,
  });
  return create(AgentClientMessageSchema, { message: { case: "execClientMessage", value: exec } });
}

/** A client answer to the interaction query the tool call is waiting on. */
export function queryReply(
  state: TurnState,
  result: MessageInitShape<typeof InteractionResponseSchema>["result"],
): AgentClientMessage {
  const awaiting = state.open.at(-1)?.awaiting;
  assert.ok(awaiting?.type === "query", "a tool call waits on a query");
  return create(AgentClientMessageSchema, {
    message: { case: "interactionResponse", value: { id: awaiting.id, result } },
  });
}

export interface ToolRun {
  /** Every message sent to the client, in order. */
  readonly messages: AgentServerMessage[];
  /** The exec / query messages among them. */
  readonly requests: AgentServerMessage[];
  readonly result: ToolResultMessage;
  readonly state: TurnState;
}

export type Reply = (state: TurnState) => AgentClientMessage;

/**
 * Runs one tool call: start, then each scripted reply (built from the state at that point),
 * until the call finishes. Fails when it does not finish with exactly these replies.
 */
export function runTool(
  name: string,
  args: JsonObject,
  replies: Reply[],
  state: TurnState = turnState(),
): ToolRun {
  const messages: AgentServerMessage[] = [];
  let step: ToolStep = startToolCall(state, callClient(name, args), {
    at: T0 + 1,
    inputID: "in-0",
  });
  assert.equal(step.ignored, null);
  messages.push(...step.messages);
  replies.forEach((reply, index) => {
    assert.equal(step.input, null, `the call finished before reply ${index}`);
    const event = fromClientMessage(reply(step.state));
    step = continueToolCall(step.state, event, { at: T0 + 2 + index, inputID: `in-${index + 1}` });
    assert.equal(step.ignored, null, `reply ${index} was ignored: ${step.ignored}`);
    messages.push(...step.messages);
  });
  assert.ok(step.input !== null, "the tool call finished");
  return {
    messages,
    requests: messages.filter(
      (message) =>
        message.message.case === "execServerMessage" || message.message.case === "interactionQuery",
    ),
    result: step.input.message,
    state: step.state,
  };
}

/** The text the model sees for a tool result. */
export function resultText(result: ToolResultMessage): string {
  return result.content
    .map((block) => (block.type === "text" ? block.text : `[image ${block.mimeType}]`))
    .join("\n");
}

/** The exec branch of a server message (fails for anything else). */
export function execOf(message: AgentServerMessage | undefined): ExecServerMessage["message"] {
  assert.ok(
    message !== undefined && message.message.case === "execServerMessage",
    "an exec message",
  );
  return message.message.value.message;
}

// ---------------------------------------------------------------------------------------------
// Golden bytes
// ---------------------------------------------------------------------------------------------

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "fixtures");

/**
 * Compares `bytes` with `fixtures/<name>.hex`. With UPDATE_GOLDEN=1 the fixture is (re)written
 * instead; without it, a missing or different fixture fails the test — never silently.
 */
export function assertGolden(name: string, bytes: Uint8Array): void {
  const path = join(FIXTURES, `${name}.hex`);
  const hex = toHexLines(bytes);
  if (process.env.UPDATE_GOLDEN === "1") {
    mkdirSync(FIXTURES, { recursive: true });
    writeFileSync(path, hex);
    return;
  }
  assert.ok(
    existsSync(path),
    `missing fixture ${name}.hex (run with UPDATE_GOLDEN=1 to create it)`,
  );
  assert.equal(
    hex,
    readFileSync(path, "utf8"),
    `bytes of ${name} differ from fixtures/${name}.hex`,
  );
}

/** Reads `fixtures/<name>.hex`. */
export function readGolden(name: string): Uint8Array {
  const text = readFileSync(join(FIXTURES, `${name}.hex`), "utf8");
  return new Uint8Array(Buffer.from(text.replace(/\s+/g, ""), "hex"));
}

function toHexLines(bytes: Uint8Array): string {
  const hex = Buffer.from(bytes).toString("hex");
  const lines: string[] = [];
  for (let i = 0; i < hex.length; i += 64) lines.push(hex.slice(i, i + 64));
  return `${lines.join("\n")}\n`;
}
