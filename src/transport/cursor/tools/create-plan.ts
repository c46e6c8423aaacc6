/** create_plan (plan mode): hands the finished plan to the client, which shows it for review. */
import { create } from "@bufbuild/protobuf";
import { TodoStatus } from "../gen/agent/v1/common_pb.js";
import {
  type CreatePlanArgs,
  CreatePlanArgsSchema,
  CreatePlanRequestQuerySchema,
  type CreatePlanResult,
  CreatePlanResultSchema,
} from "../gen/agent/v1/interaction_query_pb.js";
import { CreatePlanToolCallSchema } from "../gen/agent/v1/tool_call_pb.js";
import { parseArgs } from "./args.ts";
import { toOutput, toUnexpectedReply } from "./output.ts";
import type { ToolEnv, ToolHandler, ToolOutput } from "./types.ts";

export interface CreatePlanToolArgs {
  readonly name: string;
  readonly overview: string;
  readonly plan: string;
  readonly todos: readonly string[];
}

export const createPlan: ToolHandler<CreatePlanToolArgs, null> = {
  name: "create_plan",
  definition: {
    name: "create_plan",
    description:
      'Present your implementation plan to the user for review, once your research is done; the user accepts it, asks for changes, or starts building. The plan should name the goal, the files to change and how, the order of the steps and how to verify the result; todos lists the steps the build will track. Call it once per plan, not for progress updates. Example: {"name": "Configurable port", "overview": "Read the port from PORT, defaulting to 3000.", "plan": "1. src/server.ts: read process.env.PORT …", "todos": ["Read PORT in src/server.ts", "Test the default and an override"]}.',
    parameters: {
      type: "object",
      properties: {
        name: { type: "string", description: "A short title." },
        overview: { type: "string", description: "One or two sentences on the goal and approach." },
        plan: {
          type: "string",
          description: "The plan in Markdown: files to change, steps, verification.",
        },
        todos: {
          type: "array",
          items: { type: "string" },
          description: "The implementation steps, in order.",
        },
      },
      required: ["name", "overview", "plan"],
    },
  },
  modes: ["plan"],
  parse: (args) =>
    parseArgs(args, (read) => ({
      name: read.string("name"),
      overview: read.string("overview"),
      plan: read.string("plan"),
      todos: read.optionalStringArray("todos") ?? [],
    })),
  preview: () => ({ case: "createPlanToolCall", value: create(CreatePlanToolCallSchema) }),
  started: (args, env) => ({
    case: "createPlanToolCall",
    value: create(CreatePlanToolCallSchema, { args: toPlanArgs(args, env) }),
  }),
  start: (args, env) => ({
    type: "request",
    stage: "plan",
    data: null,
    request: {
      type: "query",
      query: {
        case: "createPlanRequestQuery",
        value: create(CreatePlanRequestQuerySchema, {
          args: toPlanArgs(args, env),
          toolCallId: env.toolCallID,
        }),
      },
    },
  }),
  resume: (args, _stage, _data, reply, env) => {
    if (reply.type !== "query" || reply.result.case !== "createPlanRequestResponse") {
      return { type: "done", output: toFailure(args, env, toUnexpectedReply(reply)) };
    }
    const result = reply.result.value.result ?? create(CreatePlanResultSchema);
    return { type: "done", output: fromResult(args, env, result) };
  },
  failed: (args, error, env) => toFailure(args, env, `The plan could not be shown: ${error}`),
};

function toPlanArgs(args: CreatePlanToolArgs, env: ToolEnv): CreatePlanArgs {
  const at = BigInt(env.at);
  return create(CreatePlanArgsSchema, {
    name: args.name,
    overview: args.overview,
    plan: args.plan,
    todos: args.todos.map((content, index) => ({
      id: String(index + 1),
      content,
      status: TodoStatus.PENDING,
      createdAt: at,
      updatedAt: at,
    })),
  });
}

function fromResult(args: CreatePlanToolArgs, env: ToolEnv, result: CreatePlanResult): ToolOutput {
  const ui = {
    case: "createPlanToolCall" as const,
    value: create(CreatePlanToolCallSchema, { args: toPlanArgs(args, env), result }),
  };
  const branch = result.result;
  switch (branch.case) {
    case "success": {
      const where = result.planUri === "" ? "" : ` (${result.planUri})`;
      return toOutput(
        `The plan was shown to the user${where}. Wait for their review before implementing it.`,
        ui,
      );
    }
    case "error":
      return toOutput(`The plan could not be created: ${branch.value.error}`, ui, {
        isError: true,
      });
    case undefined:
      return toOutput("The client sent an empty plan result.", ui, { isError: true });
  }
}

function toFailure(args: CreatePlanToolArgs, env: ToolEnv, message: string): ToolOutput {
  const result = create(CreatePlanResultSchema, {
    result: { case: "error", value: { error: message } },
  });
  return toOutput(
    message,
    {
      case: "createPlanToolCall",
      value: create(CreatePlanToolCallSchema, { args: toPlanArgs(args, env), result }),
    },
    { isError: true },
  );
}
