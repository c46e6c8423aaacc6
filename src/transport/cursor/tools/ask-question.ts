/** ask_question: asks the user multiple-choice or free-form questions in the client UI. */
import { create } from "@bufbuild/protobuf";
import {
  type AskQuestionArgs,
  AskQuestionArgsSchema,
  AskQuestionInteractionQuerySchema,
  type AskQuestionResult,
  AskQuestionResultSchema,
} from "../gen/agent/v1/interaction_query_pb.js";
import { AskQuestionToolCallSchema } from "../gen/agent/v1/tool_call_pb.js";
import { parseArgs } from "./args.ts";
import { toOutput, toUnexpectedReply } from "./output.ts";
import type { ToolHandler, ToolOutput } from "./types.ts";

export interface AskQuestionToolArgs {
  readonly title: string;
  readonly questions: readonly {
    readonly id: string;
    readonly prompt: string;
    readonly options: readonly { readonly id: string; readonly label: string }[];
    readonly allowMultiple: boolean;
  }[];
}

export const askQuestion: ToolHandler<AskQuestionToolArgs, null> = {
  name: "ask_question",
  definition: {
    name: "ask_question",
    description:
      'Ask the user one or more questions and wait for the answers. Give options for choices (the user can still answer in their own words), and set allow_multiple when several options may apply. Use it only for decisions that are the user\'s to make (scope, trade-offs, preferences); find facts about the code yourself with the tools. Example: {"questions": [{"id": "db", "prompt": "Which database should the cache use?", "options": [{"id": "redis", "label": "Redis"}, {"id": "pg", "label": "PostgreSQL"}]}]}.',
    parameters: {
      type: "object",
      properties: {
        title: { type: "string", description: "A short heading for the questions." },
        questions: {
          type: "array",
          items: {
            type: "object",
            properties: {
              id: { type: "string", description: "An id for the answer (default q1, q2, …)." },
              prompt: { type: "string", description: "The question, as the user will read it." },
              options: {
                type: "array",
                items: {
                  type: "object",
                  properties: {
                    id: {
                      type: "string",
                      description: "An id for the choice (default o1, o2, …).",
                    },
                    label: { type: "string", description: "The choice, as the user will read it." },
                  },
                  required: ["label"],
                },
              },
              allow_multiple: {
                type: "boolean",
                description: "The user may pick several options. Default false.",
              },
            },
            required: ["prompt"],
          },
        },
      },
      required: ["questions"],
    },
  },
  modes: ["agent", "ask", "plan", "debug"],
  parse: (args) =>
    parseArgs(args, (read) => ({
      title: read.optionalString("title") ?? "",
      questions: read.objectArray(
        "questions",
        (question, index) => ({
          id: question.optionalString("id") ?? `q${index + 1}`,
          prompt: question.string("prompt"),
          options: question.objectArray(
            "options",
            (option, optionIndex) => ({
              id: option.optionalString("id") ?? `o${optionIndex + 1}`,
              label: option.string("label"),
            }),
            false,
          ),
          allowMultiple: question.optionalBoolean("allow_multiple") ?? false,
        }),
        true,
      ),
    })),
  preview: () => ({ case: "askQuestionToolCall", value: create(AskQuestionToolCallSchema) }),
  started: (args) => ({
    case: "askQuestionToolCall",
    value: create(AskQuestionToolCallSchema, { args: toQueryArgs(args) }),
  }),
  start: (args, env) => ({
    type: "request",
    stage: "ask",
    data: null,
    request: {
      type: "query",
      query: {
        case: "askQuestionInteractionQuery",
        value: create(AskQuestionInteractionQuerySchema, {
          args: toQueryArgs(args),
          toolCallId: env.toolCallID,
        }),
      },
    },
  }),
  resume: (args, _stage, _data, reply) => {
    if (reply.type !== "query" || reply.result.case !== "askQuestionInteractionResponse") {
      return { type: "done", output: toFailure(args, toUnexpectedReply(reply)) };
    }
    const result = reply.result.value.result ?? create(AskQuestionResultSchema);
    return { type: "done", output: fromResult(args, result) };
  },
  failed: (args, error) => toFailure(args, `The question could not be shown: ${error}`),
};

function toQueryArgs(args: AskQuestionToolArgs): AskQuestionArgs {
  return create(AskQuestionArgsSchema, {
    title: args.title,
    questions: args.questions.map((question) => ({
      id: question.id,
      prompt: question.prompt,
      options: question.options.map((option) => ({ id: option.id, label: option.label })),
      allowMultiple: question.allowMultiple,
    })),
    runAsync: false,
  });
}

function fromResult(args: AskQuestionToolArgs, result: AskQuestionResult): ToolOutput {
  const ui = {
    case: "askQuestionToolCall" as const,
    value: create(AskQuestionToolCallSchema, { args: toQueryArgs(args), result }),
  };
  const branch = result.result;
  switch (branch.case) {
    case "success": {
      const lines = args.questions.map((question) => {
        const answer = branch.value.answers.find((entry) => entry.questionId === question.id);
        if (answer === undefined) return `${question.prompt}\n→ (no answer)`;
        const labels = answer.selectedOptionIds.map(
          (id) => question.options.find((option) => option.id === id)?.label ?? id,
        );
        const parts = [
          ...labels,
          ...(answer.freeformText.trim() === "" ? [] : [answer.freeformText.trim()]),
        ];
        return `${question.prompt}\n→ ${parts.length === 0 ? "(no answer)" : parts.join("; ")}`;
      });
      return toOutput(lines.join("\n\n"), ui);
    }
    case "rejected":
      return toOutput(
        `The user dismissed the question${branch.value.reason ? `: ${branch.value.reason}` : "."}`,
        ui,
        { isError: true },
      );
    case "error":
      return toOutput(`The question failed: ${branch.value.errorMessage}`, ui, { isError: true });
    case "async":
      return toOutput(
        "The question was handed to the user to answer later; continue without the answer.",
        ui,
      );
    case undefined:
      return toOutput("The client sent an empty answer.", ui, { isError: true });
  }
}

function toFailure(args: AskQuestionToolArgs, message: string): ToolOutput {
  const result = create(AskQuestionResultSchema, {
    result: { case: "error", value: { errorMessage: message } },
  });
  return toOutput(
    message,
    {
      case: "askQuestionToolCall",
      value: create(AskQuestionToolCallSchema, { args: toQueryArgs(args), result }),
    },
    { isError: true },
  );
}
