/**
 * Answers to the server's interaction queries (docs/protocol.md §2.11) as a user clicking
 * through the IDE's prompts would give them. The default: every question gets its first option
 * (or a free-form "yes" when it has none), plans and approvals are accepted.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  InteractionQuery,
  InteractionResponseSchema,
} from "../cursor/gen/agent/v1/interaction_query_pb.js";

/** The `result` branch of an `InteractionResponse` (its `id` is filled in by the client). */
export type InteractionAnswer = MessageInitShape<typeof InteractionResponseSchema>["result"];

/**
 * Picks the answer to a query. Return `undefined` to fall back to the default answer; return
 * `null` to leave the query unanswered (the client sends nothing).
 */
export type QueryAnswerer = (
  query: InteractionQuery,
) => InteractionAnswer | null | undefined | Promise<InteractionAnswer | null | undefined>;

/** The default answer, or null for a query kind the client does not know. */
export function toDefaultAnswer(query: InteractionQuery): InteractionAnswer | null {
  const branch = query.query;
  switch (branch.case) {
    case "askQuestionInteractionQuery": {
      const questions = branch.value.args?.questions ?? [];
      return {
        case: "askQuestionInteractionResponse",
        value: {
          result: {
            result: {
              case: "success",
              value: {
                answers: questions.map((question) => {
                  const first = question.options[0];
                  return first === undefined
                    ? { questionId: question.id, freeformText: "yes" }
                    : { questionId: question.id, selectedOptionIds: [first.id] };
                }),
              },
            },
          },
        },
      };
    }
    case "createPlanRequestQuery":
      return {
        case: "createPlanRequestResponse",
        value: { result: { result: { case: "success", value: {} } } },
      };
    case "switchModeRequestQuery":
      return {
        case: "switchModeRequestResponse",
        value: { result: { case: "approved", value: {} } },
      };
    case "webSearchRequestQuery":
      return {
        case: "webSearchRequestResponse",
        value: { result: { case: "approved", value: {} } },
      };
    case "webFetchRequestQuery":
      return {
        case: "webFetchRequestResponse",
        value: { result: { case: "approved", value: {} } },
      };
    case undefined:
      return null;
  }
}
