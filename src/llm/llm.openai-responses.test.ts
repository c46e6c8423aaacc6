/**
 * The behaviour matrix (README.md) for OpenAI Responses, over recorded transcripts in
 * `fixtures/openai-responses/` served by a fake provider on 127.0.0.1.
 */
import { registerBehaviourMatrix } from "./testing/behaviours.ts";
import { OPENAI_RESPONSES } from "./testing/provider-specs.ts";

registerBehaviourMatrix(OPENAI_RESPONSES);
