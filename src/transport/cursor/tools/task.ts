/**
 * task: the model delegates a self-contained piece of work to a subagent (src/loop/subagent.ts,
 * README "Subagents"). The server runs it itself, as a child conversation on the same client
 * stream (transport/agent-stream/subagents.ts); the tool hands it out as `subagent` server work
 * and turns the child's final answer into the result. The client shows the call as
 * `task_tool_call` (TaskArgs, then TaskResult: `success` with the answer as an assistant step, or
 * `error`); docs/protocol.md "Subagents".
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { ConversationStepSchema } from "../gen/agent/v1/conversation_state_pb.js";
import {
  type SubagentType,
  SubagentTypeSchema,
  type TaskArgs,
  TaskArgsSchema,
  TaskResultSchema,
  TaskToolCallSchema,
} from "../gen/agent/v1/tool_call_pb.js";
import { parseArgs } from "./args.ts";
import { toOutput, toUnexpectedReply } from "./output.ts";
import type { SubagentOutcome } from "./server-work.ts";
import type { ToolHandler, ToolOutput } from "./types.ts";

export interface TaskToolArgs {
  readonly description: string;
  readonly prompt: string;
  readonly subagentType: string;
  readonly model: string;
  /** The agent id of an earlier subagent of this conversation to continue; "" none. */
  readonly resume: string;
}

export const task: ToolHandler<TaskToolArgs, null> = {
  name: "task",
  definition: {
    name: "task",
    description:
      'Delegate a self-contained task to a subagent with its own fresh context; you get back only its final answer, so your own context stays small. Use it for broad searches of the codebase, investigations and independent pieces of work; several task calls in one response run at the same time. The subagent sees nothing of this conversation: give it everything it needs in the prompt and say what its answer should contain. A result ends with the agent_id of the subagent: pass it as resume to continue that subagent with what it already knows. Types: "explore" (read-only: reads and searches, cannot change anything), "general" (your tools, except task), or the name of one of the user\'s custom subagents.',
    parameters: {
      type: "object",
      properties: {
        description: { type: "string", description: "A short (3-6 words) title of the task." },
        prompt: {
          type: "string",
          description: "The complete instructions for the subagent, and what to report back.",
        },
        subagent_type: {
          type: "string",
          description: 'The subagent type: "explore", "general", or a custom subagent\'s name.',
        },
        model: {
          type: "string",
          description: "Optional: a model to run it on (default: the type's configured model).",
        },
        resume: {
          type: "string",
          description:
            "Optional: the agent_id from an earlier task result, to continue that subagent with its history and this prompt (subagent_type is then ignored).",
        },
      },
      required: ["description", "prompt", "subagent_type"],
    },
  },
  // In ask and plan mode the parent's tools only read, so every subagent there only reads too.
  modes: ["agent", "ask", "plan", "debug"],
  parse: (args) =>
    parseArgs(args, (read) => ({
      description: read.string("description").trim(),
      prompt: read.string("prompt"),
      subagentType: read.string("subagent_type").trim(),
      model: read.optionalString("model")?.trim() ?? "",
      resume: read.optionalString("resume")?.trim() ?? "",
    })),
  preview: () => ({ case: "taskToolCall", value: create(TaskToolCallSchema) }),
  started: (args) => ({
    case: "taskToolCall",
    value: create(TaskToolCallSchema, { args: toUiArgs(args) }),
  }),
  start: (args) => ({
    type: "request",
    request: {
      type: "server",
      work: {
        type: "subagent",
        description: args.description,
        prompt: args.prompt,
        subagentType: args.subagentType,
        model: args.model,
        resume: args.resume,
      },
    },
    stage: "run",
    data: null,
  }),
  resume: (args, _stage, _data, reply) => {
    if (reply.type !== "server" || reply.result.type !== "subagent") {
      return { type: "done", output: toFailure(args, toUnexpectedReply(reply)) };
    }
    return { type: "done", output: fromOutcome(args, reply.result.outcome) };
  },
  failed: (args, error) => toFailure(args, `The subagent did not finish: ${error}`),
};

/** The wire form of a type name: `explore` and `general` are built in, others are custom. */
export function toSubagentType(name: string): SubagentType {
  if (name === "explore")
    return create(SubagentTypeSchema, { type: { case: "explore", value: {} } });
  if (name === "general" || name === "") {
    return create(SubagentTypeSchema, { type: { case: "unspecified", value: {} } });
  }
  return create(SubagentTypeSchema, { type: { case: "custom", value: { name } } });
}

function toUiArgs(args: TaskToolArgs): TaskArgs {
  return create(TaskArgsSchema, {
    description: args.description,
    prompt: args.prompt,
    subagentType: toSubagentType(args.subagentType),
    ...(args.model === "" ? {} : { model: args.model }),
    ...(args.resume === "" ? {} : { resume: args.resume }),
  });
}

function fromOutcome(args: TaskToolArgs, outcome: SubagentOutcome): ToolOutput {
  if (outcome.type === "error") return toFailure(args, outcome.message);
  const answer = outcome.text.trim() === "" ? "(The subagent gave no answer.)" : outcome.text;
  // The id lets the model continue this subagent later (`resume`).
  const text = `${answer}\n\nagent_id: ${outcome.agentID}`;
  const step = create(ConversationStepSchema, {
    message: { case: "assistantMessage", value: { text: answer } },
  });
  return toOutput(text, {
    case: "taskToolCall",
    value: create(TaskToolCallSchema, {
      args: toUiArgs(args),
      result: create(TaskResultSchema, {
        result: {
          case: "success",
          value: {
            conversationSteps: [toBinary(ConversationStepSchema, step)],
            agentId: outcome.agentID,
            isBackground: false,
            durationMs: BigInt(outcome.durationMs),
          },
        },
      }),
    }),
  });
}

function toFailure(args: TaskToolArgs, message: string): ToolOutput {
  return toOutput(
    `The subagent did not complete: ${message}`,
    {
      case: "taskToolCall",
      value: create(TaskToolCallSchema, {
        args: toUiArgs(args),
        result: create(TaskResultSchema, { result: { case: "error", value: { error: message } } }),
      }),
    },
    { isError: true },
  );
}
