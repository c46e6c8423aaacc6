/**
 * The behaviour matrix (README.md) for OpenAI Chat Completions, over recorded transcripts in
 * `fixtures/openai-chat/` served by a fake provider on 127.0.0.1.
 */
import { registerBehaviourMatrix } from "./testing/behaviours.ts";
import { OPENAI_CHAT } from "./testing/provider-specs.ts";

registerBehaviourMatrix(OPENAI_CHAT);
