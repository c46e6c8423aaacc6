/**
 * switch_mode: the model asks the user to move the conversation to another mode (e.g. from ask
 * to agent once a change is wanted). The client shows the request (`switch_mode_request_query`)
 * and moves its mode picker; on approval the rest of the turn runs in the new mode: its system
 * prompt and tools (the session applies `ToolOutput.mode`).
 */
import { create } from "@bufbuild/protobuf";
import {
  type SwitchModeArgs,
  SwitchModeArgsSchema,
  SwitchModeRequestQuerySchema,
  type SwitchModeResult,
  SwitchModeResultSchema,
} from "../gen/agent/v1/interaction_query_pb.js";
import { SwitchModeToolCallSchema } from "../gen/agent/v1/tool_call_pb.js";
import { MODES, type Mode } from "../mode.ts";
import { parseArgs } from "./args.ts";
import { toOutput, toUnexpectedReply } from "./output.ts";
import type { ToolEnv, ToolHandler, ToolOutput } from "./types.ts";

export interface SwitchModeToolArgs {
  readonly target: Mode;
  readonly explanation: string | undefined;
}

/** The ids of the client's mode picker: Ask is "chat" there (its picker's own ids). */
const PICKER_IDS: Readonly<Record<Mode, string>> = {
  agent: "agent",
  ask: "chat",
  plan: "plan",
  debug: "debug",
};

const WHAT_MODES_ALLOW: Readonly<Record<Mode, string>> = {
  agent: "you may now edit files and run commands",
  ask: "answer with the read-only tools; do not change files or run commands",
  plan: "research with the read-only tools and present a plan with create_plan",
  debug: "find the root cause with evidence before fixing it",
};

export const switchMode: ToolHandler<SwitchModeToolArgs, null> = {
  name: "switch_mode",
  definition: {
    name: "switch_mode",
    description:
      'Ask the user to switch the conversation to another mode when the task needs it: agent (edit files, run commands), ask (read-only answers), plan (research and propose a plan), debug (find a root cause). The user approves or declines; on approval you continue in the new mode with its tools. Explain the reason in explanation. Example: {"target_mode": "agent", "explanation": "Fixing this needs an edit to src/app.ts."}.',
    parameters: {
      type: "object",
      properties: {
        target_mode: { type: "string", enum: [...MODES], description: "The mode to switch to." },
        explanation: { type: "string", description: "Why the switch is needed, for the user." },
      },
      required: ["target_mode"],
    },
  },
  modes: ["agent", "ask", "plan", "debug"],
  parse: (args) =>
    parseArgs(args, (read) => {
      const target = read.optionalEnum("target_mode", MODES);
      if (target === undefined) read.string("target_mode");
      return { target: target ?? "agent", explanation: read.optionalString("explanation") };
    }),
  preview: () => ({ case: "switchModeToolCall", value: create(SwitchModeToolCallSchema) }),
  started: (args, env) => ({
    case: "switchModeToolCall",
    value: create(SwitchModeToolCallSchema, { args: toQueryArgs(args, env) }),
  }),
  start: (args, env) => {
    if (args.target === env.mode) {
      return {
        type: "done",
        output: toResult(args, env, `Already in ${args.target} mode.`, {
          result: { case: "success", value: fromTo(env.mode, args.target) },
        }),
      };
    }
    return {
      type: "request",
      stage: "ask",
      data: null,
      request: {
        type: "query",
        query: {
          case: "switchModeRequestQuery",
          value: create(SwitchModeRequestQuerySchema, { args: toQueryArgs(args, env) }),
        },
      },
    };
  },
  resume: (args, _stage, _data, reply, env) => {
    if (reply.type !== "query" || reply.result.case !== "switchModeRequestResponse") {
      return { type: "done", output: toFailure(args, env, toUnexpectedReply(reply)) };
    }
    const answer = reply.result.value.result;
    if (answer.case === "approved") {
      const output = toResult(
        args,
        env,
        `The user approved: the conversation is now in ${args.target} mode; ${WHAT_MODES_ALLOW[args.target]}.`,
        { result: { case: "success", value: fromTo(env.mode, args.target) } },
      );
      return { type: "done", output: { ...output, mode: args.target } };
    }
    const reason = answer.case === "rejected" ? answer.value.reason.trim() : "";
    return {
      type: "done",
      output: toResult(
        args,
        env,
        `The user declined the switch to ${args.target} mode${reason === "" ? "" : `: ${reason}`}. Stay in ${env.mode} mode.`,
        { result: { case: "rejected", value: { reason } } },
      ),
    };
  },
  failed: (args, error, env) =>
    toFailure(args, env, `The mode switch could not be shown to the user: ${error}`),
};

function toQueryArgs(args: SwitchModeToolArgs, env: ToolEnv): SwitchModeArgs {
  return create(SwitchModeArgsSchema, {
    targetModeId: PICKER_IDS[args.target],
    toolCallId: env.toolCallID,
    ...(args.explanation === undefined ? {} : { explanation: args.explanation }),
  });
}

function fromTo(from: Mode, to: Mode) {
  return { fromModeId: PICKER_IDS[from], toModeId: PICKER_IDS[to] };
}

function toResult(
  args: SwitchModeToolArgs,
  env: ToolEnv,
  text: string,
  result: Parameters<typeof create<typeof SwitchModeResultSchema>>[1],
  isError = false,
): ToolOutput {
  const value: SwitchModeResult = create(SwitchModeResultSchema, result);
  return toOutput(
    text,
    {
      case: "switchModeToolCall",
      value: create(SwitchModeToolCallSchema, { args: toQueryArgs(args, env), result: value }),
    },
    { isError },
  );
}

function toFailure(args: SwitchModeToolArgs, env: ToolEnv, error: string): ToolOutput {
  return toResult(args, env, error, { result: { case: "error", value: { error } } }, true);
}
