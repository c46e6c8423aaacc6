/**
 * The pattern most file tools share: one exec to the client, one result back. The handler says
 * which exec to send and how to read the result of the kind it expects; `singleExec` supplies
 * `start`, `resume` and `failed`: a reply of any other kind is a failed call
 * (`toUnexpectedReply`), and an exec the client could not run at all fails with
 * "<couldNot>: <the client's error>".
 */
import type { ExecClientMessage } from "../gen/agent/v1/exec_pb.js";
import { toUnexpectedReply } from "./output.ts";
import type { ClientReply, ClientRequest, ToolEnv, ToolHandler, ToolOutput } from "./types.ts";

/** An exec the server sends (an `ExecServerMessage.message` branch). */
export type ExecRequest = Extract<ClientRequest, { type: "exec" }>["exec"];
/** Each kind of exec result a client sends (`ExecClientMessage.message`), by its case. */
type ExecResults = {
  [R in ExecClientMessage["message"] as R["case"] extends string ? R["case"] : never]: R["value"];
};
export type ExecResultCase = keyof ExecResults;
export type ExecResultOf<K extends ExecResultCase> = ExecResults[K];

/** The exec result in `reply` if it is of kind `expected`, otherwise `null`. */
export function toExecResult<K extends ExecResultCase>(
  reply: ClientReply,
  expected: K,
): ExecResultOf<K> | null {
  if (reply.type !== "exec" || reply.result.case !== expected) return null;
  // The case was checked, so the value is that case's (TypeScript cannot narrow on a generic K).
  return reply.result.value as ExecResultOf<K>;
}

export interface SingleExecSpec<A, K extends ExecResultCase> {
  /** The stage name the tool session keeps while the exec runs. */
  readonly stage: string;
  readonly exec: (args: A, env: ToolEnv) => ExecRequest;
  /** The kind of result that answers the exec. */
  readonly result: K;
  readonly fromResult: (args: A, result: ExecResultOf<K>, env: ToolEnv) => ToolOutput;
  /** The failed call's output, with `message` for the model. */
  readonly toFailure: (args: A, message: string, env: ToolEnv) => ToolOutput;
  /** Starts the message when the client could not run the exec ("The client could not …"). */
  readonly couldNot: (args: A) => string;
}

export function singleExec<A, K extends ExecResultCase>(
  spec: SingleExecSpec<A, K>,
): Pick<ToolHandler<A, null>, "start" | "resume" | "failed"> {
  return {
    start: (args, env) => ({
      type: "request",
      stage: spec.stage,
      data: null,
      request: { type: "exec", exec: spec.exec(args, env) },
    }),
    resume: (args, _stage, _data, reply, env) => {
      const result = toExecResult(reply, spec.result);
      if (result === null) {
        return { type: "done", output: spec.toFailure(args, toUnexpectedReply(reply), env) };
      }
      return { type: "done", output: spec.fromResult(args, result, env) };
    },
    failed: (args, error, env) => spec.toFailure(args, `${spec.couldNot(args)}: ${error}`, env),
  };
}
